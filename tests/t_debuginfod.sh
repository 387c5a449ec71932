#!/usr/bin/env bash
# t_debuginfod.sh -- symbolize where the debug info is: heapprof-report
# fetches, by the build-ids a backend's dump recorded, the debug file (and
# the executable, when the dump's path is missing) from a real local
# debuginfod (Debian package debuginfod).  A -g build of the test module is
# split into a debug file and a stripped copy; the server loads the stripped
# one.  With debuginfod serving the debug file, every line of --symbols and
# --text equals what the debug file gives locally (next to the module); with
# the server frozen or stopped, one clear message, the stripped run's honest
# labels, in bounded time.  A server that answers the build-id with another
# build's debug file (the same code, its leaf renamed) is refused: the report
# names none of that build's functions, says so, and the file is not in the
# cache for a later run with the server gone; so is its executable.
set -euo pipefail
. "${HP_TOP:=$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
cd "$HP_TOP"
command -v debuginfod >/dev/null || { echo "debuginfod is not installed (Debian: apt-get install debuginfod)"; exit 1; }
w=$(scratch)
dpid=
# debuginfod may not stop on SIGTERM after a client gave up on it: then KILL
stop_server() {
	kill -CONT "$dpid" 2>/dev/null || true
	kill "$dpid" 2>/dev/null || true
	wait_for "debuginfod to stop on SIGTERM" 2 exited "$dpid" 2>/dev/null || true
	kill -KILL "$dpid" 2>/dev/null || true
	wait "$dpid" 2>/dev/null || true
	dpid=
}
cleanup() {
	[ -z "$dpid" ] || stop_server
	psql -X -q -d postgres -c "DROP SCHEMA IF EXISTS hp_dbgd CASCADE" >/dev/null 2>&1 || true
}
at_exit cleanup
chmod 755 "$w"
mkdir "$w/lib" "$w/srv"
unset DEBUGINFOD_URLS

# The module, -g, with only what PostgreSQL calls in .dynsym; then split.
inc=$("${PG_CONFIG:-pg_config}" --includedir-server)
echo "{ global: Pg_magic_func; pg_finfo_*; heapprof_test_*; local: *; };" >"$w/exports"
gcc -g -O2 -fPIC -shared -Wl,--version-script="$w/exports" -isystem "$inc" \
	tests/alloc_helper/heapprof_test.c -o "$w/full.so"
objcopy --only-keep-debug "$w/full.so" "$w/srv/hpt.debug"
strip --strip-all -o "$w/lib/hpt.so" "$w/full.so"
objcopy --add-gnu-debuglink="$w/srv/hpt.debug" "$w/lib/hpt.so"
cp "$w/lib/hpt.so" "$w/srv/hpt.so"
id=$(readelf -n "$w/lib/hpt.so" | awk '/Build ID/ {print $3}')
[ -n "$id" ] || { echo "no build-id in the module"; exit 1; }

psql -X -q -At -d postgres -v ON_ERROR_STOP=1 >/dev/null <<SQL
CREATE EXTENSION IF NOT EXISTS heapprof;
DROP SCHEMA IF EXISTS hp_dbgd CASCADE;
CREATE SCHEMA hp_dbgd;
CREATE FUNCTION hp_dbgd.hold(bigint, integer) RETURNS bigint
	AS '$w/lib/hpt.so', 'heapprof_test_hold' LANGUAGE C STRICT;
SELECT heapprof_enable();
SELECT hp_dbgd.hold(4 * 1048576, 1048576);
\\o $w/raw.heap
SELECT heapprof_dump_portable();
SQL
grep -q "^%heapprof-build-id .* $id" "$w/raw.heap" || { echo "the dump recorded no build-id $id"; exit 1; }

report() {	# report NAME [ENV...]: --symbols and --text of the dump, timed
	local name=$1 s e
	shift
	s=$(date +%s%N)
	env "$@" ./heapprof-report --symbols "$w/raw.heap" >"$w/$name.sym" 2>"$w/$name.err"
	env "$@" ./heapprof-report --text "$w/raw.heap" >"$w/$name.txt" 2>>"$w/$name.err"
	e=$(date +%s%N)
	echo $(((e - s) / 1000000))
}
same() {	# same A B: identical reports, but for the evidence of how a file was found
	cmp -s <(grep -v "^# identity " "$w/$1.sym") <(grep -v "^# identity " "$w/$2.sym") &&
		cmp -s "$w/$1.txt" "$w/$2.txt" && return 0
	echo "$1 differs from $2:"
	diff <(grep -v "^# identity " "$w/$2.sym") <(grep -v "^# identity " "$w/$1.sym") | sed -n 1,20p || true
	diff "$w/$2.txt" "$w/$1.txt" | sed -n 1,20p || true
	return 1
}

