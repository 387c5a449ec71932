#!/usr/bin/env bash
# t_readme.sh -- the examples of README.md and of every page of docs/ run as
# written (cluster (a)), the way PostgreSQL's docs are checked:
#  - page by page (README first, then docs/*.md by name), first every ```sh
#    block, then each ```sql block alone, in a new session of its own (as a
#    reader pastes one), of one database where the extension exists: without
#    an error, no query in it gives zero rows, and no report in it says its
#    profile is empty;
#  - every ```sh block runs in a scratch directory of its own, with the built
#    pg_heapprof and heapprof-report and the server's bindir first in PATH;
#    each file it writes is non-empty (go tool pprof reads the pprof file,
#    Graphviz the dot file); the statement captures they make are removed
#    afterwards.
# A block that cannot run here (installing packages, restarting a packaged
# cluster, other machines, the suite itself) is preceded by a line
#   <!-- not run: WHY -->
# and is only counted.  Plain ``` blocks are output, never run.
# The examples' other process is a session named myapp that keeps
# allocating, sampled, in a heap history kept every second; the grants go
# to roles app_debugger and trusted_debugger.
set -euo pipefail
. "${HP_TOP:=$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
cd "$HP_TOP"

# the install blocks are not run here (t_package builds and installs): the
# package file they name is the one make deb makes of this tree
deb="postgresql-15-heapprof_$(dpkg-parsechangelog -l debian/changelog -SVersion)_$(dpkg --print-architecture).deb"
for page in README.md docs/setup.md; do
	grep -q "debs/$deb" "$page" || { echo "$page does not name debs/$deb"; exit 1; }
