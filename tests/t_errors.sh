#!/usr/bin/env bash
# t_errors.sh -- errors that say what happened (cluster (a), run as root):
#  - a full disk: a small full tmpfs over base/pgsql_tmp makes the report of
#    this backend, of another backend (pid =>) and a window of another
#    backend (heapprof_allocations, jemalloc's records) fail with 53100 and
#    "No space left on device" (jemalloc's prof.dump says only EFAULT), leave
#    no file behind, and leave the server and the target serving; the same
#    over $PGDATA/heapprof for a persisted snapshot;
#  - a NOTICE on an empty report names its cause: the filter's kept stacks
#    that sum to zero against a base, a window that recorded nothing;
#  - heapprof_requests() names every operation (window start, window fetch);
#  - a report cancelled mid-analysis still counts the symbol cache's growth:
#    with heapprof.symbol_cache_limit = 0 nothing stays cached after it
#    (gdb raises the cancel inside the engine right after symbolizing).
set -uo pipefail
. "${HP_TOP:=$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
w=$(scratch)
pids=()
mounts=()
cleanup() {
	[ -n "${stopped:-}" ] && kill -CONT "$stopped" 2>/dev/null
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for m in "${mounts[@]}"; do umount "$m" 2>/dev/null; done
}
at_exit cleanup
fail=0
bad() { echo "FAIL: $*"; fail=1; }
# a session that enables sampling, holds memory and sleeps
target() {
	psql -X -q -At -d postgres -c "SET application_name = '$1'" -c "SELECT heapprof_enable()" \
		-c "SELECT heapprof_test_hold(1000000)" -c "SELECT pg_sleep(120)" >/dev/null 2>&1 &
	pids+=($!)
	session_pid "$1"
}
# full DIR: a tmpfs the postgres user owns, filled to the last byte
full() {
	mkdir -p "$1" && chown postgres: "$1" && chmod 700 "$1"
	mount -t tmpfs -o "size=64k,uid=$(id -u postgres),gid=$(id -g postgres),mode=0700" hp_full "$1" || return 1
	mounts+=("$1")
	dd if=/dev/zero of="$1/fill" bs=4k >/dev/null 2>&1
	[ "$(df --output=avail "$1" | tail -1 | tr -d ' ')" = 0 ] || { echo "$1 is not full"; return 1; }
}
# expect_full WHAT SQL...: 53100, the cause and a hint
expect_full() {
	local what=$1 out
	shift
	if out=$(q -v VERBOSITY=verbose "$@" 2>&1); then
		bad "$what succeeded on a full disk"
		return
	fi
	case $out in
		*"ERROR:  53100: "*"No space left on device"*"HINT:  "*[Ff]"ree space"*) ;;
		*) bad "$what: expected 53100, No space left on device and a hint, got: $out" ;;
	esac
}
# left DIR: files other than the filler
left() { find "$1" -mindepth 1 ! -name fill ! -type d; }

create_ext heapprof heapprof_test
data=$(q -c "SHOW data_directory")

# -- a full base/pgsql_tmp
tgt=$(target hp_err_target) || exit 1
full "$data/base/pgsql_tmp" || exit 1
expect_full "this backend's report" -c "SELECT heapprof_enable()" -c "SELECT count(*) FROM heapprof_top()"
expect_full "another backend's report" -c "SELECT count(*) FROM heapprof_top(pid => $tgt)"
expect_full "another backend's window" -c "SELECT count(*) FROM heapprof_allocations(seconds => 0.2, pid => $tgt)"
[ -z "$(left "$data/base/pgsql_tmp")" ] || bad "files left in base/pgsql_tmp: $(left "$data/base/pgsql_tmp")"
umount "$data/base/pgsql_tmp" && mounts=()
[ "$(q -c "SELECT count(*) > 0 FROM heapprof_top(pid => $tgt)")" = t ] ||
	bad "the target does not answer after the full disk"
[ "$(q -c "SELECT 1")" = 1 ] || bad "the server does not serve after the full disk"

# -- a full $PGDATA/heapprof
full "$data/heapprof" || exit 1
expect_full "a persisted snapshot" -c "SELECT heapprof_snapshot('hp_err_full', persist => true)"
[ -z "$(left "$data/heapprof")" ] || bad "files left in heapprof: $(left "$data/heapprof")"
umount "$data/heapprof" && mounts=()
[ "$(q -c "SELECT count(*) FROM heapprof_snapshots() WHERE name = 'hp_err_full'")" = 0 ] ||
	bad "a snapshot that could not be written is listed"

