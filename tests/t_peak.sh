#!/usr/bin/env bash
# t_peak.sh -- the heap at its highest (cluster (a): prof_active:false,
# lg_prof_sample:0, heapprof preloaded):
#  - a hash join builds and drops a hash table of 100+ MB: heapprof_peak()
#    shows it, the live heap afterwards does not; heapprof_status() has the
#    peak's size and time, own and by pid;
#  - by pid, in every form (top, stacks, text, dot, collapsed, flame graph
#    titled as the peak, pprof); jeprof reads the same peak file and finds
#    the same total;
#  - heapprof_reset() forgets it; heapprof.track_peak = off takes none;
#  - one file per process however often the peak moves, none after exit;
#    with exit dumps configured, a backend whose peak passed the threshold
#    leaves it as NAME-peak; FIFOs planted at the peak's temporary names
#    block nothing.
set -euo pipefail
. "${HP_TOP:=$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
QOPTS="-c heapprof.dump_on_exit_threshold=-1"
w=$(scratch)
cleanup() {
	[ -n "${BG_PID:-}" ] && kill "$BG_PID" 2>/dev/null || true
	[ -n "${exit_pid:-}" ] && rm -f "$data"/heapprof/dumps/*-"$exit_pid"-* || true
}
at_exit cleanup
create_ext heapprof heapprof_test
data=$(q -c "SHOW data_directory")
join="SET work_mem = '512MB'; SET jit = off; SELECT count(*) FROM generate_series(1, 1000000) a(x) JOIN generate_series(1, 1000000) b(x) USING (x)"
mb() { awk '{printf "%d\n", $1 / 1048576}'; }

# -- own session: the hash join's memory is in the peak, not in the live heap
out=$(q -c "SELECT heapprof_enable()" -c "SELECT peak_bytes IS NULL FROM heapprof_status()" \
	-c "$join" \
	-c "SELECT peak_bytes > 100 * 1048576, peak_at > now() - interval '1 minute' FROM heapprof_status()" \
	-c "SELECT sum(bytes) FROM heapprof_stacks(peak => true)" \
	-c "SELECT sum(bytes) FROM heapprof_stacks()" \
	-c "SELECT function FROM heapprof_peak(1)" \
	-c "SELECT count(*) FROM heapprof_top(50) WHERE function = (SELECT function FROM heapprof_peak(1))" \
	-c "SELECT count(*) FROM heapprof_peak(1000)")
mapfile -t r <<< "$out"
[ "${r[0]} ${r[1]} ${r[3]}" = "t t t|t" ] || { echo "own status around the peak: $out"; exit 1; }
peak_mb=$(echo "${r[4]}" | mb) live_mb=$(echo "${r[5]}" | mb) top=${r[6]} in_live=${r[7]}
[ "$peak_mb" -ge 100 ] && [ "$live_mb" -le 30 ] ||
	{ echo "peak holds $peak_mb MB, live heap after $live_mb MB"; exit 1; }
[ "$in_live" = 0 ] || { echo "the peak's top function $top is still in the live heap"; exit 1; }

# -- by pid: a session that ran the join and stays
mkfifo "$w/in"
QOPTS= q < "$w/in" > "$w/bg.out" 2>&1 &
BG_PID=$!
exec 3> "$w/in"
echo "SELECT pg_backend_pid(); SELECT heapprof_enable(); $join;" >&3
wait_for "the hash join" 30 has_lines "$w/bg.out" 3
pid=$(head -n1 "$w/bg.out")
out=$(q -c "SELECT peak_bytes > 100 * 1048576 FROM heapprof_status(pid => $pid)" \
	-c "SELECT sum(bytes) FROM heapprof_stacks(pid => $pid, peak => true)" \
	-c "SELECT count(*) > 0 FROM heapprof_peak(pid => $pid)" \
	-c "SELECT count(*) > 0 FROM heapprof_dump_dot(pid => $pid, peak => true) l WHERE l LIKE '%peak of process $pid%'" \
	-c "SELECT count(*) > 0 FROM heapprof_dump_collapsed(pid => $pid, peak => true)" \
	-c "SELECT heapprof_dump_flamegraph(pid => $pid, peak => true) LIKE '%heapprof: peak of process $pid: %'" \
	-c "SELECT length(heapprof_dump_pprof(pid => $pid, peak => true)) > 100" \
	-c "SELECT line FROM heapprof_dump_text(pid => $pid, peak => true, fold => false) line LIMIT 1")
mapfile -t r <<< "$out"
[ "${r[0]} ${r[2]} ${r[3]} ${r[4]} ${r[5]} ${r[6]}" = "t t t t t t" ] && [ "$(echo "${r[1]}" | mb)" -ge 100 ] ||
	{ echo "peak by pid: $out"; exit 1; }
ours=$(echo "$out" | tail -n1 | sed -n 's/^Total: \([0-9.]*\) MB$/\1/p')
f=$data/heapprof/peaks/$pid.heap
[ -f "$f" ] && grep -q '^%heapprof' "$f" || { echo "no peak file $f, or without its identity lines"; exit 1; }
jeprof_total=$(jeprof --text "$(pg_config --bindir)/postgres" "$f" 2>/dev/null | sed -n 's/^Total: \([0-9.]*\) MB$/\1/p')
[ -n "$ours" ] && [ "$ours" = "$jeprof_total" ] || { echo "peak total: heapprof $ours MB, jeprof $jeprof_total MB"; exit 1; }

# -- one file per process, however often the peak moves, and no draft left
[ "$(ls "$data/heapprof/peaks" | grep -c "^$pid\.")" = 1 ] && ! ls "$data/heapprof/peaks" | grep "^tmp\.$pid\." >/dev/null ||
	{ ls "$data/heapprof/peaks"; exit 1; }

# -- reset forgets it; track_peak = off takes none
echo "SELECT heapprof_reset(); SET heapprof.track_peak = off; $join;" >&3
wait_for "the hash join without a peak" 30 has_lines "$w/bg.out" 5
out=$(q -c "SELECT peak_bytes IS NULL FROM heapprof_status(pid => $pid)" \
	-c "SELECT heapprof_test_error('SELECT * FROM heapprof_peak(pid => $pid)')")
[ "$out" = "t
55000: process $pid has no peak profile yet
HINT: A peak profile is taken while sampling is active and heapprof.track_peak is on: run heapprof_enable(pid => $pid), then the workload." ] ||
	{ echo "after reset and track_peak = off: $out"; exit 1; }
[ ! -e "$f" ] || { echo "reset left $f"; exit 1; }

# -- nothing left at exit
exec 3>&-
wait "$BG_PID" || true
BG_PID=
peak_gone() { ! ls "$data/heapprof/peaks" | grep "^$pid\." >/dev/null; }
wait_for "the peak files of $pid to go at its exit" 5 peak_gone

# -- FIFOs and a link planted where the peak's drafts are written block nothing
mkfifo "$w/in2"
QOPTS= q < "$w/in2" > "$w/bg2.out" 2>&1 &
BG_PID=$!
exec 4> "$w/in2"
echo "SELECT pg_backend_pid();" >&4
wait_for "the session's pid" 10 test -s "$w/bg2.out"
pid2=$(head -n1 "$w/bg2.out")
for i in 0 1 2; do mkfifo -m 600 "$data/heapprof/peaks/tmp.$pid2.$i"; done
ln -s /etc/passwd "$data/heapprof/peaks/tmp.$pid2.3"
chown -h --reference="$data" "$data/heapprof/peaks/tmp.$pid2".*
echo "SELECT heapprof_enable(); $join;" >&4
wait_for "the hash join with FIFOs planted" 30 has_lines "$w/bg2.out" 3 || true
[ "$(wc -l < "$w/bg2.out")" -ge 3 ] && [ "$(q -c "SELECT count(*) > 0 FROM heapprof_peak(pid => $pid2)")" = t ] ||
	{ echo "with FIFOs planted: $(cat "$w/bg2.out")"; exit 1; }
rm -f "$data/heapprof/peaks/tmp.$pid2".*
exec 4>&-
wait "$BG_PID" || true
BG_PID=

# -- with exit dumps: the peak passed the threshold, the exit holds less
out=$(PGOPTIONS="-c heapprof.dump_on_exit_threshold=50MB" QOPTS= q \
	-c "SELECT pg_backend_pid()" -c "SELECT heapprof_enable()" -c "$join")
pid=$(echo "$out" | sed -n 1p) exit_pid=$pid
peak_dumped() { q -c "SELECT name FROM heapprof_dumps() WHERE pid = $pid" | grep -- '-peak$' >/dev/null; }
wait_for "the exit dump of $pid's peak" 5 peak_dumped || true
names=$(q -c "SELECT name FROM heapprof_dumps() WHERE pid = $pid ORDER BY name")
[ "$(echo "$names" | grep -c -- '-peak$')" = 1 ] || { echo "exit dumps of $pid: $names"; exit 1; }
name=$(echo "$names" | grep -- '-peak$')
out=$(q -c "SELECT sum(bytes) FROM heapprof_stacks(stored => '$name')" | mb)
[ "$out" -ge 100 ] || { echo "the kept peak holds $out MB"; exit 1; }
q -c "SELECT heapprof_test_error('SELECT * FROM heapprof_top(peak => true, stored => ''x'')')" | grep "^22023: peak and stored cannot both be given" >/dev/null ||
	{ echo "peak with dump accepted"; exit 1; }
echo "peak: hash join of ${peak_mb} MB in heapprof_peak, ${live_mb} MB live after; every form by pid; jeprof agrees (${ours} MB); reset, track_peak, exit and exit dump"
