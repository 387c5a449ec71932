#!/usr/bin/env bash
# t_history.sh -- the heap history kept by the server finds the slow leak
# nobody was watching (its own cluster: every client backend samples from
# its start, heapprof.history_interval set):
#  - the shape of pg_stat_monitor's issue #792: a function called through a
#    named prepared statement (pgbench -M prepared, at a fixed rate) leaks 4
#    kB of plain malloc per call.  heapprof_growth()'s first row names it
#    (hpt_malloc_leak), marks it outside memory contexts, and its rate is
#    within 30 % of the true one (the calls pgbench counts x 4 kB, per
#    hour).  Beside it, and no suspect: a twin that frees what it takes, a
#    session that prepared 300 statements and then waits, a session that
#    ran one big sort (per process, every suspect is the leaker's);
#  - Debian's prometheus-postgres-exporter with heapprof's queries file, as
#    a role with the monitor workflow alone, and Debian's Prometheus
#    scraping it: /metrics and a PromQL query name the function; that role
#    cannot read a process's history;
#  - heapprof_dump_timeline() renders in headless Chromium with the leaker as
#    its top series, and every value it draws equals heapprof_history()'s;
#  - a role sees the history of its own sessions only (pg_stat_activity's
#    rule);
#  - the history survives a clean restart and a crash restart (a backend
#    killed with SIGKILL while the collector asks it); no draft is left and
#    no file read is half-written; planted files (a FIFO, a directory, a
#    link, a cut-off tick) are skipped with a warning; a folder the
#    collector cannot write is reported by heapprof_collector() and in the
#    log, and the server goes on; so is a tick over
#    heapprof.report_memory_limit, the collector staying; a history folder
#    replaced by a link is read by no one; windows beyond 100 years, empty
#    or negative are refused.
# HP_HISTORY_LONG=1 (default on PostgreSQL 15): the issue's run, 150 s at a
# 10 s interval; otherwise 40 s at 2 s.
set -euo pipefail
cd "${HP_TOP:-$(dirname "$0")/..}"
. tests/lib.sh
. tests/prom.sh
P=${PORT:-55780}
major=$("$PGBIN/pg_config" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
long=${HP_HISTORY_LONG-$([ "$major" = 15 ] && echo 1 || echo)}
if [ -n "$long" ]; then interval=10 secs=150; else interval=2 secs=40; fi
rate=20
conf=prof:true,prof_active:false,lg_prof_sample:12
start_cluster history "$P" "$conf" \
	"shared_preload_libraries = 'heapprof'" "heapprof.enable_at_start = on" \
	"heapprof.history_interval = ${interval}s" "compute_query_id = on" || fail "cluster did not start"
export $(cluster_env history "$P")
data=$HP_SCRATCH/history/data
hist=$data/heapprof/history
w=$(scratch)
chmod 777 "$w"
q -c "CREATE EXTENSION heapprof" -c "CREATE EXTENSION heapprof_test" \
	-c "CREATE ROLE hp_mon LOGIN" -c "CREATE ROLE hp_user LOGIN" \
	-c "SELECT count(*) FROM heapprof_grant('hp_mon', 'monitor')" \
	-c "SELECT count(*) FROM heapprof_grant('hp_user', 'history')" \
	-c "GRANT EXECUTE ON FUNCTION heapprof_test_malloc_leak(integer) TO hp_user" >/dev/null

# the exporter and Prometheus, from the start
prom_start "$w/prom" "$P" "$HP_SCRATCH/history/sock" postgres hp_mon || fail "exporter and prometheus"

# a session that holds what it leaked, so that the latest ticks have it
# too (a tick after the leaker exits no longer does); filled at once, it
# is no suspect
q -c "SET application_name = 'holder'" -c "SELECT count(heapprof_test_malloc_leak(4096)) FROM generate_series(1, 2000)" \
	-c "SELECT pg_sleep($((secs + 120)))" >/dev/null 2>&1 &
holder_job=$!
at_exit "kill $holder_job 2>/dev/null || true"
# the workload, all at once for $secs seconds
echo 'SELECT heapprof_test_malloc_leak(4096);' >"$w/leak.sql"
echo 'SELECT heapprof_test_malloc_twin(4096);' >"$w/twin.sql"
bench() { "$PGBIN/pgbench" -n -M prepared -c 1 -R "$rate" -T "$secs" -f "$w/$1.sql" postgres >"$w/$1.out" 2>&1; }
PGAPPNAME=leaker bench leak &
leak_job=$!
PGAPPNAME=twin bench twin &
twin_job=$!
{
	echo "SET application_name = 'prepared';"
	for i in $(seq 1 300); do echo "PREPARE p$i AS SELECT relname, $i FROM pg_class WHERE oid = \$1 ORDER BY 1;"; done
	for i in $(seq 1 300); do echo "EXECUTE p$i(1259);"; done
	echo "SELECT pg_sleep($secs);"
} | q >/dev/null &
prep_job=$!
q -c "SET application_name = 'sorter'" -c "SET work_mem = '256MB'" \
	-c "SELECT count(*) FROM (SELECT md5(g::text) FROM generate_series(1, 1000000) g ORDER BY 1) s" \
	-c "SELECT pg_sleep($secs)" >/dev/null &
sort_job=$!
# pgbench's client, not a connection of its own start-up
sleep 2
leaker=$(wait_query "the leaking session" 10 \
	"SELECT pid FROM pg_stat_activity WHERE application_name = 'leaker' ORDER BY backend_start DESC LIMIT 1")
# a role's own session, for the visibility check
q_as hp_user -c "SET application_name = 'hp_user'" -c "SELECT heapprof_test_malloc_leak(100000)" \
	-c "SELECT pg_sleep($((interval * 3)))" >/dev/null &
user_job=$!
wait "$leak_job" || fail "pgbench (leak): $(cat "$w/leak.out")"
wait "$twin_job" || fail "pgbench (twin): $(cat "$w/twin.out")"
wait "$prep_job" "$sort_job" "$user_job" || fail "a session of the workload failed"
sleep "$interval"	# a tick after the last call

# 1. the suspect: the leaker's function, outside memory contexts, at its true rate
calls=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$w/leak.out")
dur=$(sed -n 's/^duration: \([0-9]*\) s$/\1/p' "$w/leak.out")
true_rate=$((calls * 4096 * 3600 / dur))
q -F'|' -c "SELECT kind, name, bytes_per_hour, outside_contexts, processes FROM heapprof_growth()" >"$w/growth"
IFS='|' read -r kind name got outside procs <"$w/growth" || fail "heapprof_growth() found no suspect"
[ "$kind|$name|$outside" = "function|hpt_malloc_leak|t" ] ||
	fail "the first suspect is $kind $name (outside contexts: $outside), not the leaking function: $(cat "$w/growth")"
awk -v g="$got" -v t="$true_rate" 'BEGIN { exit !(g >= 0.7 * t && g <= 1.3 * t) }' ||
	fail "hpt_malloc_leak grows $got B/h by heapprof_growth(), truly $true_rate B/h ($calls calls in $dur s)"
# no suspect but the leaker's: per process, every row is its pid
others=$(q -c "SELECT DISTINCT pid || ' ' || kind || ' ' || name FROM heapprof_growth(per_process => true)
	WHERE pid <> $leaker")
[ -z "$others" ] || fail "suspects outside the leaking backend: $others"
grep -q hpt_malloc_twin "$w/growth" && fail "the twin that frees is a suspect"

# 2. the timeline: it renders, the leaker on top, its values heapprof_history()'s
q -c "SELECT heapprof_dump_timeline()" >"$w/timeline.svg"
chrome=(timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run
	--disable-background-networking --disable-component-update --disable-sync --user-data-dir="$w/chrome")
"${chrome[@]}" --dump-dom "file://$w/timeline.svg" >"$w/dom.html" 2>/dev/null || fail "chromium"
grep -q 'id="details"[^>]*>Fastest growth: hpt_malloc_leak ' "$w/dom.html" ||
	fail "the timeline's details: $(grep -o 'id="details"[^<]*' "$w/dom.html")"
grep -o '<circle class="pt" data-series="0" data-time="[0-9]*" data-bytes="[0-9]*"' "$w/dom.html" |
	sed 's/.*data-time="\([0-9]*\)" data-bytes="\([0-9]*\)"/\1 \2/' | sort >"$w/drawn"
[ "$(wc -l <"$w/drawn")" -ge 5 ] || fail "the timeline drew $(wc -l <"$w/drawn") points of the leaker"
q -F' ' -c "SELECT (extract(epoch FROM time) * 1000000)::bigint, sum(bytes)::bigint FROM heapprof_history()
	WHERE what = 'function' AND key = 'hpt_malloc_leak' GROUP BY time" | sort >"$w/all"
# ticks kept after the timeline was drawn are not in it
awk -v last="$(tail -n 1 "$w/drawn" | cut -d' ' -f1)" '$1 <= last' "$w/all" >"$w/rows"
diff "$w/drawn" "$w/rows" >"$w/diff" || fail "the timeline's values are not heapprof_history()'s: $(head "$w/diff")"

# 3. Prometheus: the exporter's /metrics and a PromQL query name the function
prom_wait 'heapprof_growth_bytes_per_hour{name="hpt_malloc_leak"}' 60 >/dev/null ||
	fail "Prometheus has no growth of hpt_malloc_leak: $(prom_metrics | grep '^heapprof_')"
metrics=$(prom_metrics)
grep -q '^heapprof_function_bytes{function="hpt_malloc_leak",' <<<"$metrics" ||
	fail "/metrics does not name hpt_malloc_leak: $(grep '^heapprof_' <<<"$metrics")"
top=$(prom_query 'topk(1, heapprof_function_outside_bytes)')
grep -q '"function":"hpt_malloc_leak"' <<<"$top" || fail "PromQL's top function outside contexts: $top"
grep '^heapprof_' <<<"$metrics" | grep 'pid=\|application=\|role=' && fail "/metrics shows a process"
# the monitor role sees sums only
PGUSER=hp_mon expect_error 42501 -c "SELECT * FROM heapprof_history()" || fail "monitor reads the history"
PGUSER=hp_mon expect_error 42501 -c "SELECT * FROM heapprof_growth(per_process => true)" ||
	fail "monitor reads a process's growth"

# 4. a role sees its own sessions' history only
mine=$(q_as hp_user -c "SELECT DISTINCT application FROM heapprof_history()")
[ "$mine" = hp_user ] || fail "hp_user sees the history of: $mine"

# 5. a clean restart and a crash restart keep the history; nothing half-written is read
before=$(q -c "SELECT count(*) FROM heapprof_history() WHERE pid = $leaker")
[ "$before" -gt 0 ] || fail "the leaker's rows are gone after it exited"
as_pg env LD_PRELOAD="$JEMALLOC_SO" MALLOC_CONF="$conf" \
	"$PGBIN/pg_ctl" -D "$data" -w -m fast restart -l "$HP_SCRATCH/history/server.log" >/dev/null
[ "$(q -c "SELECT count(*) FROM heapprof_history() WHERE pid = $leaker")" = "$before" ] ||
	fail "a clean restart lost the leaker's rows"
# a backend killed with SIGKILL while the collector asks it: one that
# answers late (a C loop that does not check for interrupts), so the tick
# waits on it
q -c "SET application_name = 'spinner'" -c "SELECT heapprof_test_spin(20)" >/dev/null 2>&1 &
spinner=$(session_pid spinner)
collector=$(q -c "SELECT pid FROM heapprof_collector()")
wait_query "the collector asking the spinning backend" $((interval * 3)) \
	"SELECT 1 FROM heapprof_requests() WHERE requester = $collector AND target = $spinner" >/dev/null ||
	fail "the collector did not ask the spinning backend $spinner: $(q -c "SELECT * FROM heapprof_collector()" \
		-c "SELECT * FROM heapprof_backends()" -c "SELECT * FROM heapprof_requests()")"
kill -9 "$spinner"
up() { q -c "SELECT 1" >/dev/null 2>&1; }
wait_for "the crash restart" 60 up
wait
[ "$(q -c "SELECT count(*) FROM heapprof_history() WHERE pid = $leaker")" = "$before" ] ||
	fail "the crash restart lost the leaker's rows"
wait_query "a tick after the crash restart" 30 \
	"SELECT 1 FROM heapprof_collector() WHERE ticks > 0" >/dev/null || fail "no tick after the crash restart"
ls "$hist" | grep -v -- '-history\.heap$' && fail "files left in the history folder: $(ls "$hist")"
out=$(q -c "SELECT count(*) FROM heapprof_history()" 2>&1)
grep -q WARNING <<<"$out" && fail "a file of the history could not be read: $out"

# 6. planted files are skipped with a warning; the rest is read
t=$(date -u +%Y%m%dT%H%M%S)
as_pg mkfifo "$hist/$t.000001Z-1-history.heap"
as_pg mkdir "$hist/$t.000002Z-1-history.heap"
as_pg ln -s /etc/passwd "$hist/$t.000003Z-1-history.heap"
last=$(ls "$hist" | grep -- '-history\.heap$' | tail -n 1)
as_pg head -c 100 "$hist/$last" | as_pg tee "$hist/$t.000004Z-1-history.heap" >/dev/null
out=$(timeout 60 psql -X -At -d postgres -c "SELECT count(*) FROM heapprof_history()" 2>&1) ||
	fail "heapprof_history() over planted files: $out"
[ "$(grep -c WARNING <<<"$out")" -ge 3 ] || fail "planted files were not each skipped with a warning: $out"
[ "$(tail -n 1 <<<"$out")" -gt "$before" ] || fail "planted files hid the history: $out"
as_pg rm -rf "$hist/$t".00000[1-4]Z-1-history.heap

# 7. a folder the collector cannot write: reported, never fatal
as_pg chmod 0500 "$hist"
err=$(wait_query "the collector's report" 20 \
	"SELECT error FROM heapprof_collector() WHERE error LIKE '%could not keep a tick%'") ||
	fail "a folder the collector cannot write is not reported: $(q -c 'SELECT * FROM heapprof_collector()')"
as_pg chmod 0700 "$hist"
grep -q "heapprof history: could not keep a tick" "$HP_SCRATCH/history/server.log" || fail "not in the log: $err"
n=$(q -c "SELECT ticks FROM heapprof_collector()")
wait_query "ticks again" 20 "SELECT 1 FROM heapprof_collector() WHERE ticks > $n" >/dev/null ||
	fail "the collector did not resume"

# 8. a tick over heapprof.report_memory_limit is reported and lost, never the
# collector; a folder replaced by a link is read by no one; windows are
# checked before any arithmetic
collector=$(q -c "SELECT pid FROM heapprof_collector()")
q -c "SELECT heapprof_test_malloc_leak(4096), pg_sleep($((interval * 4)))" >/dev/null &
q -c "ALTER SYSTEM SET heapprof.report_memory_limit = '64kB'" -c "SELECT pg_reload_conf()" >/dev/null
wait_query "a tick over the memory limit reported" $((interval * 4)) \
	"SELECT 1 FROM heapprof_collector() WHERE error LIKE '%heapprof.report_memory_limit%' AND error_at > now() - interval '1 minute'" \
	>/dev/null || fail "a tick over the memory limit: $(q -c 'SELECT * FROM heapprof_collector()')"
q -c "ALTER SYSTEM RESET heapprof.report_memory_limit" -c "SELECT pg_reload_conf()" >/dev/null
wait
[ "$(q -c "SELECT pid FROM heapprof_collector()")" = "$collector" ] || fail "the collector ended over the memory limit"
# the collector stopped first: it would make the folder again between the move and the link
as_pg sed -i "s/^heapprof.history_interval = .*/heapprof.history_interval = 0/" "$data/postgresql.conf"
q -c "SELECT pg_reload_conf()" >/dev/null
sleep $((interval + 1))
as_pg mv "$hist" "$hist.real"
as_pg ln -s "$hist.real" "$hist"
[ -L "$hist" ] || fail "the history folder could not be replaced by a link: $(ls -la "$hist")"
out=$(q -c "SELECT count(*) FROM heapprof_history()" 2>&1)
grep -q 'is not a directory: nothing in it is read' <<<"$out" && [ "$(tail -n 1 <<<"$out")" = 0 ] ||
	fail "a linked history folder was read: $out"
as_pg rm "$hist"
as_pg mv "$hist.real" "$hist"
as_pg sed -i "s/^heapprof.history_interval = .*/heapprof.history_interval = ${interval}s/" "$data/postgresql.conf"
q -c "SELECT pg_reload_conf()" >/dev/null
for bad in "'2147483647 days'" "'1200 months 2147483647 days'" "'-1 hours'" "'101 years'"; do
	expect_error 22023 -c "SELECT count(*) FROM heapprof_history($bad)" || fail "since => $bad"
done
q -c "SELECT count(*) FROM heapprof_growth(since => '-1 days 48 hours')" >/dev/null || fail "since => '-1 days 48 hours' (a day)"
echo "leak: heapprof_growth() $((got / 1048576)) MB/h, truly $((true_rate / 1048576)) MB/h ($calls calls in $dur s); " \
	"timeline $(wc -l <"$w/drawn") points = heapprof_history(); Prometheus names hpt_malloc_leak; history kept across restarts"
