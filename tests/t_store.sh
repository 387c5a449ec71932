#!/usr/bin/env bash
# t_store.sh -- the store under $PGDATA/heapprof cannot be raced, torn or
# orphaned (its own cluster: jemalloc, heapprof preloaded; it crashes it):
#  - a name is taken atomically: a plain role that holds the gap between
#    "does NAME exist?" and the write open (its own stopped backend, pid =>)
#    while a superuser persists NAME gets 42710, and the superuser's
#    snapshot is intact;
#  - kill -9 at the publication of each write path -- persisted snapshot,
#    exit dump, peak, statement capture -- then the crash restart: no draft
#    and no peak left, nothing that existed lost, the server serves;
#  - drafts of writers that are gone (and heapprof 1.0's NAME.heap.tmpPID)
#    are swept before a quota check; a running writer's draft counts
#    toward the quota;
#  - FIFOs and links planted at a backend's draft names block nothing;
#  - a capture larger than heapprof.max_capture_bytes is refused with a
#    WARNING and deletes no other capture;
#  - a requester that exits after its window's answer leaves no file in
#    base/pgsql_tmp;
#  - a full peaks folder (tmpfs): heapprof_peak() says why (53100), and the
#    peak is taken once there is room again;
#  - a drop held (gdb) while the name is dropped and persisted by another
#    role refuses, and the other role's snapshot stays;
#  - a FIFO and a hard link planted at a request's files in base/pgsql_tmp
#    are never opened for writing: errors, the checkpointer never hangs, the
#    linked file is intact;
#  - a symbolic link in place of the peaks folder is not swept through at a
#    crash restart; a folder out of inodes can still be emptied by a drop.
set -euo pipefail
cd "${HP_TOP:-$(dirname "$0")/..}"
. tests/lib.sh
P=${PORT:-55751}
w=$HP_SCRATCH/work
mkdir -p "$w"
bg=()
mounted=
finish() {
	for p in "${bg[@]}"; do kill "$p" 2>/dev/null || true; done
	[ -n "$mounted" ] && umount "$mounted" 2>/dev/null || true
}
at_exit finish
step() { echo "$(date +%T) $*"; }
start_cluster store "$P" "prof:true,prof_active:false,lg_prof_sample:0" \
	"shared_preload_libraries = 'heapprof'" "restart_after_crash = on" || fail "cluster did not start"
export $(cluster_env store "$P")
data=$HP_SCRATCH/store/data
q -c "CREATE EXTENSION heapprof" -c "CREATE EXTENSION heapprof_test" >/dev/null

# bg_nofds COMMAND... &: a background child must not hold the sessions' FIFOs
# open (fds 3-12), nor must the subshell that runs it: it execs the command.
bg_nofds() { exec "$@" 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- 10>&- 11>&- 12>&-; }
# session FD [PGUSER]: a psql session fed through fd FD; its backend's pid in $spid
session() {
	local fd=$1 user=${2:-postgres}
	rm -f "$w/in$fd" "$w/out$fd"
	mkfifo "$w/in$fd"
	PGUSER=$user bg_nofds psql -X -q -At -d postgres < "$w/in$fd" > "$w/out$fd" 2>&1 &
	bg+=($!)
	eval "exec $fd>\"\$w/in$fd\""
	echo "SELECT pg_backend_pid();" >&"$fd"
	wait_for "session $fd's pid" 10 test -s "$w/out$fd" || true
	spid=$(head -n1 "$w/out$fd")
	[ -n "$spid" ] || fail "session $fd did not start: $(cat "$w/out$fd")"
}
# lines FD N: wait until session FD has printed N lines
lines() { wait_for "session $1's line $2" 60 has_lines "$w/out$1" "$2" || fail "session $1: $(cat "$w/out$1")"; }
# kill_at PID FUNCTION...: gdb kills the process (SIGKILL) when it reaches one of them
kill_at() {
	local pid=$1 args=()
	shift
	for f; do args+=(-ex "break $f"); done
	bg_nofds gdb -p "$pid" -batch "${args[@]}" -ex continue -ex kill > "$w/gdb.$pid" 2>&1 &
	gdbpid=$!
	wait_for "gdb's breakpoint" 10 grep -q '^Breakpoint 1 at' "$w/gdb.$pid" || fail "gdb could not set a breakpoint: $(cat "$w/gdb.$pid")"
	sleep 0.5
}
# up: the server answers
up() { q -c "SELECT 1" >/dev/null 2>&1; }
# crashed PID WHAT: gdb killed it at a breakpoint; wait for the crash restart
crashed() {
	wait "$gdbpid" || true
	grep -q "^Breakpoint [0-9.]*, " "$w/gdb.$1" || fail "$2: the breakpoint was never reached: $(cat "$w/gdb.$1")"
	wait_for "the server to come back" 60 up || fail "$2: the server did not come back"
	grep -q "terminated by signal 9" "$HP_SCRATCH/store/server.log" || fail "$2: no crash in the log"
}
# no_drafts WHAT: no draft in any folder of the store, no peak of a process gone
no_drafts() {
	local left
	left=$(cd "$data/heapprof" && find . \( -path './peaks/*' -o -regextype posix-extended \
		-regex '.*/(tmp\.[0-9]+\.[0-9]+|.*\.heap\.tmp[0-9]+)' \) -print | sort)
	[ -z "$left" ] || fail "$1: left behind: $left"
}
# kept WHAT: the snapshot persisted first is still there, whole
kept() {
	[ "$(q -c "SELECT owner, total_bytes > 0 FROM heapprof_snapshots() WHERE name = 'hp_keep'")" = "postgres|t" ] ||
		fail "$1: the snapshot hp_keep was lost: $(q -c "SELECT * FROM heapprof_snapshots()")"
}

