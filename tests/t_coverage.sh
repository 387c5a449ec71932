#!/usr/bin/env bash
# t_coverage.sh -- what a report covers, and the hints that say why a profile
# is empty (cluster (a): prof_active:false, heapprof preloaded):
#  - sampling_since in heapprof_status(), heapprof_backends() and pg_heapprof
#    --list, own and by pid: NULL before any sampling, set by
#    heapprof_enable(), kept by heapprof_disable(), moved by heapprof_reset(),
#    the backend's start with heapprof.enable_at_start;
#  - a session holding 48 MB from before heapprof_enable(): every report
#    NOTICEs that the profile holds only part of what was allocated (own and
#    by pid), text and dot carry the coverage line, a persisted snapshot
#    keeps it, pprof has it as a comment; enabled before the 48 MB: no NOTICE;
#  - pid hints: "enable it first" before heapprof_enable(pid => N), "nothing
#    live there yet" right after;
#  - an exit dump of a backend that sampled nothing is not written.
set -euo pipefail
. "${HP_TOP:=$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
QOPTS="-c heapprof.dump_on_exit_threshold=-1"
w=$(scratch)
cleanup() {
	q -c "SELECT heapprof_drop_snapshot(name) FROM heapprof_snapshots() WHERE name = 'hp_cov'" \
	  -c "ALTER SYSTEM RESET heapprof.enable_at_start" -c "ALTER SYSTEM RESET heapprof.dump_on_exit_threshold" \
	  -c "ALTER SYSTEM RESET heapprof.max_dumps" \
	  -c "SELECT pg_reload_conf()" >/dev/null 2>&1 || true
	[ -n "${BG_PID:-}" ] && kill "$BG_PID" 2>/dev/null || true
}
at_exit cleanup
create_ext heapprof heapprof_test

# -- own session: since NULL, set by enable, kept by disable, moved by reset
out=$(q -c "SELECT sampling_since IS NULL FROM heapprof_status()" \
	-c "SELECT heapprof_enable()" \
	-c "SELECT sampling_since BETWEEN now() - interval '1 minute' AND clock_timestamp() FROM heapprof_status()" \
	-c "CREATE TEMP TABLE s AS SELECT sampling_since AS t FROM heapprof_status()" \
	-c "SELECT heapprof_disable()" \
	-c "SELECT sampling_since = (SELECT t FROM s) FROM heapprof_status()" \
	-c "SELECT heapprof_enable()" -c "SELECT heapprof_reset() > 0" \
	-c "SELECT sampling_since > (SELECT t FROM s) FROM heapprof_status()" \
	-c "SELECT heapprof_disable()" -c "SELECT heapprof_reset() > 0" \
	-c "SELECT sampling_since IS NULL FROM heapprof_status()" | tr '\n' ' ')
[ "$out" = "t t t f t t t t f t t " ] || { echo "own sampling_since: $out"; exit 1; }

# -- a session holding 48 MB from before it was enabled, reported on itself
out=$(q -c "SELECT heapprof_test_hold(50331648) > 0" -c "SELECT heapprof_enable()" \
	-c "SELECT heapprof_test_hold(1048576) > 0" \
	-c "SELECT count(*) > 0 FROM heapprof_top(5)" \
	-c "SELECT line FROM heapprof_dump_text() AS line LIMIT 2" 2>&1)
grep -q "NOTICE:  the heap profile holds .* MB of the .* MB its process had allocated" <<<"$out" ||
	{ echo "no partial-profile NOTICE: $out"; exit 1; }
grep -q "HINT:  .*heapprof.enable_at_start = on" <<<"$out" || { echo "no enable_at_start hint: $out"; exit 1; }
grep -Eq "^Sampled since [0-9-]+ [0-9:]+ UTC: [0-9.]+ MB of the [0-9.]+ MB allocated \([0-9]+%\)$" <<<"$out" ||
	{ echo "no coverage line in heapprof_dump_text: $out"; exit 1; }

# -- enabled first, then 48 MB: the profile covers it, no NOTICE
out=$(q -c "SELECT heapprof_enable()" -c "SELECT heapprof_test_hold(50331648) > 0" \
	-c "SELECT count(*) > 0 FROM heapprof_top(5)" 2>&1)
grep -q NOTICE <<<"$out" && { echo "NOTICE for a covering profile: $out"; exit 1; }

# -- by pid: a background session holds 48 MB, then is enabled from here
coproc BG { psql -X -q -At -d postgres; }
echo "SET heapprof.dump_on_exit_threshold = -1; SELECT pg_backend_pid(); SELECT heapprof_test_hold(50331648);" >&"${BG[1]}"
read -r -t 20 bg <&"${BG[0]}"
read -r -t 20 _ <&"${BG[0]}"
out=$(q -c "SELECT sampling_since IS NULL FROM heapprof_status(pid => $bg)" 2>&1)
[ "$out" = t ] || { echo "pid sampling_since before enable: $out"; exit 1; }
# nothing sampled there: the hint says enable it first
out=$(q -c "SELECT count(*) FROM heapprof_top(pid => $bg)" 2>&1)
grep -q "HINT:  Nothing is sampled in process $bg: enable it with heapprof_enable(pid => $bg) first." <<<"$out" ||
	{ echo "pid hint before enable: $out"; exit 1; }
