#!/usr/bin/env bash
# t_bounded.sh -- work bounded by input, interruptible by work done (cluster (a)):
#  - a stored profile whose MAPPED_LIBRARIES has 120,000 distinct files (one
#    stack of one frame) is read by heapprof_top within statement_timeout,
#    and a backend reading it ends within 1 s of pg_terminate_backend (it
#    took ~100 s, deaf to both: filter_maps and libdwfl were quadratic in
#    files, and polled no interrupt);
#  - the largest the limit admits, stacks in 1,024 of those files, too;
#    1,025 files is refused with 54000;
#  - heapprof-report reads each within a few seconds, or refuses;
#  - an object of 200,000 functions (src/engine/tests/gen_funcs.sh) whose
#    every function is in a stack, and the same object named in 1,024
#    spellings (./, //, a symlink) with a frame in each: the spellings are
#    read within 5 s, named alike (each was indexed on its own: 1,024 times
#    the work, ~50 s and GBs), and both end within 1 s of
#    pg_terminate_backend;
#  - focus and ignore patterns over those 200,000 frames, one of them a
#    pathological regular expression: within statement_timeout, and gone
#    within 1 s of pg_terminate_backend.
set -euo pipefail
. "${HP_TOP:=$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
cd "$HP_TOP"
w=$(scratch)
at_exit '[ -n "${snaps:-}" ] && as_pg rm -f "$snaps"/hp_bounded_*.heap'
data=$(q -c "SHOW data_directory")
snaps=$data/heapprof/snapshots
create_ext heapprof
as_pg mkdir -p -m 700 "$data/heapprof" "$snaps"

# maps of n distinct files; the one stack has a frame in each of the first used
gen() {
	awk -v n="$1" -v used="$2" 'BEGIN {
		printf "heap_v2/524288\n  t*: 1: 100 [0: 0]\n@"
		for (i = 0; i < used; i++) printf " 0x%x", 4194304 + 4096 * i + 16
		printf "\n  t*: 1: 100 [0: 0]\n\nMAPPED_LIBRARIES:\n"
		for (i = 0; i < n; i++)
			printf "%x-%x r-xp 00000000 08:01 %d                   /nonexistent/heapprof/bounded/lib%d.so\n",
				4194304 + 4096 * i, 4194304 + 4096 * (i + 1), i + 1, i }' >"$w/$3.heap"
	chmod 600 "$w/$3.heap"
	as_pg sh -c 'umask 077 && cat >"$0"' "$snaps/hp_bounded_$3.heap" <"$w/$3.heap"
}
gen 120000 1 maps
gen 120000 1024 modules
gen 120000 1025 over
ms() { echo $(( $(date +%s%N) / 1000000 )); }