q -c "SELECT heapprof_enable()" -c "SELECT heapprof_test_hold(3000000)" \
	-c "SELECT heapprof_snapshot('hp_keep', persist => true) > 0" >/dev/null

# -- 1. a name is taken atomically
step "1. a name is taken atomically"
q -c "CREATE ROLE hp_alice LOGIN" \
	-c "GRANT EXECUTE ON FUNCTION heapprof_snapshot(text, boolean, integer), heapprof_snapshots() TO hp_alice" >/dev/null
session 3 hp_alice
target=$spid
kill -STOP "$target"
bg+=("$target")
PGUSER=hp_alice PGOPTIONS="-c heapprof.request_timeout=60s" bg_nofds psql -X -q -At -d postgres -v VERBOSITY=verbose \
	-c "SELECT heapprof_snapshot('hp_race', persist => true, pid => $target)" > "$w/race.out" 2>&1 &
racer=$!
wait_for "hp_alice's request" 10 eval '[ "$(q -c "SELECT count(*) FROM heapprof_requests() WHERE target = $target")" = 1 ]' ||
	fail "the plain role's request is not waiting"
q -c "SELECT heapprof_enable()" -c "SELECT heapprof_test_hold(5000000)" \
	-c "SELECT heapprof_snapshot('hp_race', persist => true) > 0" >/dev/null
kill -CONT "$target"
wait "$racer" && fail "the plain role's snapshot of a taken name succeeded: $(cat "$w/race.out")"
grep -q "ERROR:  42710: heap profile \"hp_race\" already exists" "$w/race.out" || fail "race: $(cat "$w/race.out")"
[ "$(q -c "SELECT owner, total_bytes > 4000000 FROM heapprof_snapshots() WHERE name = 'hp_race'")" = "postgres|t" ] ||
	fail "the superuser's snapshot was replaced: $(q -c "SELECT * FROM heapprof_snapshots() WHERE name = 'hp_race'")"
no_drafts "race"
exec 3>&-

# -- 2. kill -9 at each publication, then the crash restart
step "2. kill -9 at each publication, then the crash restart"
# a persisted snapshot
step "a persisted snapshot"
session 4
pid=$spid
kill_at "$pid" renameat2 rename link
echo "SELECT heapprof_snapshot('hp_crash', persist => true);" >&4
crashed "$pid" "snapshot"
exec 4>&-
no_drafts "snapshot"; kept "snapshot"
[ "$(q -c "SELECT count(*) FROM heapprof_snapshots() WHERE name = 'hp_crash'")" = 0 ] || fail "half a snapshot is listed"
# an exit dump
step "an exit dump"
session 5
pid=$spid
echo "SET heapprof.dump_on_exit_threshold = '1MB'; SELECT heapprof_enable(); SELECT heapprof_test_hold(3000000);" >&5
lines 5 3
kill_at "$pid" renameat2 rename link
exec 5>&-
crashed "$pid" "exit dump"
no_drafts "exit dump"; kept "exit dump"
# a peak (published by replacing the last one)
step "a peak (published by replacing the last one)"
session 6
pid=$spid
echo "SELECT heapprof_enable();" >&6
lines 6 2
kill_at "$pid" rename renameat2
echo "SELECT heapprof_test_hold(50000000);" >&6
crashed "$pid" "peak"
exec 6>&-
no_drafts "peak"; kept "peak"
# a statement capture
step "a statement capture"
session 7
pid=$spid
echo "SET heapprof.capture_min_growth = '1MB'; SELECT heapprof_enable();" >&7
lines 7 2
kill_at "$pid" renameat2 rename link
echo "SELECT heapprof_test_leak(3000000);" >&7
crashed "$pid" "capture"
exec 7>&-
no_drafts "capture"; kept "capture"
crashes=4

