#!/usr/bin/env bash
# t_client_growth.sh -- pg_heapprof --growth and --timeline: the heap history
# from the shell, over one server and two (two clusters of their own, every
# client backend sampling from its start, heapprof.history_interval = 1s):
#  - a session per cluster calls heapprof_test_malloc_leak(4096) 20 times a
#    second (pgbench -R 20): --growth on one cluster names hpt_malloc_leak
#    first, outside memory contexts, at a rate within 30 % of the true one
#    (20 x 4 kB a second); --per-process names the leaking session's pid;
#  - --growth --merge over both clusters: hpt_malloc_leak first, servers 2,
#    at a rate within 30 % of the sum of the two servers' own; without
#    --merge, one table with each server's rows and its name;
#  - a server that fails -- down, a database still at 1.3, a role without
#    the history workflow -- is reported as pg_heapprof reports failures
#    (exit 1, the server's message and a hint), and the others' rows are
#    still printed, merged too;
#  - --timeline -o F writes an SVG that xmllint reads, naming
#    hpt_malloc_leak; --timeline with two servers is a usage error;
#  - a name with control bytes (ticks planted in the history folder) reaches
#    the terminal escaped, in the table and merged;
#  - the combinations that make no sense exit 2.
set -euo pipefail
cd "${HP_TOP:=$(cd "$(dirname "$0")/.." && pwd)}"
. tests/lib.sh
P1=55790
P2=55791
rate=20
for c in 1 2; do
	start_cluster "growth$c" $((P1 + c - 1)) "prof:true,prof_active:false,lg_prof_sample:12" \
		"shared_preload_libraries = 'heapprof'" "heapprof.enable_at_start = on" \
		"heapprof.history_interval = 1s" "compute_query_id = on" || fail "cluster $c did not start"
done
sock1=$HP_SCRATCH/growth1/sock
sock2=$HP_SCRATCH/growth2/sock
cs1="host=$sock1 port=$P1 user=postgres dbname=postgres"
cs2="host=$sock2 port=$P2 user=postgres dbname=postgres"
w=$(scratch)
chmod 777 "$w"
cleanup() {
	local j
	for j in ${BENCH_PIDS:-}; do kill "$j" 2>/dev/null || true; done
}
at_exit cleanup
# on cluster N: q with its connection settings
on() { local c=$1; shift; PGHOST=$HP_SCRATCH/growth$c/sock PGPORT=$((P1 + c - 1)) PGUSER=postgres q "$@"; }
for c in 1 2; do
	on "$c" -c "CREATE EXTENSION heapprof" -c "CREATE EXTENSION heapprof_test" >/dev/null
	[ "$(on "$c" -c "SELECT extversion FROM pg_extension WHERE extname = 'heapprof'")" = 1.4 ] ||
		fail "cluster $c: heapprof is not at 1.4"
done

# the leak, on both clusters at once: 20 calls a second, each 4 kB of malloc never freed
echo "SELECT heapprof_test_malloc_leak(4096);" >"$w/leak.sql"
BENCH_PIDS=
for c in 1 2; do
	env $(cluster_env "growth$c" $((P1 + c - 1))) PGAPPNAME=leaker \
		"$PGBIN/pgbench" -n -c 1 -R "$rate" -T 120 -f "$w/leak.sql" postgres >"$w/bench$c.out" 2>&1 &
	BENCH_PIDS+=" $!"
done
leaker1=$(PGHOST=$sock1 PGPORT=$P1 PGUSER=postgres wait_query "the leaking session" 10 \
	"SELECT pid FROM pg_stat_activity WHERE application_name = 'leaker' AND query LIKE '%malloc_leak%'")
t0=$SECONDS
# 16 s of ticks: a steady series is judged from 6 points
sleep 16
for j in $BENCH_PIDS; do kill -0 "$j" 2>/dev/null || fail "pgbench ended early: $(cat "$w"/bench*.out)"; done
true_rate=$((rate * 4096 * 3600))

# -- one server: the leaking function first, outside memory contexts, at its true rate
cli() { ./pg_heapprof "$@"; }
# COLUMN of the first data row (2: kind ... last: name), of a table in FILE
first() { awk -v c="$1" 'NR == 2 { print (c == "name" ? $NF : $c) }' "$2"; }
cli -d "$cs1" --growth >"$w/one" 2>"$w/one.err" || fail "--growth: $(cat "$w/one.err")"
head1=$(sed -n 1p "$w/one")
[ "$(awk '{ print $1, $2, $3, $4, $5, $NF }' <<<"$head1")" = "kind bytes/hour outside/hour outside steadiness name" ] ||
	fail "--growth's header: $head1"
