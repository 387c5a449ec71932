#!/usr/bin/env bash
# t_budget.sh -- a report's memory is bounded (cluster (a)):
#  - heapprof_top on a stored profile of 20,000 stacks of ~40 frames (made by
#    bench/gen_stacks from this server's own heap) under
#    heapprof.report_memory_limit = 24MB fails with 53200, its hint naming
#    the setting, heapprof-report and a coarser sampling;
#  - the backend's memory contexts are back to the byte where they were,
#    its peak RSS (VmHWM) rose by less than the budget plus 16 MB, the
#    session goes on and the server did not restart;
#  - a stored profile larger than the budget is refused (53200) before it
#    is read: the backend's peak RSS does not grow by the file's size; so
#    is a peak profile, and a live heap (this backend's, another's), but not
#    heapprof_dump_portable(), the way out;
#  - a superuser raises the setting and the same report succeeds; a role
#    that is not one cannot SET it (42501) until granted SET on it, and
#    lowering it does not tell that role another's profile's size (42501
#    before 53200).
set -euo pipefail
. "${HP_TOP:=$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
cd "$HP_TOP"
w=$(scratch)
chmod 755 "$w"
cleanup() {
	[ -n "${snaps:-}" ] && as_pg rm -f "$snaps"/hp_budget.heap
	q -c "DROP ROLE IF EXISTS hp_budget_role" >/dev/null 2>&1 || true
}
at_exit cleanup
data=$(q -c "SHOW data_directory")
snaps=$data/heapprof/snapshots
q -c "CREATE EXTENSION IF NOT EXISTS heapprof" >/dev/null
as_pg mkdir -p -m 700 "$data/heapprof" "$snaps"

# this server's heap, its stacks made 20,000
q -c "SELECT heapprof_enable()" -c "SELECT count(*) FROM generate_series(1, 100000) g GROUP BY g % 1000" \
	-c "\\o $w/real.heap" -c "SELECT heapprof_dump_raw()" >/dev/null
bench/gen_stacks 20000 "$w/real.heap" >"$w/big.heap"
as_pg sh -c 'umask 077 && cat >"$0"' "$snaps/hp_budget.heap" <"$w/big.heap"
kb=$(( $(stat -c %s "$w/big.heap") / 1024 ))

started=$(q -c "SELECT pg_postmaster_start_time()")
report="SELECT count(*) FROM heapprof_top(stored => 'hp_budget')"
mem="SELECT sum(total_bytes) FROM pg_backend_memory_contexts"
hwm="SELECT (regexp_match(pg_read_file('/proc/self/status'), 'VmHWM:\s+(\d+)'))[1]"
# one session: a warm-up failure (catalogs, error paths), then measured
out=$(psql -X -At -v VERBOSITY=verbose -d postgres 2>&1 <<SQL
SET heapprof.report_memory_limit = '24MB';
SELECT 'pid', pg_backend_pid();
$report;
SELECT 'warm', ($mem), ($hwm);
SELECT 'mem0', ($mem);
SELECT 'hwm0', ($hwm);
$report;
SELECT 'mem1', ($mem);
SELECT 'hwm1', ($hwm);
SET heapprof.report_memory_limit = '1GB';
SELECT 'rows', ($report);
SQL
)
val() { awk -F'|' -v k="$1" '$1 == k {print $2}' <<<"$out"; }
[ "$(grep -c "ERROR:  53200: the report needs more memory than heapprof.report_memory_limit (24MB) allows" <<<"$out")" = 2 ] ||
	{ echo "over budget: $out"; exit 1; }
grep -q "HINT:  Analyse the profile off the server with heapprof-report.*sample more coarsely.*raise heapprof.report_memory_limit" <<<"$out" ||
	{ echo "hint: $out"; exit 1; }
[ -n "$(val mem0)" ] && [ "$(val mem0)" = "$(val mem1)" ] ||
	{ echo "memory contexts: $(val mem0) before, $(val mem1) after"; exit 1; }
grew=$(( $(val hwm1) - $(val hwm0) ))
[ "$grew" -lt $(( (24 + 16) * 1024 )) ] || { echo "peak RSS grew by $grew kB over a 24MB budget"; exit 1; }
[ "$(val rows)" -gt 0 ] || { echo "raised by a superuser: $out"; exit 1; }
[ "$(q -c "SELECT pg_postmaster_start_time()")" = "$started" ] || { echo "the server restarted"; exit 1; }

