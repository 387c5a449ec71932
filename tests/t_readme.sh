#!/usr/bin/env bash
# t_readme.sh -- README's examples run as written (cluster (a)), the way
# PostgreSQL's docs are checked:
#  - every ```sql block, in README's order, in one fresh session of a fresh
#    database, without an error, and no query in them gives zero rows;
#  - every ```sh block that talks to the server (psql -At) in a scratch
#    directory, each file it writes non-empty (go tool pprof reads the
#    pprof file, Graphviz the dot file); the statement captures they make
#    are removed afterwards.
# The examples' other process is a session named myapp that keeps
# allocating, and the grants go to roles app_debugger and trusted_debugger.
set -euo pipefail
cd "$HP_TOP"
db=hp_readme
w=$(mktemp -d)
chmod 755 "$w"
q() { psql -X -q -At -d postgres -v ON_ERROR_STOP=1 "$@"; }
cleanup() {
	[ -n "${APP_PID:-}" ] && kill "$APP_PID" 2>/dev/null || true
	q -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '$db'" >/dev/null 2>&1 || true
	[ -n "${data:-}" ] && rm -f "$data"/heapprof/captures/*.heap || true
	q -c "DROP DATABASE IF EXISTS $db" -c "DROP OWNED BY app_debugger, trusted_debugger" \
		-c "DROP ROLE IF EXISTS app_debugger" -c "DROP ROLE IF EXISTS trusted_debugger" >/dev/null 2>&1 || true
	rm -rf "$w"
}
trap cleanup EXIT
data=$(q -c "SHOW data_directory")
q -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" -c "DROP ROLE IF EXISTS app_debugger" \
	-c "DROP ROLE IF EXISTS trusted_debugger" -c "CREATE ROLE app_debugger LOGIN" -c "CREATE ROLE trusted_debugger LOGIN" >/dev/null

awk -v dir="$w" '/^```sql$/ { p = 1; n++; next } /^```$/ { p = 0 } p { print > (dir "/all.sql") }
	/^```sh$/ { s = 1; m++; f = sprintf("%s/sh%02d", dir, m); next } s && /^```$/ { s = 0 } s { print > f }' README.md
[ -s "$w/all.sql" ] || { echo "no sql blocks in README.md"; exit 1; }

# myapp: allocates 64 kB every 20 ms for 40 s, and holds it
psql -X -q -d "$db" -c "CREATE EXTENSION heapprof_test" -c "SET application_name = 'myapp'" \
	-c "SELECT count(heapprof_test_hold(65536)) FROM (SELECT pg_sleep(0.02) FROM generate_series(1, 2000)) s" \
	>/dev/null 2>&1 &
APP_PID=$!
for _ in $(seq 100); do
	[ -n "$(q -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'myapp'")" ] && break
	sleep 0.1
done

out=$(psql -X -d "$db" -v ON_ERROR_STOP=1 -f "$w/all.sql" 2>&1) || { echo "README's SQL failed:"; tail -n 20 <<<"$out"; exit 1; }
if grep -q '^(0 rows)$' <<<"$out"; then
	echo "a query of README gives no rows:"
	grep -B 12 '^(0 rows)$' <<<"$out" | head -40
	exit 1
fi
nsql=$(grep -c '^([0-9]* rows\?)$' <<<"$out")

nsh=0
files=0
pprof_out=
for f in "$w"/sh*; do
	grep -q 'psql -At' "$f" || continue
	nsh=$((nsh + 1))
	grep -q 'go tool pprof' "$f" && pprof_out=$w/sh$nsh.out
	mkdir -p "$w/run$nsh"
	(cd "$w/run$nsh" && PGDATABASE=$db HOME=$w GOCACHE=$w/go bash -euo pipefail "$f") >"$w/sh$nsh.out" 2>&1 ||
		{ echo "README's shell example failed:"; cat "$f"; tail -n 20 "$w/sh$nsh.out"; exit 1; }
	for g in "$w/run$nsh"/*; do
		[ -s "$g" ] || { echo "README's shell example wrote an empty $(basename "$g")"; cat "$f"; exit 1; }
		files=$((files + 1))
	done
done
[ "$nsh" -gt 0 ] || { echo "no shell example of README talks to the server"; exit 1; }
[ -n "$pprof_out" ] && grep -q 'flat%' "$pprof_out" || { echo "go tool pprof -top printed no table"; cat "$pprof_out"; exit 1; }
echo "README: $nsql SQL results in one session, none empty; $nsh shell examples wrote $files files"