[ "$(first 1 "$w/one") $(first name "$w/one") $(first 4 "$w/one")" = "function hpt_malloc_leak yes" ] ||
	fail "--growth on one server: the first suspect is not hpt_malloc_leak outside contexts: $(cat "$w/one")"
r1=$(first 2 "$w/one")
within() { awk -v g="$1" -v t="$2" -v p="$3" 'BEGIN { exit !(g >= (1 - p / 100) * t && g <= (1 + p / 100) * t) }'; }
within "$r1" "$true_rate" 30 || fail "hpt_malloc_leak grows $r1 B/h by --growth, truly $true_rate B/h"
# the server column names the server as libpq does, host:port
grep -F " $sock1:$P1 " "$w/one" >/dev/null || fail "--growth: no server column $sock1:$P1: $(cat "$w/one")"
# the same row as heapprof_growth() has it (the numbers drift a little from one tick to the next)
sql1=$(on 1 -F' ' -c "SELECT kind, name, bytes_per_hour FROM heapprof_growth() LIMIT 1")
[ "${sql1% *}" = "function hpt_malloc_leak" ] && within "${sql1##* }" "$r1" 10 ||
	fail "heapprof_growth()'s first row is $sql1, --growth's $r1"
cli -d "$cs1" --growth --per-process --kinds function >"$w/pp" || fail "--growth --per-process"
[ "$(awk 'NR == 2 { print $1, $10, $NF }' "$w/pp")" = "function $leaker1 hpt_malloc_leak" ] ||
	fail "--growth --per-process --kinds function: not the leaker's pid $leaker1: $(cat "$w/pp")"
cli -d "$cs1" --growth --kinds context >"$w/ctx" || fail "--growth --kinds context"
[ "$(awk 'NR > 1 { print $1 }' "$w/ctx" | sort -u | tr '\n' ' ')" = "context " ] ||
	fail "--growth --kinds context: $(cat "$w/ctx")"
# a rate higher than any: only the header
cli -d "$cs1" --growth --min-rate 1TB >"$w/none" || fail "--growth --min-rate 1TB"
[ "$(wc -l <"$w/none")" = 1 ] || fail "--growth --min-rate 1TB: $(cat "$w/none")"

# -- two servers, merged: one row per name, servers 2, the sum of the two servers' rates
cli -d "$cs2" --growth --kinds function >"$w/two" || fail "--growth on the second server"
[ "$(first name "$w/two")" = hpt_malloc_leak ] || fail "--growth on server 2: $(cat "$w/two")"
r2=$(first 2 "$w/two")
cli -d "$cs1" -d "$cs2" --growth --merge >"$w/merged" 2>"$w/merged.err" || fail "--growth --merge: $(cat "$w/merged.err")"
[ "$(awk '{ print $(NF - 1), $NF; exit }' "$w/merged")" = "servers name" ] || fail "--merge's header: $(sed -n 1p "$w/merged")"
[ "$(first 1 "$w/merged") $(first name "$w/merged") $(awk 'NR == 2 { print $(NF - 1) }' "$w/merged")" = \
	"function hpt_malloc_leak 2" ] || fail "--growth --merge: $(cat "$w/merged")"
rm_=$(first 2 "$w/merged")
within "$rm_" $((r1 + r2)) 30 || fail "--merge: hpt_malloc_leak grows $rm_ B/h, the servers say $r1 + $r2"
within "$rm_" $((2 * true_rate)) 30 || fail "--merge: hpt_malloc_leak grows $rm_ B/h, truly $((2 * true_rate))"
[ "$(awk 'NR == 2 { print $9 }' "$w/merged")" = 2 ] || fail "--merge: not 2 processes: $(sed -n 2p "$w/merged")"
# each name once
dups=$(awk 'NR > 1 { print $1, $NF }' "$w/merged" | sort | uniq -d)
[ -z "$dups" ] || fail "--merge shows a name twice: $dups"
# without --merge: one table, each server's rows with its name
cli -d "$cs1" -d "$cs2" --growth --kinds function >"$w/both" || fail "--growth over two servers"
for s in "$sock1:$P1" "$sock2:$P2"; do
	grep -F " $s " "$w/both" | grep -F hpt_malloc_leak >/dev/null || fail "--growth over two servers: no row of $s: $(cat "$w/both")"
