#!/usr/bin/env bash
# t_encodings.sh -- a backend of a LATIN1 or SQL_ASCII database that ran a
# statement with a non-ASCII literal is read from the UTF8 postgres
# database (cluster (a)): heapprof_dump_portable(pid) is valid text (its
# label lines are ASCII), pg_heapprof --client-symbols renders it, and the
# statement's text reaches heapprof_query_bytes(pid => N) as valid UTF8.
set -euo pipefail
cd "${HP_TOP:-$(dirname "$0")/..}"
. tests/lib.sh
QOPTS="-c heapprof.dump_on_exit_threshold=-1"
create_ext heapprof heapprof_test
w=$(scratch)
bg=
stop() { [ -z "$bg" ] || kill "$bg" 2>/dev/null || true; }
at_exit stop
cleanup() {
	q -c "DROP DATABASE IF EXISTS hp_latin1 WITH (FORCE)" -c "DROP DATABASE IF EXISTS hp_ascii WITH (FORCE)" >/dev/null 2>&1 || true
}
at_exit cleanup
cleanup
q -c "CREATE DATABASE hp_latin1 ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0" \
	-c "CREATE DATABASE hp_ascii ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0" >/dev/null
for db in hp_latin1 hp_ascii; do
	DB=$db create_ext heapprof heapprof_test
	# a session in $db: a statement with 'é' (sent as UTF8, stored in $db's encoding) leaks, then waits
	PGCLIENTENCODING=UTF8 DB=$db q -c "SET compute_query_id = on" -c "SELECT heapprof_enable()" \
		-c "SELECT heapprof_test_leak(2000000 + length('café é $db'))" -c "SELECT pg_sleep(60)" >/dev/null 2>&1 &
	bg=$!
	pid=$(wait_query "the $db session" 10 "SELECT pid FROM pg_stat_activity WHERE datname = '$db' AND query = 'SELECT pg_sleep(60)'")
	q -c "SELECT heapprof_dump_portable(pid => $pid)" >"$w/$db.portable" ||
		fail "heapprof_dump_portable of a $db backend"
	grep -q 'heapprof-label-query .*caf\\xe9\|heapprof-label-query .*caf\\xc3\\xa9' "$w/$db.portable" ||
		fail "$db: the statement's label lines: $(grep label-query "$w/$db.portable")"
	LC_ALL=C grep -q '[^[:print:][:space:]]' <(grep '^%heapprof-label' "$w/$db.portable") &&
		fail "$db: label lines are not ASCII"
	./pg_heapprof -d postgres --client-symbols --report top --pid "$pid" -o "$w/$db.top" ||
		fail "pg_heapprof --client-symbols on a $db backend"
	grep -q hpt_leak_top "$w/$db.top" || fail "$db: --client-symbols top: $(head -5 "$w/$db.top")"
	out=$(q -c "SELECT query FROM heapprof_query_bytes(pid => $pid) WHERE query LIKE '%heapprof_test_leak%'") ||
		fail "$db: heapprof_query_bytes(pid => $pid)"
	[ -n "$out" ] || fail "$db: no statement text: $(q -c "SELECT * FROM heapprof_query_bytes(pid => $pid)")"
	# LATIN1's 'é' converted; SQL_ASCII's bytes (UTF8 sent by the client) shown where they are valid
	want="café é $db"
	grep -qF "length('$want')" <<<"$out" || fail "$db: the statement's text: $out"
	echo "$db: $out"
	kill "$bg" 2>/dev/null || true
	q -c "SELECT pg_terminate_backend($pid)" >/dev/null
	bg=
done
echo "encodings: LATIN1 and SQL_ASCII backends read from UTF8: dump_portable, --client-symbols, statement text"