done
db=hp_readme
w=$(scratch)
chmod 755 "$w"
roles="app_debugger trusted_debugger"
cleanup() {
	[ -n "${APP_PID:-}" ] && kill "$APP_PID" 2>/dev/null || true
	q -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '$db'" >/dev/null 2>&1 || true
	[ -n "${data:-}" ] && rm -f "$data"/heapprof/captures/*.heap || true
	q -c "ALTER SYSTEM RESET heapprof.history_interval" -c "SELECT pg_reload_conf()" >/dev/null 2>&1 || true
	[ -n "${data:-}" ] && rm -f "$data"/heapprof/history/*.heap || true
	q -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
	for r in $roles; do
		q -c "DROP OWNED BY $r" -c "DROP ROLE IF EXISTS $r" >/dev/null 2>&1 || true
	done
}
at_exit cleanup
data=$(q -c "SHOW data_directory")
bindir=$("${PG_CONFIG:-pg_config}" --bindir)
q -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
for r in $roles; do
	q -c "DROP ROLE IF EXISTS $r" -c "CREATE ROLE $r LOGIN" >/dev/null
done

pages=(README.md docs/*.md)
# split PAGE: its sql blocks into $w/N.sql, its sh blocks into $w/N.shMM
# (MM in order), blocks marked "not run" into $w/N.skipMM
n=0
for p in "${pages[@]}"; do
	n=$((n + 1))
	awk -v dir="$w" -v n="$n" '
		/^<!-- not run: .+ -->$/ { skip = 1; next }
		/^$/ { if (!b) next }
		!b && /^```(sql|sh)$/ { b = substr($0, 4); m++; f = sprintf("%s/%d.%s%02d", dir, n, skip ? "skip" : b, m);
			skip = 0; printf "" > f; next }
		!b && /^```/ { skip = 0; o = 1; b = "out"; next }
		b && /^```$/ { b = ""; next }
		b == "sql" || b == "sh" { print > f; next }
		b { next }
		{ skip = 0 }' "$p"
	echo "$p" >"$w/$n.name"
done
ls "$w"/*.sql?? >/dev/null 2>&1 || { echo "no sql blocks in README.md or docs/"; exit 1; }

# myapp: allocates 64 kB every 20 ms for 40 s per round, and holds it
psql -X -q -d "$db" -c "CREATE EXTENSION heapprof_test" -c "SET application_name = 'myapp'" \
	-c "SELECT count(heapprof_test_hold(65536)) FROM (SELECT pg_sleep(0.02) FROM generate_series(1, 6000)) s" \
	>/dev/null 2>&1 &
APP_PID=$!
app=$(wait_query "myapp" 10 "SELECT pid FROM pg_stat_activity WHERE application_name = 'myapp'")
# the heap history's examples read a history in which myapp grows
DB=$db q -c "CREATE EXTENSION IF NOT EXISTS heapprof" -c "ALTER SYSTEM SET heapprof.history_interval = '1s'" \
	-c "SELECT pg_reload_conf()" \
	-c "SELECT heapprof_enable(pid => $app)" >/dev/null
DB=$db wait_query "myapp's growth in the history" 30 "SELECT 1 FROM heapprof_growth() LIMIT 1" >/dev/null

nsql=0
nblocks=0
nsh=0
files=0
skipped=0
pprof_out=
summary=
for ((i = 1; i <= n; i++)); do
	page=$(cat "$w/$i.name")
	psql_blocks=$(ls "$w/$i".sql?? 2>/dev/null || true)
	sh_blocks=$(ls "$w/$i".sh?? 2>/dev/null || true)
	k=$( (ls "$w/$i".skip?? 2>/dev/null || true) | wc -l)
	skipped=$((skipped + k))
	ss=0
	for f in $sh_blocks; do
		nsh=$((nsh + 1))
		ss=$((ss + 1))
		grep -q 'go tool pprof' "$f" && pprof_out=$w/sh$nsh.out
		mkdir -p "$w/run$nsh"
		(cd "$w/run$nsh" && PATH="$HP_TOP:$bindir:$PATH" PGDATABASE=$db HOME=$w GOCACHE=$w/go \
			bash -euo pipefail "$f") >"$w/sh$nsh.out" 2>&1 ||
			{ echo "$page: shell example failed:"; cat "$f"; tail -n 20 "$w/sh$nsh.out"; exit 1; }
		for g in "$w/run$nsh"/*; do
			[ -e "$g" ] || continue
			[ -s "$g" ] || { echo "$page: shell example wrote an empty $(basename "$g")"; cat "$f"; exit 1; }
			files=$((files + 1))
		done
	done
	ps=0
	sb=0
	for f in $psql_blocks; do
		sb=$((sb + 1))
		nblocks=$((nblocks + 1))
		out=$(cd "$w" && psql -X -d "$db" -v ON_ERROR_STOP=1 -f "$f" 2>&1) ||
			{ echo "$page: SQL block $sb failed alone in a new session:"; cat "$f"; echo "--"; tail -n 20 <<<"$out"; exit 1; }
		if grep -q '^(0 rows)$' <<<"$out"; then
			echo "$page: SQL block $sb, alone in a new session: a query gives no rows:"
			cat "$f"; echo "--"
			grep -B 12 '^(0 rows)$' <<<"$out" | sed -n 1,40p
			exit 1
		fi
		if grep -q 'heap profile.* is empty\|Nothing changed' <<<"$out"; then
			echo "$page: SQL block $sb, alone in a new session: a report of an empty profile:"
			cat "$f"; echo "--"; grep -B 3 -A 3 'is empty\|Nothing changed' <<<"$out"
			exit 1
		fi
		ps=$((ps + $(grep -c '^([0-9]* rows\?)$' <<<"$out" || true)))
	done
	nsql=$((nsql + ps))
	summary+="$page: $ps SQL results in $sb blocks, $ss shell blocks, $k not run"$'\n'
done
printf '%s' "$summary"
[ "$nsh" -gt 0 ] || { echo "no shell example runs"; exit 1; }
if [ -n "$pprof_out" ]; then
	grep -q 'flat%' "$pprof_out" || { echo "go tool pprof -top printed no table"; cat "$pprof_out"; exit 1; }
fi
echo "README and docs: $nblocks SQL blocks, each alone in a new session, $nsql results, none empty; $nsh shell examples wrote $files files; $skipped blocks marked not run"