done

# -- servers that fail: down, a database at 1.3, a role without the history workflow
on 2 -c "CREATE DATABASE hp_old" >/dev/null
env $(cluster_env growth2 $P2) psql -X -q -d hp_old -c "CREATE EXTENSION heapprof VERSION '1.3'" >/dev/null
down="host=$sock1 port=55792 user=postgres dbname=postgres"
old="host=$sock2 port=$P2 user=postgres dbname=hp_old"
rc=0
cli -d "$cs1" -d "$down" -d "$old" --growth --merge >"$w/fail" 2>"$w/fail.err" || rc=$?
[ "$rc" = 1 ] || fail "--growth --merge with a server down: exit $rc"
grep -F "$sock1:55792: " "$w/fail.err" >/dev/null || fail "the server that is down is not named: $(cat "$w/fail.err")"
grep -F "needs heapprof 1.4 on the server; database \"hp_old\" has 1.3" "$w/fail.err" >/dev/null ||
	fail "a database at 1.3: $(cat "$w/fail.err")"
grep -F "hint: run ALTER EXTENSION heapprof UPDATE;" "$w/fail.err" >/dev/null || fail "no hint for 1.3: $(cat "$w/fail.err")"
[ "$(first name "$w/fail") $(awk 'NR == 2 { print $(NF - 1) }' "$w/fail")" = "hpt_malloc_leak 1" ] ||
	fail "--growth --merge with failing servers: the answering one's rows: $(cat "$w/fail")"
rc=0
cli -d "$cs1" -d "$down" --growth --kinds function >"$w/fail2" 2>/dev/null || rc=$?
[ "$rc" = 1 ] && grep -F "(unreachable)" "$w/fail2" >/dev/null && grep -F hpt_malloc_leak "$w/fail2" >/dev/null ||
	fail "--growth with a server down (exit $rc): $(cat "$w/fail2")"
on 1 -c "CREATE ROLE hp_nobody LOGIN" >/dev/null
rc=0
cli -d "host=$sock1 port=$P1 user=hp_nobody dbname=postgres" --growth >/dev/null 2>"$w/denied" || rc=$?
[ "$rc" = 1 ] && grep -F "SELECT heapprof_grant('hp_nobody', 'history');" "$w/denied" >/dev/null ||
	fail "--growth as a role without the history workflow (exit $rc): $(cat "$w/denied")"

# a window the server refuses: its message, its hint in pg_heapprof's terms
rc=0
cli -d "$cs1" --growth --since '-1 hour' >/dev/null 2>"$w/since" || rc=$?
[ "$rc" = 1 ] && grep -F "since must be a positive interval" "$w/since" >/dev/null &&
	grep -F "hint: For example --since '1 hour'." "$w/since" >/dev/null ||
	fail "--growth --since '-1 hour' (exit $rc): $(cat "$w/since")"

# -- the timeline: an SVG of one server, the leak in it
cli -d "$cs1" --timeline --since '10 min' -o "$w/timeline.svg" || fail "--timeline"
xmllint --noout "$w/timeline.svg" || fail "--timeline wrote no well-formed SVG"
grep -F "<svg" "$w/timeline.svg" >/dev/null && grep -F hpt_malloc_leak "$w/timeline.svg" >/dev/null ||
	fail "--timeline: no svg naming hpt_malloc_leak: $(head -c 300 "$w/timeline.svg")"
cli -d "$cs1" --timeline --pid "$leaker1" --kind context --series 3 -o "$w/pid.svg" || fail "--timeline --pid"
xmllint --noout "$w/pid.svg" && grep -F "process $leaker1" "$w/pid.svg" >/dev/null ||
	fail "--timeline --pid $leaker1: $(head -c 300 "$w/pid.svg")"
rc=0
cli -d "$cs1" -d "$cs2" --timeline -o "$w/no.svg" 2>"$w/usage" || rc=$?
[ "$rc" = 2 ] && grep -F "one server" "$w/usage" >/dev/null && [ ! -e "$w/no.svg" ] ||
	fail "--timeline over two servers: exit $rc, $(cat "$w/usage")"