# -- 3. drafts of writers that are gone are swept before a quota check; a running one's counts
step "3. drafts of writers that are gone are swept before a quota check; a running one's counts"
dead=4000000
while kill -0 "$dead" 2>/dev/null; do dead=$((dead + 1)); done
as_pg truncate -s 1M "$data/heapprof/snapshots/tmp.$dead.0" "$data/heapprof/snapshots/old.heap.tmp$dead"
# profiles whose names look like drafts are profiles all the same
q -c "SELECT heapprof_snapshot('tmp.$dead', persist => true) >= 0" \
	-c "SELECT heapprof_snapshot('a.heap.tmp$dead', persist => true) >= 0" >/dev/null
q -c "CREATE ROLE hp_bob LOGIN" \
	-c "GRANT EXECUTE ON FUNCTION heapprof_enable(integer), heapprof_snapshot(text, boolean, integer) TO hp_bob" \
	-c "ALTER ROLE hp_bob SET heapprof.max_snapshot_bytes = '20MB'" >/dev/null
PGUSER=hp_bob q -c "SELECT heapprof_enable()" -c "SELECT heapprof_snapshot('hp_bob1', persist => true) > 0" >/dev/null
[ ! -e "$data/heapprof/snapshots/tmp.$dead.0" ] && [ ! -e "$data/heapprof/snapshots/old.heap.tmp$dead" ] ||
	fail "drafts of a writer that is gone were not swept: $(ls "$data/heapprof/snapshots")"
[ "$(q -c "SELECT count(*) FROM heapprof_snapshots() WHERE name IN ('tmp.$dead', 'a.heap.tmp$dead')")" = 2 ] ||
	fail "snapshots named like drafts were swept: $(ls "$data/heapprof/snapshots")"
postmaster=$(head -n1 "$data/postmaster.pid")
as_pg truncate -s 30M "$data/heapprof/snapshots/tmp.$postmaster.0"
out=$(PGUSER=hp_bob q -v VERBOSITY=verbose -c "SELECT heapprof_snapshot('hp_bob2', persist => true)" 2>&1) &&
	fail "a running writer's draft was not counted toward the quota"
grep -q "ERROR:  53400: too many heap profile snapshots" <<<"$out" || fail "quota with a running draft: $out"
[ -e "$data/heapprof/snapshots/tmp.$postmaster.0" ] || fail "a running writer's draft was removed"
rm -f "$data/heapprof/snapshots/tmp.$postmaster.0"
no_drafts "quota"

# -- 4. FIFOs and a link at a backend's draft names
step "4. FIFOs and a link at a backend's draft names"
session 8
pid=$spid
for i in 0 1 2; do as_pg mkfifo "$data/heapprof/snapshots/tmp.$pid.$i"; done
as_pg ln -s /etc/passwd "$data/heapprof/snapshots/tmp.$pid.3"
echo "SELECT heapprof_snapshot('hp_planted', persist => true) >= 0;" >&8
lines 8 2
[ "$(sed -n 2p "$w/out8")" = t ] || fail "with planted FIFOs: $(cat "$w/out8")"
[ -p "$data/heapprof/snapshots/tmp.$pid.0" ] && [ -L "$data/heapprof/snapshots/tmp.$pid.3" ] &&
	[ "$(stat -c %s /etc/passwd)" -gt 0 ] || fail "a planted file was followed or replaced"
rm -f "$data/heapprof/snapshots/tmp.$pid".*
exec 8>&-

# -- 5. a capture too big to keep costs no other capture
step "5. a capture too big to keep costs no other capture"
QOPTS="-c heapprof.capture_min_growth=1MB" q -c "SELECT heapprof_enable()" -c "SELECT heapprof_test_leak(3000000)" >/dev/null
before=$(q -c "SELECT string_agg(name, ',' ORDER BY name) FROM heapprof_captures()")
[ -n "$before" ] || fail "no capture to keep"
out=$(QOPTS="-c heapprof.capture_min_growth=1MB -c heapprof.max_capture_bytes=1kB" \
	q -v VERBOSITY=verbose -c "SELECT heapprof_enable()" -c "SELECT heapprof_test_leak(3000000)" 2>&1)