# bounded NAME ARGS: heapprof_top(stored => 'hp_bounded_NAME', ARGS) under
# statement_timeout = 2s finishes or is cancelled within 3 s (took), and a
# backend running it ends within 1 s of pg_terminate_backend (gone)
bounded() {
	local name=$1 args=${2:+, $2} out start job tstart
	start=$(ms)
	out=$(q -c "SET statement_timeout = '2s'" \
		-c "SELECT count(*) FROM heapprof_top(stored => 'hp_bounded_$name'$args)" 2>&1) ||
		grep -q "canceling statement due to statement timeout" <<<"$out" ||
		{ echo "$name: $out"; exit 1; }
	took=$(( $(ms) - start ))
	[ "$took" -lt 3000 ] || { echo "$name: heapprof_top took $took ms under statement_timeout = 2s"; exit 1; }

	# terminated while it reads (or done by then): gone within 1 s
	q -c "SELECT count(*) FROM heapprof_top(stored => 'hp_bounded_$name'$args)" >/dev/null 2>&1 &
	job=$!
	sleep 0.3
	q -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
	      WHERE query LIKE '%hp_bounded_$name%' AND pid <> pg_backend_pid()" >/dev/null
	tstart=$(ms)
	WAIT_STEP=0.05 wait_for "$name: the terminated backend to end" 1 exited "$job" ||
		{ kill "$job"; echo "$name: backend alive 1 s after pg_terminate_backend"; exit 1; }
	wait "$job" || true
	gone=$(( $(ms) - tstart ))
	[ "$(q -c "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%hp_bounded_$name%' AND pid <> pg_backend_pid()")" = 0 ] ||
		{ echo "$name: a backend still reads it"; exit 1; }
}

summary=
for name in maps modules; do
	bounded "$name"

	# offline
	rstart=$(ms)
	timeout 10 ./heapprof-report --text "$w/$name.heap" >"$w/out" ||
		{ echo "$name: heapprof-report failed or ran past 10 s"; exit 1; }
	rtook=$(( $(ms) - rstart ))
	[ "$rtook" -lt 5000 ] || { echo "$name: heapprof-report took $rtook ms"; exit 1; }
	grep -q "lib0.so" "$w/out" || { echo "$name: no frame in lib0.so"; cat "$w/out"; exit 1; }
	summary="$summary $name: top ${took} ms, gone ${gone} ms after terminate, report ${rtook} ms;"
done

# one file more than the limit: refused, in the backend and offline
out=$(q -v VERBOSITY=verbose -c "SELECT count(*) FROM heapprof_top(stored => 'hp_bounded_over')" 2>&1) &&
	{ echo "1025 files: accepted"; exit 1; }
grep -q "ERROR:  54000:.*more than 1024 mapped files" <<<"$out" || { echo "1025 files: $out"; exit 1; }
if timeout 10 ./heapprof-report --text "$w/over.heap" >/dev/null 2>"$w/err"; then
	echo "heapprof-report accepted 1025 files"; exit 1
fi
grep -q "more than 1024 mapped files" "$w/err" || { echo "heapprof-report: $(cat "$w/err")"; exit 1; }

# a hostile object, readable by the server
chmod 755 "$w"
sh src/engine/tests/gen_funcs.sh 200000 "$w"
ln -s libhpfuncs.so "$w/link.so"
as_pg sh -c 'umask 077 && cat >"$0"' "$snaps/hp_bounded_object.heap" <"$w/funcs.heap"
# the object in 1,024 spellings, a frame of its first stack in each
awk -v dir="$w" '
	/^@/ && !pc { pc = substr($2, 7) }
	/^MAPPED_LIBRARIES:/ { maps = 1; next }
	maps { end = substr($1, index($1, "-") + 5) }
	END {
		printf "heap_v2/524288\n  t*: 1: 100 [0: 0]\n@"
		for (k = 0; k < 1024; k++) printf " 0x7%03x%s", k, pc
		printf "\n  t*: 1: 100 [0: 0]\n\nMAPPED_LIBRARIES:\n"
		for (k = 0; k < 1024; k++) {
			p = dir
			for (j = 0; j < k % 32; j++) p = p "/."
			for (j = 0; j < int(k / 64); j++) p = p "/"
			printf "7%03x00000000-7%03x%s r-xp 00000000 08:01 %d %s\n", k, k,
				end, k + 1, p (int(k / 32) % 2 ? "/link.so" : "/libhpfuncs.so")
		} }' "$w/funcs.heap" >"$w/spellings.heap"
as_pg sh -c 'umask 077 && cat >"$0"' "$snaps/hp_bounded_spellings.heap" <"$w/spellings.heap"

# read whole, named alike in every spelling
start=$(ms)
names=$(q -c "SET statement_timeout = '5s'" \
	-c "SELECT count(*), count(DISTINCT function) FROM heapprof_top(n => 2000, fold => false, stored => 'hp_bounded_spellings')" 2>&1) ||
	{ echo "spellings: $names"; exit 1; }
spelled=$(( $(ms) - start ))
grep -qx "1|1" <<<"$names" || { echo "spellings: $names functions"; exit 1; }
rstart=$(ms)
timeout 10 ./heapprof-report --text "$w/spellings.heap" >"$w/out" ||
	{ echo "spellings: heapprof-report failed or ran past 10 s"; exit 1; }
rtook=$(( $(ms) - rstart ))
[ "$rtook" -lt 5000 ] || { echo "spellings: heapprof-report took $rtook ms"; exit 1; }
grep -q "hp_fn_" "$w/out" || { echo "spellings: no function named"; cat "$w/out"; exit 1; }
summary="$summary 1024 spellings: top ${spelled} ms, report ${rtook} ms;"
for name in spellings object; do
	bounded "$name"
	summary="$summary $name: ${took} ms, gone ${gone} ms;"
done

# focus over 200,000 distinct frames; a pathological pattern (nested
# quantifiers and back references) is cancelled and terminated as well
for pat in '^hp_fn_1.*7$' '^(([a-z_0-9]+)+)+\2\2\2x'; do
	bounded object "focus => '$pat', ignore => '$pat' || '0'"
	summary="$summary focus $pat: ${took} ms, gone ${gone} ms;"
done

echo "bounded: 120000 maps lines;$summary 1025 files refused (54000)"