# -- NOTICEs name their cause
out=$(q -c "SELECT heapprof_enable()" -c "SELECT heapprof_test_hold(100000)" -c "SELECT heapprof_snapshot('hp_err_base')" \
	-c "SELECT count(*) FROM heapprof_top(base => 'hp_err_base', focus => 'hpt_leaf_alloc')" 2>&1)
case $out in
	*"NOTICE:  the stacks focus / ignore kept sum to zero"*"HINT:  Nothing changed in them between the base"*) ;;
	*) bad "focus against a base: expected the kept stacks to sum to zero, got: $out" ;;
esac
# a window on a process that never sampled records nothing (an idle one that
# samples still allocates to answer, and with a focus that is the focus NOTICE)
psql -X -q -At -d postgres -c "SET application_name = 'hp_err_unsampled'" -c "SELECT pg_sleep(120)" >/dev/null 2>&1 &
pids+=($!)
unsampled=$(session_pid hp_err_unsampled) || exit 1
out=$(q -c "SELECT count(*) FROM heapprof_allocations(seconds => 0.2, pid => $unsampled)" 2>&1)
case $out in
	*"NOTICE:  process $unsampled made no sampled allocation during the window"*) ;;
	*) bad "an idle window: expected no allocation during the window, got: $out" ;;
esac

# -- heapprof_requests() names a window request
stopped=$tgt
kill -STOP "$stopped"
q -c "SET heapprof.request_timeout = '30s'" -c "SELECT count(*) FROM heapprof_allocations(seconds => 0.1, pid => $tgt)" \
	>/dev/null 2>&1 &
rec=$!
op=$(wait_query "the window request" 5 "SELECT string_agg(operation, ',') FROM heapprof_requests() WHERE target = $tgt")
[ "$op" = "window start" ] || bad "heapprof_requests() names a window request '$op'"
kill -CONT "$stopped"
stopped=
wait "$rec"

# -- a report cancelled mid-analysis: gdb needs heapprof's own symbols to
#    read the symbolizer; a stripped build (the Debian package, whose symbols
#    are in its -dbgsym) is checked by the runs on make install's builds
so=$(pg_config --pkglibdir)/heapprof.so
if ! readelf -S "$so" 2>/dev/null | grep '\.debug_info' >/dev/null; then
	[ "$fail" -ne 0 ] ||
		echo "errors: full base/pgsql_tmp and \$PGDATA/heapprof give 53100 with nothing left (own, pid =>, window, snapshot); NOTICEs name their cause; window ops named (cancelled report's symbol cache: not checked, $so is stripped)"
	exit $fail
fi

# -- a report cancelled mid-analysis, after symbolizing (gdb, at hp_build_graph,
#    sets the cancel flags and makes the engine's next unit of work poll
#    them), keeps no symbolizer above a limit of 0: gdb
#    reads analysis.c's pointer while the session sleeps after the cancel
#    (the bytes it held were never counted, so nothing in SQL can see it)
psql -X -q -At -d postgres -c "SET application_name = 'hp_err_cancel'" -c "SET heapprof.symbol_cache_limit = 0" \
	-c "SELECT heapprof_enable()" -c "SELECT pg_sleep(3)" -c "SELECT count(*) FROM heapprof_top()" \
	-c "SELECT pg_sleep(5)" >"$w/cancel.out" 2>&1 &
session=$!
pids+=($session)
cpid=$(session_pid hp_err_cancel) || exit 1
gdb -p "$cpid" -batch -ex 'break hp_build_graph' -ex 'continue' \
	-ex 'set var *(int *) &QueryCancelPending = 1' -ex 'set var *(int *) &InterruptPending = 1' -ex 'set var a->env->work = 65535' -ex 'detach' >"$w/gdb.log" 2>&1
wait_for "the cancel" 5 grep -q "canceling statement" "$w/cancel.out"
kept=$(gdb -p "$cpid" -batch -ex "print 'analysis.c'::symbolizer == 0" 2>/dev/null | sed -n 's/^\$1 = //p')
wait "$session"
grep -q "canceling statement due to user request" "$w/cancel.out" ||
	bad "the report was not cancelled: $(cat "$w/cancel.out") $(tail -5 "$w/gdb.log")"
[ "$kept" = 1 ] || bad "a report cancelled after symbolizing kept its symbolizer above a limit of 0 (symbolizer == 0: '$kept')"
[ "$fail" -ne 0 ] ||
	echo "errors: full base/pgsql_tmp and \$PGDATA/heapprof give 53100 with nothing left (own, pid =>, window, snapshot); NOTICEs name their cause; window ops named; a cancelled report drops its symbol cache"
exit $fail