grep -q "WARNING:  53400: heapprof did not keep the statement's capture: its [0-9]* bytes exceed heapprof.max_capture_bytes (1 kB)" <<<"$out" ||
	fail "an oversized capture: $out"
[ "$(q -c "SELECT string_agg(name, ',' ORDER BY name) FROM heapprof_captures()")" = "$before" ] ||
	fail "an oversized capture removed others: before $before, after $(q -c "SELECT string_agg(name, ',') FROM heapprof_captures()")"

# -- 6. a requester gone after its window's answer leaves no file
step "6. a requester gone after its window's answer leaves no file"
session 9
target=$spid
echo "SELECT heapprof_enable();" >&9
lines 9 2
session 10
requester=$spid
bg_nofds gdb -p "$requester" -batch -ex 'break hpg_dump_path' -ex continue -ex 'break SendProcSignal' -ex continue \
	-ex finish -ex 'shell sleep 1' -ex 'call (void) proc_exit(0)' > "$w/gdb.window" 2>&1 &
gdbpid=$!
wait_for "gdb's breakpoint" 10 grep -q '^Breakpoint 1 at' "$w/gdb.window" || fail "window: gdb: $(cat "$w/gdb.window")"
sleep 0.5
echo "SELECT count(*) FROM heapprof_allocations(0.2, pid => $target);" >&10
wait "$gdbpid" || true
grep -q "^Breakpoint 2, " "$w/gdb.window" || fail "window: gdb did not stop the requester: $(cat "$w/gdb.window")"
wait_for "requester $requester to exit" 5 exited "$requester" || true
left=$(q -c "SELECT count(*) FROM pg_ls_dir('base/pgsql_tmp', true, false) f WHERE f LIKE 'pgsql_tmp$requester.heapprof%'")
[ "$left" = 0 ] || fail "the window's files of requester $requester were left in base/pgsql_tmp: $left"
exec 9>&- 10>&-

# -- 7. a full peaks folder
step "7. a full peaks folder"
if [ "$(id -u)" -eq 0 ]; then
	as_pg mkdir -p "$data/heapprof/peaks"
	mount -t tmpfs -o size=4k,mode=0700,uid="$(id -u "$HP_OSUSER")",gid="$(id -g "$HP_OSUSER")" tmpfs "$data/heapprof/peaks"
	mounted=$data/heapprof/peaks
	session 11
	pid=$spid
	echo "SELECT heapprof_enable(); SELECT heapprof_test_hold(20000000);" >&11
	lines 11 3
	out=$(q -v VERBOSITY=verbose -c "SELECT * FROM heapprof_peak(pid => $pid)" 2>&1) && fail "a peak on a full disk: $out"
	grep -q "ERROR:  53100: process $pid could not write its peak profile: No space left on device" <<<"$out" ||
		fail "the peak on a full disk: $out"
	[ -z "$(ls -A "$data/heapprof/peaks")" ] || fail "a full disk left $(ls -A "$data/heapprof/peaks")"
	umount "$mounted"
	mounted=
	sleep 1.1	# a failed peak is tried again at most once a second
	echo "SELECT heapprof_test_hold(20000000);" >&11
	lines 11 4
	[ "$(q -c "SELECT count(*) > 0 FROM heapprof_peak(pid => $pid)")" = t ] || fail "no peak once there was room"
	exec 11>&-
	full="a full peaks folder reported (53100) and retried"
else
	full="full-disk case skipped (needs root for tmpfs)"
fi

# -- 8. a drop removes the file it checked, never one stored under the name meanwhile
step "8. drop against persist under the same name"
q -c "GRANT EXECUTE ON FUNCTION heapprof_drop_snapshot(text), heapprof_snapshots() TO hp_bob" >/dev/null
PGUSER=hp_bob q -c "SELECT heapprof_snapshot('hp_x', persist => true) >= 0" >/dev/null
session 12 hp_bob
s1=$spid
rm -f "$w/go"
bg_nofds gdb -p "$s1" -batch -ex 'break renameat2' -ex continue \
	-ex "shell touch $w/held; while [ ! -e $w/go ]; do sleep 0.1; done" -ex continue > "$w/gdb.drop" 2>&1 &