rc=0
cli -d "$old" --timeline -o "$w/old.svg" 2>"$w/old.err" || rc=$?
[ "$rc" = 1 ] && grep -F -- "--timeline needs heapprof 1.4" "$w/old.err" >/dev/null ||
	fail "--timeline on 1.3: exit $rc, $(cat "$w/old.err")"
secs=$((SECONDS - t0))
for j in $BENCH_PIDS; do kill "$j" 2>/dev/null || true; done
BENCH_PIDS=

# -- a hostile name: ticks planted in cluster 2's history folder, a function
# named with escape sequences that grows 10 MB a minute in a process of its own
hist=$HP_SCRATCH/growth2/data/heapprof/history
ls "$hist"/*.heap >/dev/null 2>&1 || fail "cluster 2 keeps no history in $hist"
now=$(date +%s)
evil='hpt_evil\x1b]0;pwned\x07\x1b[2K\x0dfake'
for i in $(seq 0 9); do
	t=$((now - 1200 + i * 60))
	name=$(date -u -d "@$t" +%Y%m%dT%H%M%S).000000Z-1-history.heap
	printf 'heapprof-history 1\nt %d000000 60000000\np 4242 %d000000 10 0 1 client\\x20backend - -\nn f %s\n0 %d -1\ne 1 1\n' \
		"$t" $((now - 3600)) "$evil" $(((i + 1) * 10485760)) >"$w/$name"
	chown "$HP_OSUSER" "$w/$name"
	chmod 600 "$w/$name"
	mv "$w/$name" "$hist/$name"
done
term_ok() {
	LC_ALL=C grep -P '[\x00-\x08\x0b-\x1f\x7f]' "$1" >/dev/null && fail "$2: a control reaches the terminal: $(od -c "$1" | sed -n 1,5p)"
	return 0
}
cli -d "$cs2" --growth >"$w/evil" 2>"$w/evil.err" || fail "--growth with the planted ticks: $(cat "$w/evil.err")"
term_ok "$w/evil" "--growth"
grep -F 'hpt_evil\x1B]0;pwned\x07\x1B[2K\x0Dfake' "$w/evil" >/dev/null ||
	fail "--growth does not show the planted name escaped: $(cat -v "$w/evil")"
cli -d "$cs1" -d "$cs2" --growth --merge >"$w/evil.merged" 2>&1 || fail "--growth --merge with the planted ticks"
term_ok "$w/evil.merged" "--growth --merge"
grep -F 'hpt_evil\x1B]0;pwned\x07' "$w/evil.merged" >/dev/null || fail "--merge: the planted name: $(cat -v "$w/evil.merged")"
# on a terminal too (script(1) gives pg_heapprof one)
script -qec "./pg_heapprof -d '$cs2' --growth" /dev/null >"$w/evil.tty" 2>&1 || fail "--growth on a terminal"
tr -d '\r' <"$w/evil.tty" >"$w/evil.tty.lf"
term_ok "$w/evil.tty.lf" "--growth on a terminal"
grep -F 'hpt_evil\x1B]0;pwned' "$w/evil.tty.lf" >/dev/null || fail "--growth on a terminal: $(cat -v "$w/evil.tty")"

# -- combinations that make no sense
bad=0
usage() {
	local rc=0
	cli -d "$cs1" "$@" >/dev/null 2>"$w/usage" || rc=$?
	[ "$rc" = 2 ] && [ -s "$w/usage" ] || fail "pg_heapprof $*: exit $rc, $(cat "$w/usage")"
	bad=$((bad + 1))
}
usage --growth --report top
usage --growth --pid 1
usage --growth -o "$w/x"
usage --growth --backend-type all
usage --growth --merge --per-process
usage --growth --kind function
usage --growth --series 3
usage --growth --kinds everything
usage --growth --min-rate 1XB
usage --growth --min-rate -5
usage --growth --peak
usage --timeline --merge
usage --timeline --kinds function
usage --timeline --kind all
usage --timeline --series 0
usage --timeline --series 51
usage --timeline --min-rate 1MB
usage --timeline --per-process
usage --timeline -o "$w/dir/"
usage --since '1 hour'
usage --list --kinds function
usage --report top --pid 1 --series 3
echo "client growth: hpt_malloc_leak first on one server at $r1 B/h (true $true_rate), merged over 2 servers $rm_ B/h (the servers' $r1 + $r2), servers 2; failing servers (down, 1.3, no grant) reported beside the rows; --timeline an SVG of it; a planted hostile name escaped; $bad bad combinations exit 2 (${secs} s of leak)"