q -c "SELECT heapprof_enable(pid => $bg)" >/dev/null
# enabled, nothing allocated since: sampling, nothing live yet
out=$(q -c "SELECT count(*) FROM heapprof_top(pid => $bg)" 2>&1)
grep -q "HINT:  Sampling is active in process $bg, but no sampled allocation is live there yet" <<<"$out" ||
	{ echo "pid hint after enable: $out"; exit 1; }
out=$(q -c "SELECT sampling_since BETWEEN now() - interval '1 minute' AND clock_timestamp() FROM heapprof_status(pid => $bg)" \
	-c "SELECT sampling_since IS NOT NULL FROM heapprof_backends() WHERE pid = $bg" 2>&1 | tr '\n' ' ')
[ "$out" = "t t " ] || { echo "pid sampling_since: $out"; exit 1; }
"$HP_TOP/pg_heapprof" -d postgres --list >"$w/list" &&
	grep -qE "^ *$bg  .* on .* [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8} " "$w/list" ||
	{ echo "pg_heapprof --list shows no sampling since:"; cat "$w/list"; exit 1; }
echo "SELECT heapprof_test_hold(1048576);" >&"${BG[1]}"
read -r -t 20 _ <&"${BG[0]}"
out=$(q -c "SELECT count(*) > 0 FROM heapprof_top(pid => $bg)" \
	-c "SELECT heapprof_snapshot('hp_cov', true, pid => $bg) > 0" 2>&1)
grep -q "NOTICE:  the heap profile holds .* MB of the .* MB its process had allocated" <<<"$out" ||
	{ echo "no partial-profile NOTICE by pid: $out"; exit 1; }
# the stored profile keeps what it covered
out=$(q -c "SELECT line FROM heapprof_dump_dot(stored => 'hp_cov') AS line" 2>&1)
grep -q "NOTICE:  the heap profile holds" <<<"$out" || { echo "no NOTICE for the snapshot: $out"; exit 1; }
grep -q '\\lSampled since .* MB allocated ([0-9]*%)\\l' <<<"$out" || { echo "no coverage in the dot legend: $out"; exit 1; }
if command -v go >/dev/null; then
	q -c "SELECT encode(heapprof_dump_pprof(stored => 'hp_cov'), 'base64')" 2>/dev/null | base64 -d >"$w/cov.pb.gz"
	HOME=$w go tool pprof -comments "$w/cov.pb.gz" 2>&1 | grep "^Sampled since .* MB allocated" >/dev/null ||
		{ echo "no pprof comment: $(HOME=$w go tool pprof -comments "$w/cov.pb.gz" 2>&1 | sed -n 1,5p)"; exit 1; }
fi
kill "$BG_PID" 2>/dev/null || true

# -- enable_at_start: sampling since the backend started
q -c "ALTER SYSTEM SET heapprof.enable_at_start = on" -c "SELECT pg_reload_conf()" >/dev/null
out=$(q -c "SELECT sampling_since BETWEEN backend_start AND backend_start + interval '10 seconds'
	FROM heapprof_status(), pg_stat_activity a WHERE a.pid = pg_backend_pid()")
[ "$out" = t ] || { echo "enable_at_start sampling_since: $out"; exit 1; }
q -c "ALTER SYSTEM RESET heapprof.enable_at_start" -c "SELECT pg_reload_conf()" >/dev/null

# -- a backend that sampled nothing leaves no exit dump, one that did does
before=$(q -c "SELECT count(*) FROM heapprof_dumps()")
q -c "ALTER SYSTEM SET heapprof.dump_on_exit_threshold = 0" -c "SELECT pg_reload_conf()" >/dev/null
psql -X -q -At -d postgres -c "SELECT heapprof_test_hold(1048576)" >/dev/null
psql -X -q -At -d postgres -c "SELECT heapprof_enable()" -c "SELECT heapprof_test_hold(1048576)" >/dev/null
wait_for "an exit dump" 10 eval '[ "$(q -c "SELECT count(*) FROM heapprof_dumps()")" -gt "$before" ]'
sleep 0.5
n=$(q -c "SELECT count(*) FROM heapprof_dumps()")
[ "$n" = $((before + 1)) ] || { echo "exit dumps: $before before, $n after (one expected)"; exit 1; }
# retention at 0 removes them all, for later tests
q -c "ALTER SYSTEM SET heapprof.max_dumps = 0" -c "SELECT pg_reload_conf()" >/dev/null
psql -X -q -At -d postgres -c "SELECT heapprof_enable()" -c "SELECT heapprof_test_hold(1048576)" >/dev/null
wait_for "no exit dump left" 10 eval '[ "$(q -c "SELECT count(*) FROM heapprof_dumps()")" = 0 ]'
echo "coverage: sampling_since own, by pid, at start; NOTICE with 48 MB unsampled; pid hints; no empty exit dump"
