#!/usr/bin/env bash
# t_package.sh -- heapprof installed as a DBA installs it on Debian 12:
#  - make deb builds postgresql-15-heapprof from the tree's tracked files;
#  - it ships README, docs/ and the man pages of pg_heapprof and
#    heapprof-report; apt-get installs it; both are on PATH and on man's;
#  - on a cluster made by pg_createcluster, heapprof_status()'s hint is
#    pasted where it points: its environment lines appended verbatim to
#    /etc/postgresql/15/NAME/environment, its SQL run, its restart command
#    run; the cluster comes up with profiling usable and pid => working;
#  - the same after prof:false was appended (later lines win in that file);
#  - a workload in a session profiled with heapprof_enable() shows in
#    heapprof_top, its raw dump reads in heapprof-report;
#  - tests/demo with the package installed uses it: dpkg -V stays clean.
# Runs only as root with PG_CONFIG naming Debian's PostgreSQL 15, since it
# installs a package into that server.  The caller holds /tmp/pg15.lock.
# The cluster is dropped and the package purged on every path, and the files
# the package replaced (a make install from the tree) are put back.
set -uo pipefail
cd "$HP_TOP"
# the packaged cluster, not the suite's
unset PGHOST PGPORT PGUSER PGDATABASE

[ "$(id -u)" -eq 0 ] || { echo "skipped: needs root (apt-get, pg_createcluster)"; exit 0; }
[ "$("${PG_CONFIG:-pg_config}" --bindir 2>/dev/null)" = /usr/lib/postgresql/15/bin ] ||
	{ echo "skipped: PG_CONFIG is not Debian's PostgreSQL 15"; exit 0; }
pkg=postgresql-15-heapprof
# HP_FROM_PACKAGE: tests/run installed the package for the whole suite; use it
preinstalled=${HP_FROM_PACKAGE:+1}
if [ -z "$preinstalled" ] && dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep 'ok installed' >/dev/null; then
	echo "$pkg is installed already; this test installs and purges it, remove it first"
	exit 1
fi