gdbpid=$!
wait_for "gdb's breakpoint" 10 grep -q '^Breakpoint 1 at' "$w/gdb.drop" || fail "drop: gdb: $(cat "$w/gdb.drop")"
sleep 0.5
echo "SELECT heapprof_drop_snapshot('hp_x');" >&12
wait_for "gdb to hold the first drop" 10 test -e "$w/held" || fail "drop: gdb did not hold the first drop: $(cat "$w/gdb.drop")"
PGUSER=hp_bob q -c "SELECT heapprof_drop_snapshot('hp_x')" >/dev/null
PGUSER=hp_alice q -c "SELECT heapprof_snapshot('hp_x', persist => true) >= 0" >/dev/null
touch "$w/go"
wait "$gdbpid" || true
lines 12 2
grep -q "ERROR:  heap profile \"hp_x\" was replaced while it was being dropped" "$w/out12" ||
	fail "a drop held across another drop and a persist: $(cat "$w/out12")"
[ "$(q -c "SELECT owner FROM heapprof_snapshots() WHERE name = 'hp_x'")" = hp_alice ] ||
	fail "the other role's snapshot was dropped: $(q -c "SELECT * FROM heapprof_snapshots()")"
exec 12>&-
no_drafts "drop"

# -- 9. files planted in base/pgsql_tmp: never written through, never blocking
step "9. a FIFO and a hard link planted at a request's files"
session 13
pid=$spid
ckpt=$(q -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'")
as_pg mkfifo "$data/base/pgsql_tmp/pgsql_tmp$pid.heapprof.remote.0.ids"
as_pg sh -c "echo precious > '$data/hp_victim'"
# the session's dumps are numbered in order: remote.0, then self.1
as_pg ln "$data/hp_victim" "$data/base/pgsql_tmp/pgsql_tmp$pid.heapprof.self.1"
echo "SET heapprof.request_timeout = '5s'; SELECT heapprof_enable(); SELECT count(*) FROM heapprof_top(pid => $ckpt); SELECT count(*) FROM heapprof_top(); SELECT 'done';" >&13
wait_for "session 13's done" 30 grep -q '^done$' "$w/out13" || fail "planted files: the session did not finish: $(cat "$w/out13")"
grep -q "ERROR" "$w/out13" || fail "planted files were used: $(cat "$w/out13")"
[ "$(cat "$data/hp_victim")" = precious ] || fail "a hard link planted in base/pgsql_tmp was written through"
timeout 20 psql -X -q -d postgres -c "CHECKPOINT" || fail "the checkpointer hangs on a FIFO planted at a request's file"
rm -f "$data/hp_victim" "$data/base/pgsql_tmp/pgsql_tmp$pid".heapprof.*
exec 13>&-

# -- 10. a symbolic link in place of a folder is never swept through
step "10. a symlinked peaks folder at a crash restart"
mkdir -p "$w/elsewhere"
echo keep > "$w/elsewhere/123.heap"
chown -R "$HP_OSUSER" "$w/elsewhere"
mv "$data/heapprof/peaks" "$data/heapprof/peaks.real"
ln -s "$w/elsewhere" "$data/heapprof/peaks"
session 14
kill -9 "$spid"
exec 14>&-
sleep 1
wait_for "the server to come back" 60 up || fail "symlinked peaks folder: the server did not come back"
[ -e "$w/elsewhere/123.heap" ] || fail "the crash restart swept through a symlinked peaks folder"
rm "$data/heapprof/peaks"
mv "$data/heapprof/peaks.real" "$data/heapprof/peaks"
crashes=$((crashes + 1))

# -- 11. a folder out of inodes can still be emptied
if [ "$(id -u)" -eq 0 ]; then
	step "11. drop in a snapshots folder out of inodes"
	mount -t tmpfs -o size=64m,nr_inodes=4,mode=0700,uid="$(id -u "$HP_OSUSER")",gid="$(id -g "$HP_OSUSER")" tmpfs "$data/heapprof/snapshots"
	mounted=$data/heapprof/snapshots
	for i in 1 2 3 4 5; do q -c "SELECT heapprof_snapshot('hp_i$i', persist => true)" >/dev/null 2>&1 || break; done
	out=$(q -c "SELECT heapprof_snapshot('hp_full', persist => true)" 2>&1) && fail "a persist into a folder out of inodes: $out"
	q -c "SELECT heapprof_drop_snapshot('hp_i1')" >/dev/null || fail "a drop in a folder out of inodes failed"
	umount "$mounted"
	mounted=
fi

echo "store: names taken atomically (42710 in the race); $crashes kill -9 mid-publication left nothing and lost nothing; stale drafts swept, live ones counted; planted FIFOs and links ignored; oversized capture refused alone; window files removed at requester exit; $full; drop vs persist refused; planted FIFO, hard link and symlinked folder never used"
