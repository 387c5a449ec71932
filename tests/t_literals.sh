#!/usr/bin/env bash
# t_literals.sh -- no literal of a statement on disk by default (cluster
# (a)): a session that ran statements with a secret literal, then left a
# peak, a statement capture, a persisted snapshot and an exit dump, leaves
# the secret in no file under $PGDATA/heapprof; their queryids stay, and
# a live report still shows the text. With heapprof.store_statement_text
# on (superuser only) the files keep it.
set -euo pipefail
cd "${HP_TOP:-$(dirname "$0")/..}"
. tests/lib.sh
QOPTS="-c heapprof.dump_on_exit_threshold=-1"
create_ext heapprof heapprof_test
data=$(q -c "SHOW data_directory")
settings() {
	q -c "ALTER SYSTEM SET heapprof.capture_min_growth = '1MB'" -c "ALTER SYSTEM SET compute_query_id = on" \
		-c "ALTER SYSTEM SET heapprof.dump_on_exit_threshold = '5MB'" \
		-c "ALTER SYSTEM SET heapprof.store_statement_text = $1" -c "SELECT pg_reload_conf()" >/dev/null
	wait_for "the settings" 10 has_setting "$1"
}
has_setting() { [ "$(QOPTS= q -c "SHOW heapprof.store_statement_text")" = "$1" ]; }
cleanup() {
	q -c "ALTER SYSTEM RESET heapprof.capture_min_growth" -c "ALTER SYSTEM RESET compute_query_id" \
		-c "ALTER SYSTEM RESET heapprof.dump_on_exit_threshold" -c "ALTER SYSTEM RESET heapprof.store_statement_text" \
		-c "SELECT heapprof_drop_snapshot(name) FROM heapprof_snapshots() WHERE name LIKE 'hp_lit%'" \
		-c "SELECT pg_reload_conf()" >/dev/null || true
}
at_exit cleanup
# files SECRET: the files under heapprof/ that hold SECRET
files() { grep -rla -- "$1" "$data/heapprof" || true; }
# session SECRET SNAPSHOT: the statements, then (still in the session) the files holding SECRET
session() {
	QOPTS= q -c "SELECT heapprof_enable()" \
		-c "SELECT length(repeat('$1', 3000000))" \
		-c "SELECT heapprof_test_leak(3000000 + length('$1'))" \
		-c "SELECT heapprof_snapshot('$2', true) > 0" \
		-c "SELECT count(*) FROM heapprof_queries() WHERE query LIKE '%$1%'" \
		-c "SELECT heapprof_test_hold(10000000)" \
		-c "\\! grep -rla -- '$1' '$data/heapprof' | sed 's/^/FILE /' || true"
}
kinds() { q -c "SELECT string_agg(DISTINCT kind, ',' ORDER BY kind) FROM heapprof_stored() WHERE pid = $1"; }

settings off
before=$(q -c "SELECT count(*) FROM heapprof_stored()")
out=$(session Sekret-4242 hp_lit1)
live=$(sed -n 5p <<<"$out")
[ "$live" -ge 1 ] || fail "a live report lost the statement's text: $out"
pid=$(q -c "SELECT pid FROM heapprof_snapshots() WHERE name = 'hp_lit1'")
wait_for "the exit dump" 10 test -n "$(q -c "SELECT 1 FROM heapprof_dumps() WHERE pid = $pid")" ||
	fail "no exit dump of $pid"
[ "$(kinds "$pid")" = "capture,exit dump,snapshot" ] || fail "stored of $pid: $(kinds "$pid")"
grep -q '^FILE .*/peaks/' <<<"$out" && fail "the peak holds the literal: $out"
[ -z "$(grep '^FILE' <<<"$out")$(files Sekret-4242)" ] ||
	fail "the literal is on disk: $(grep '^FILE' <<<"$out"; files Sekret-4242)"
qid=$(q -c "SELECT queryid FROM heapprof_captures() WHERE pid = $pid AND query IS NULL LIMIT 1")
[ -n "$qid" ] || fail "the capture lost its queryid: $(q -c "SELECT queryid, query FROM heapprof_captures() WHERE pid = $pid")"

settings on
out=$(session Sekret-4343 hp_lit2)
pid=$(q -c "SELECT pid FROM heapprof_snapshots() WHERE name = 'hp_lit2'")
wait_for "the exit dump" 10 test -n "$(q -c "SELECT 1 FROM heapprof_dumps() WHERE pid = $pid")" ||
	fail "no exit dump of $pid"
kept=$(files Sekret-4343 | sed 's|.*/heapprof/||; s|/.*||' | sort -u | tr '\n' ' ')
[ "$kept" = "captures dumps snapshots " ] || fail "opted in, the literal is in: $kept"
grep -q '^FILE .*/peaks/' <<<"$out" || fail "opted in, the peak lacks the literal: $out"
echo "literals: none on disk by default (peak, capture, persisted snapshot, exit dump; the capture keeps queryid $qid); with heapprof.store_statement_text in ${kept% } and the peak"