start=$SECONDS
name=hpt$$
port=55491
work=$(mktemp -d /tmp/heapprof-pkg.XXXXXX)
chmod 755 "$work"
mkdir "$work/pg" && chown postgres "$work/pg"
installed=
cleanup() {
	pg_dropcluster --stop 15 "$name" >/dev/null 2>&1
	if [ -n "$installed" ]; then
		apt-get purge -y -qq -o DPkg::Lock::Timeout=120 "$pkg" >/dev/null 2>&1 ||
			echo "cleanup: apt-get purge $pkg failed" >&2
		# what make install had put there before, each file renamed into
		# place: running servers may have the library mapped
		[ -d "$work/saved" ] && (cd "$work/saved" && find . -type f) | while read -r f; do
			f=${f#.}
			cp -a "$work/saved$f" "$f.hp-new" && mv -f "$f.hp-new" "$f"
		done
	fi
	rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "$*"; exit 1; }

build=0
if [ -z "$preinstalled" ]; then
	build=$SECONDS
	make -s deb DEB_OUT="$work/debs" DEB_BUILD="$work/build" >"$work/build.log" 2>&1 || { tail -n 30 "$work/build.log"; fail "make deb failed"; }
	build=$((SECONDS - build))
	deb=$(ls "$work"/debs/${pkg}_*.deb 2>/dev/null | sed -n 1p)
	[ -n "$deb" ] || fail "make deb made no $pkg package: $(ls "$work/debs")"
	# the documentation: README, every page of docs/ and its picture, both man pages, the examples
	contents=$(dpkg-deb -c "$deb" | awk '{print $NF}')
	for f in README.md $(cd docs && ls) ; do
		[ "$f" = README.md ] && d=/usr/share/doc/$pkg/$f || d=/usr/share/doc/$pkg/docs/$f
		grep -qx ".$d" <<<"$contents" || fail "$pkg lacks $d"
	done
	for m in pg_heapprof heapprof-report; do
		grep -qx "./usr/share/postgresql/15/man/man1/$m.1.gz" <<<"$contents" || fail "$pkg lacks the man page of $m"
	done
	# the exporter's queries file and the alerting rule, as docs/history.md names them
	for f in heapprof-queries.yaml heapprof-alerts.yaml; do
		grep -qx "./usr/share/doc/$pkg/examples/$f" <<<"$contents" || fail "$pkg lacks examples/$f"
	done

	# keep the files the package will replace
	while read -r f; do
		f=${f#.}
		[ -f "$f" ] && { mkdir -p "$work/saved$(dirname "$f")"; cp -a "$f" "$work/saved$f"; }
	done < <(dpkg-deb --fsys-tarfile "$deb" | tar -t | grep -v '/$')
	installed=1
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=120 --no-install-recommends "$deb" \
		>"$work/apt.log" 2>&1 || { cat "$work/apt.log"; fail "apt-get install $deb failed"; }
fi
# their man pages on man's path
for m in pg_heapprof heapprof-report; do
	[ -e "/usr/share/man/man1/$m.1.gz" ] && zcat "/usr/share/man/man1/$m.1.gz" | grep "^\.TH ${m^^} 1" >/dev/null ||
		fail "man $m: /usr/share/man/man1/$m.1.gz is not its page"
done
# on the PATH of a login shell, not only in the server's bindir
for c in pg_heapprof heapprof-report; do
	p=$(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin command -v $c)
	[ "$(readlink -f "$p")" = /usr/lib/postgresql/15/bin/$c ] ||
		fail "$c is not on PATH as the package's: ${p:-missing}"
done

pg_createcluster 15 "$name" -p "$port" >"$work/create.log" 2>&1 || { cat "$work/create.log"; fail "pg_createcluster failed"; }
pg_ctlcluster 15 "$name" start || fail "pg_ctlcluster 15 $name start failed"
q() { runuser -u postgres -- psql -X -q -At -p "$port" -v ON_ERROR_STOP=1 "$@"; }
q -c 'CREATE EXTENSION heapprof' || fail "CREATE EXTENSION heapprof failed"

# paste_hint EXPECTED-STATE: apply heapprof_status()'s hint as a DBA pastes it
paste_hint() {
	local hint envf
	hint=$(q -c 'SELECT hint FROM heapprof_status()') || fail "heapprof_status() failed"
	printf '%s\n' "$hint" >"$work/hint.txt"
	[ -n "$hint" ] || fail "no hint on a cluster where profiling is not usable ($1)"
	grep -q "$1" <<<"$hint" || fail "hint does not say $1: $hint"
	envf=$(sed -n 's/^Append to \(.*\):$/\1/p' <<<"$hint")
	[ "$envf" = "/etc/postgresql/15/$name/environment" ] || fail "hint names no environment file of this cluster: $hint"
	# the lines between "Append to" and "Then restart", verbatim
	awk '/^Then restart/ {p = 0} p; /^Append to / {p = 1}' <<<"$hint" >>"$envf"
	# the SQL line, when the hint has one
	awk 'p {print; exit} /run as a superuser:$/ {p = 1}' <<<"$hint" >"$work/hint.sql"
	[ -s "$work/hint.sql" ] && { q -f "$work/hint.sql" >/dev/null || fail "the hint's SQL failed: $(cat "$work/hint.sql")"; }
	# the restart command, run as pasted
	cmd=$(awk 'p {print; exit} /^Then restart the cluster:$/ {p = 1}' <<<"$hint")
	[ "$cmd" = "pg_ctlcluster 15 $name restart" ] || fail "hint's restart command is not this cluster's: $cmd"
	bash -c "$cmd" || fail "$cmd failed after pasting the hint; environment file: $(cat "$envf")"
	# usable: nothing left in the hint (debug info is names_hint's)
	[ "$(q -c "SELECT prof_enabled, hint IS NULL FROM heapprof_status()")" = 't|t' ] ||
		fail "not usable after pasting the hint: $(q -c 'SELECT * FROM heapprof_status()')"
}

# a fresh cluster: no jemalloc, heapprof not preloaded
out=$(q -c "SELECT heapprof_enable()" 2>&1) && fail "heapprof_enable() succeeded without jemalloc"
grep -q "jemalloc is not loaded" <<<"$out" || fail "heapprof_enable() without jemalloc: $out"
paste_hint 'ALTER SYSTEM SET shared_preload_libraries'
# README shows this hint for the cluster 15 main
awk '/^On a cluster that is not set up yet/ {f = 1} f && /^```$/ {if (p) exit; p = 1; next} p' README.md |
	sed "s|15 main|15 $name|; s|/15/main/|/15/$name/|" | diff - "$work/hint.txt" >"$work/readme.diff" ||
	fail "README's example hint differs from the hint: $(cat "$work/readme.diff")"
# pid =>: the checkpointer, through the preloaded library
ckpt="(SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer')"
[ "$(q -c "SELECT prof_enabled, coalesce(hint, '') NOT LIKE '%Append to %' FROM heapprof_status(pid => $ckpt)")" = 't|t' ] ||
	fail "heapprof_status(pid => checkpointer) after the hint: $(q -c "SELECT * FROM heapprof_status(pid => $ckpt)" 2>&1)"
[ "$(q -c 'SELECT count(*) FROM heapprof_backends()')" -gt 0 ] 2>/dev/null || fail "heapprof_backends() lists nothing"

# a workload in one profiled session: 8 MB of local buffers stay allocated
out=$(q -c 'SELECT heapprof_enable()' \
	-c "CREATE TEMP TABLE t AS SELECT g, repeat('x', 100) AS s FROM generate_series(1, 100000) g" \
	-c 'SELECT count(*) FROM heapprof_top(20)' \
	-c "\\o $work/pg/backend.heap" -c 'SELECT heapprof_dump_raw()' 2>&1) || fail "workload failed: $out"
rows=$(sed -n 2p <<<"$out")
[ "${rows:-0}" -gt 0 ] 2>/dev/null || fail "heapprof_top returned no rows after a workload: $out"
heapprof-report --text "$work/pg/backend.heap" >"$work/report.txt" 2>&1 && grep -q '^Total:' "$work/report.txt" ||
	fail "heapprof-report on the session's dump: $(head -n 5 "$work/report.txt")"
ckpt_pid=$(q -c "SELECT $ckpt")
runuser -u postgres -- pg_heapprof -p "$port" --report top --pid "$ckpt_pid" >"$work/ckpt.txt" 2>&1 ||
	fail "pg_heapprof --report top --pid checkpointer: $(cat "$work/ckpt.txt")"

# profiling switched off by a later line: the hint for that state, pasted
echo "MALLOC_CONF = 'prof:false'" >>"/etc/postgresql/15/$name/environment"
pg_ctlcluster 15 "$name" restart || fail "restart with prof:false failed"
out=$(q -c 'SELECT heapprof_enable()' 2>&1)
grep -q 'not enabled when the server started' <<<"$out" ||
	fail "prof:false appended last did not switch profiling off: $out"
paste_hint 'MALLOC_CONF needs prof:true'
grep -q 'shared_preload_libraries' "$work/hint.txt" && fail "hint names shared_preload_libraries although heapprof is preloaded"

# tests/demo with the package installed uses it: every file of the package as shipped
(unset PG_CONFIG PGHOST PGPORT PGUSER PGDATABASE; HP_DEMO_PORT=55492 tests/demo "$work/demo") >"$work/demo.log" 2>&1 ||
	fail "tests/demo with the package installed: $(tail -n 20 "$work/demo.log")"
grep -q "using the installed package $pkg" "$work/demo.log" || fail "tests/demo did not say it uses the package: $(head -n 5 "$work/demo.log")"
dpkg -V "$pkg" >"$work/verify.txt" 2>&1
[ ! -s "$work/verify.txt" ] || fail "tests/demo changed the package's files: $(cat "$work/verify.txt")"

made=$([ -n "$preinstalled" ] && echo "the package tests/run installed" || echo "package built in ${build}s; installed")
echo "$made, hint pasted on a pg_createcluster cluster (no jemalloc, then prof:false), $rows heapprof_top rows, pg_heapprof and heapprof-report on PATH, tests/demo left dpkg -V clean; $((SECONDS - start))s"