report stripped >/dev/null
grep -q "hpt.so+0x" "$w/stripped.sym" || { echo "no honest label in the stripped module:"; grep hpt "$w/stripped.sym"; exit 1; }
cp "$w/srv/hpt.debug" "$w/lib/hpt.debug"
report local >/dev/null
rm "$w/lib/hpt.debug"
grep -q "hpt_leaf_alloc" "$w/local.sym" || { echo "the debug file named nothing:"; grep hpt "$w/local.sym"; exit 1; }
! grep -q "hpt.so+0x" "$w/local.sym" || { echo "labels left with the debug file:"; grep hpt "$w/local.sym"; exit 1; }

# A free port, then the server; ready once it serves the debug file.
for _ in 1 2 3 4 5 6 7 8 9 10; do
	port=$((20000 + RANDOM % 20000))
	(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || break
done
debuginfod -p "$port" -d "$w/db.sqlite" -F "$w/srv" -t 0 -g 0 >"$w/debuginfod.log" 2>&1 &
dpid=$!
url=http://127.0.0.1:$port
# a fresh cache per try: the client remembers a miss for 10 minutes
i=0
probe() {
	i=$((i + 1))
	! exited "$dpid" || { echo "debuginfod exited:"; cat "$w/debuginfod.log"; exit 1; }
	DEBUGINFOD_URLS=$url DEBUGINFOD_CACHE_PATH=$w/probe$i debuginfod-find debuginfo "$id" >/dev/null 2>&1
}
WAIT_STEP=0.2 wait_for "debuginfod to serve $id" 20 probe || { cat "$w/debuginfod.log"; exit 1; }

# the module on disk, its debug info fetched
ms=$(report remote DEBUGINFOD_URLS="$url" DEBUGINFOD_CACHE_PATH="$w/cache1")
same remote local
grep -q "found by build-id" "$w/remote.err" || { echo "no word of what was fetched:"; cat "$w/remote.err"; exit 1; }
# the dump's path gone (another machine): executable and debug info fetched
mv "$w/lib/hpt.so" "$w/hpt.so.away"
msx=$(report remote_exe DEBUGINFOD_URLS="$url" DEBUGINFOD_CACHE_PATH="$w/cache2")
same remote_exe local || exit 1
grep -q "^# identity .*/hpt.so: fetched by its recorded build-id" "$w/remote_exe.sym" ||
	{ echo "the fetched executable is not said to be fetched:"; grep "^# identity" "$w/remote_exe.sym"; exit 1; }
mv "$w/hpt.so.away" "$w/lib/hpt.so"
# pg_heapprof --client-symbols: a live backend's profile, named here
psql -X -q -At -d postgres -v ON_ERROR_STOP=1 -c "SELECT heapprof_enable()" -c "SELECT hp_dbgd.hold(4 * 1048576, 1048576)" \
	-c "SELECT pg_backend_pid()" -c "SELECT pg_sleep(60)" >"$w/bg.out" 2>&1 &
bg=$!
wait_for "the session's pid" 10 has_lines "$w/bg.out" 3
pid=$(sed -n 3p "$w/bg.out")
DEBUGINFOD_URLS=$url DEBUGINFOD_CACHE_PATH=$w/cache5 ./pg_heapprof -d postgres --client-symbols --report text \
	--pid "$pid" >"$w/client.txt" 2>"$w/client.err" || { echo "pg_heapprof --client-symbols failed:"; cat "$w/client.err"; exit 1; }
psql -X -q -At -d postgres -c "SELECT pg_terminate_backend($pid)" >/dev/null
wait "$bg" 2>/dev/null || true
grep -q "hpt_leaf_alloc" "$w/client.txt" && ! grep -q "hpt.so+0x" "$w/client.txt" ||
	{ echo "pg_heapprof --client-symbols did not name the module:"; cat "$w/client.txt" "$w/client.err"; exit 1; }

# A forged debug file: another build (its own build-id) of the same code, the
# leaf renamed, served at the genuine build-id -- debuginfod serves whatever
# is at the indexed path while its time is the indexed one.
gcc -g -O2 -fPIC -shared -Wl,--version-script="$w/exports" -Wl,--build-id=0x$(printf 'f%.0s' {1..40}) \
	-isystem "$inc" -Dhpt_leaf_alloc=FORGED_by_the_debuginfod tests/alloc_helper/heapprof_test.c -o "$w/forged.so"
objcopy --only-keep-debug "$w/forged.so" "$w/forged.debug"
cp -p "$w/srv/hpt.debug" "$w/genuine.debug"
cp "$w/forged.debug" "$w/srv/hpt.debug"
touch -r "$w/genuine.debug" "$w/srv/hpt.debug"
DEBUGINFOD_URLS=$url DEBUGINFOD_CACHE_PATH=$w/probe_forged debuginfod-find debuginfo "$id" >"$w/served" 2>&1 &&
	readelf -n "$(cat "$w/served")" >"$w/served.notes" && grep -q "Build ID: ffff" "$w/served.notes" ||
	{ echo "debuginfod does not serve the forged file:"; cat "$w/served"; exit 1; }
forged() {	# forged NAME: the report named nothing of the forged build, the cache kept nothing of it
	! grep -q "FORGED_by_the_debuginfod" "$w/$1.sym" "$w/$1.txt" ||
		{ echo "$1: the forged debug file named the code:"; grep -h "FORGED" "$w/$1.sym" "$w/$1.txt" | sed -n 1,5p; exit 1; }
	same "$1" stripped || exit 1
	# (libdebuginfod keeps an empty file as its note of what a server lacks)
	[ -z "$(find "$w/cache6" -type f -name debuginfo -size +0)" ] ||
		{ echo "$1: the forged debug file stayed in the cache:"; find "$w/cache6" -type f -size +0; exit 1; }
}
report forged DEBUGINFOD_URLS="$url" DEBUGINFOD_CACHE_PATH="$w/cache6" >/dev/null
forged forged
grep -q "debug file for hpt.so refused: build-id mismatch (from debuginfod)" "$w/forged.err" ||
	{ echo "the forged debug file is not said to be refused:"; cat "$w/forged.err"; exit 1; }
cp -p "$w/genuine.debug" "$w/srv/hpt.debug"
# ... and the forged build as the executable of a dump whose file is gone here
strip --strip-all -o "$w/srv/forged.so" "$w/forged.so"
cp -p "$w/srv/hpt.so" "$w/genuine.so"
mv "$w/srv/forged.so" "$w/srv/hpt.so"
touch -r "$w/genuine.so" "$w/srv/hpt.so"
mv "$w/lib/hpt.so" "$w/hpt.so.away"
report forged_exe DEBUGINFOD_URLS="$url" DEBUGINFOD_CACHE_PATH="$w/cache7" >/dev/null
mv "$w/hpt.so.away" "$w/lib/hpt.so"
cp -p "$w/genuine.so" "$w/srv/hpt.so"
! grep -q "FORGED_by_the_debuginfod" "$w/forged_exe.sym" "$w/forged_exe.txt" &&
	grep -q "executable for hpt.so refused: build-id mismatch (from debuginfod)" "$w/forged_exe.err" ||
	{ echo "the forged executable is not said to be refused:"; cat "$w/forged_exe.err"; exit 1; }
[ -z "$(find "$w/cache7" -type f -name executable -size +0)" ] ||
	{ echo "the forged executable stayed in the cache:"; find "$w/cache7" -type f -size +0; exit 1; }
# the cache answers without the server
kill -STOP "$dpid"
msc=$(report cached DEBUGINFOD_URLS="$url" DEBUGINFOD_CACHE_PATH="$w/cache1")
same cached local

# frozen server (accepts connections, never answers): one timeout, labels
msf=$(report frozen DEBUGINFOD_URLS="$url" DEBUGINFOD_CACHE_PATH="$w/cache3")
same frozen stripped
grep -q "debuginfod ($url) gave no .* asking it no more" "$w/frozen.err" ||
	{ echo "no clear message with the server frozen:"; cat "$w/frozen.err"; exit 1; }
[ "$msf" -lt 15000 ] || { echo "frozen server took $msf ms"; exit 1; }
stop_server
# stopped server: refused at once
msd=$(report down DEBUGINFOD_URLS="$url" DEBUGINFOD_CACHE_PATH="$w/cache4")
same down stripped
grep -q "debuginfod ($url) gave no .* asking it no more" "$w/down.err" ||
	{ echo "no clear message with the server down:"; cat "$w/down.err"; exit 1; }
[ "$msd" -lt 5000 ] || { echo "stopped server took $msd ms"; exit 1; }
head -n 1 "$w/down.err" | sed 's/^/  /'
# the forged file's cache, the server gone: nothing of it there
report forged_gone DEBUGINFOD_URLS="$url" DEBUGINFOD_CACHE_PATH="$w/cache6" >/dev/null
forged forged_gone

n=$(grep -c "hpt" "$w/local.sym")
echo "debuginfod: $n module frames named as by the local debug file (also by pg_heapprof --client-symbols); fetched in $ms ms (debug info), $msx ms (executable too), cached $msc ms; frozen server $msf ms, stopped $msd ms, stripped labels and one message; a forged debug file and executable refused, named nothing, not cached"