# a file larger than the budget is refused before it is read
small=$(( kb / 2 ))
refused=$(psql -X -At -v VERBOSITY=verbose -d postgres 2>&1 <<SQL
SELECT 'hwm0', ($hwm);
SET heapprof.report_memory_limit = '${small}kB';
$report;
SELECT 'hwm1', ($hwm);
SQL
)
grep -q "ERROR:  53200: the report needs more memory than heapprof.report_memory_limit" <<<"$refused" &&
	grep -q "DETAIL:  the stored profile would hold [0-9]* bytes before the analysis starts" <<<"$refused" ||
	{ echo "a file over the budget: $refused"; exit 1; }
rval() { awk -F'|' -v k="$1" '$1 == k {print $2}' <<<"$refused"; }
[ $(( $(rval hwm1) - $(rval hwm0) )) -lt $(( kb / 2 )) ] ||
	{ echo "peak RSS grew by $(( $(rval hwm1) - $(rval hwm0) )) kB refusing a $kb kB file"; exit 1; }

# so is a peak profile larger than the budget
peak=$(psql -X -At -v VERBOSITY=verbose -d postgres 2>&1 <<SQL
SELECT heapprof_enable();
SELECT count(*) FROM generate_series(1, 100000) g GROUP BY g % 1000;
SET heapprof.report_memory_limit = '1kB';
SELECT count(*) FROM heapprof_top(peak => true);
SQL
)
grep -q "ERROR:  53200: the report needs more memory than heapprof.report_memory_limit" <<<"$peak" &&
	grep -q "DETAIL:  the peak profile would hold [0-9]* bytes before the analysis starts" <<<"$peak" ||
	{ echo "a peak profile over the budget: $peak"; exit 1; }

# ... and a live heap, this backend's or another's, checked before it is
# read; heapprof_dump_portable(), the way out, is not limited
live=$(psql -X -At -v VERBOSITY=verbose -d postgres 2>&1 <<SQL
SELECT heapprof_enable();
SELECT count(*) FROM generate_series(1, 100000) g GROUP BY g % 1000;
SET heapprof.report_memory_limit = '1kB';
SELECT count(*) FROM heapprof_top();
SELECT count(*) FROM heapprof_top(pid => (SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'));
SELECT 'portable', length(heapprof_dump_portable()) > 1024;
SQL
)
[ "$(grep -c "DETAIL:  the heap profile would hold [0-9]* bytes before the analysis starts" <<<"$live")" = 2 ] &&
	grep -qx "portable|t" <<<"$live" || { echo "a live heap over the budget: $live"; exit 1; }

# only superusers, or roles granted SET on it, raise it
q -c "CREATE ROLE hp_budget_role LOGIN" >/dev/null
denied=$(psql -X -At -v VERBOSITY=verbose -d postgres -U hp_budget_role -c "SET heapprof.report_memory_limit = '1GB'" 2>&1) &&
	{ echo "a non-superuser raised the budget"; exit 1; }
grep -q "ERROR:  42501: permission denied to set parameter \"heapprof.report_memory_limit\"" <<<"$denied" ||
	{ echo "non-superuser: $denied"; exit 1; }
q -c "GRANT SET ON PARAMETER heapprof.report_memory_limit TO hp_budget_role" >/dev/null
[ "$(psql -X -q -At -d postgres -U hp_budget_role -c "SET heapprof.report_memory_limit = '1GB'" -c "SHOW heapprof.report_memory_limit")" = 1GB ] ||
	{ echo "granted SET: not raised"; exit 1; }
# a role that may lower it does not learn the size of a profile it may not read
q -c "GRANT EXECUTE ON FUNCTION heapprof_top TO hp_budget_role" >/dev/null
other=$(psql -X -At -v VERBOSITY=verbose -d postgres -U hp_budget_role -c "SET heapprof.report_memory_limit = '1kB'" \
	-c "$report" 2>&1) && { echo "another role's profile read"; exit 1; }
grep -q "ERROR:  42501: permission denied for heap profile \"hp_budget\"" <<<"$other" && ! grep -q "bytes" <<<"$other" ||
	{ echo "another role's profile over the budget: $other"; exit 1; }
q -c "REVOKE SET ON PARAMETER heapprof.report_memory_limit FROM hp_budget_role" >/dev/null

echo "budget: ${kb} kB profile over 24MB: 53200, contexts back to $(val mem0) bytes, peak RSS +${grew} kB, server not restarted; non-superuser SET refused (42501), granted SET allowed"
