#!/usr/bin/env bash
# t_hostile.sh -- hostile roles and hostile files (cluster (a)):
#  - an operator planted in public does not run when a superuser creates
#    the extension;
#  - persisted and session snapshots stop at heapprof.max_snapshots /
#    max_snapshot_bytes with 53400, nothing half-written; superusers go on;
#    a session snapshot is judged whole, its identity lines included: one
#    that is taken never leaves the session over max_snapshot_bytes;
#  - a FIFO, a directory, a symlink and a huge sparse file among the stored
#    profiles are skipped with a WARNING, never hang or fail the listing, and
#    are refused by stored =>;
#  - a snapshot cannot take an exit dump's name; a name in both is refused;
#  - an exit dump belongs to the login role, not to SET SESSION AUTHORIZATION;
#  - heapprof_drop_snapshot(NULL) is 22023;
#  - one heapprof_grant() line per workflow lets a role run pg_heapprof's
#    actions and formats (processes, trusted) and snapshots and exit dumps in
#    SQL (leaks, history); heapprof_revoke() takes them back;
#  - pg_heapprof --setup prints the hint as heapprof_status() has it (nothing
#    on a server that is ready) and refuses process options.
set -euo pipefail
. "${HP_TOP:=$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
# sessions of the superuser leave no exit dumps of their own
QOPTS="-c heapprof.dump_on_exit_threshold=-1"
cleanup() {
	q -c "SELECT count(*) FROM heapprof_revoke('hp_dbg')" >/dev/null 2>&1 || true
	q -c "SELECT count(*) FROM heapprof_revoke('hp_bob')" >/dev/null 2>&1 || true
	q -c "DROP OWNED BY hp_dbg" -c "DROP ROLE hp_dbg" >/dev/null 2>&1 || true
	q -c "DROP DATABASE IF EXISTS hp_planted" -c "DROP ROLE IF EXISTS hp_dbowner" \
	  -c "DROP ROLE IF EXISTS hp_bob" -c "ALTER SYSTEM RESET heapprof.dump_on_exit_threshold" \
	  -c "SELECT pg_reload_conf()" >/dev/null 2>&1 || true
	[ -n "${data:-}" ] && as_pg rm -rf "$data/heapprof/snapshots/hp_fifo.heap" "$data/heapprof/snapshots/hp_dir.heap" \
		"$data/heapprof/snapshots/hp_link.heap" "$data/heapprof/snapshots/hp_huge.heap" \
		"$data/heapprof/snapshots/hp_empty.heap" "$data/heapprof/snapshots/hp_deep1000000.heap" \
		"$data/heapprof/snapshots/hp_deep65536.heap" 2>/dev/null || true
}
at_exit 'cleanup; rm -f "$w"'
w=$(mktemp)
data=$(q -c "SHOW data_directory")
q -c "CREATE EXTENSION IF NOT EXISTS heapprof" -c "SELECT heapprof_enable()" >/dev/null

# -- a planted operator: the database owner may create in public (PG 15)
q -c "CREATE ROLE hp_dbowner LOGIN" -c "CREATE DATABASE hp_planted OWNER hp_dbowner" >/dev/null
DB=hp_planted q -c "GRANT CREATE ON SCHEMA public TO hp_dbowner" >/dev/null
DB=hp_planted PGUSER=hp_dbowner q >/dev/null <<'SQL'
CREATE FUNCTION public.planted(a oid, b regclass) RETURNS boolean LANGUAGE plpgsql AS
  $$ BEGIN EXECUTE 'ALTER ROLE hp_dbowner SUPERUSER'; RETURN a OPERATOR(pg_catalog.=) b::oid; END $$;
CREATE OPERATOR public.= (LEFTARG = oid, RIGHTARG = regclass, FUNCTION = public.planted);
CREATE FUNCTION public.planted_text(a text, b text) RETURNS boolean LANGUAGE plpgsql AS
  $$ BEGIN EXECUTE 'ALTER ROLE hp_dbowner SUPERUSER'; RETURN a OPERATOR(pg_catalog.=) b; END $$;
CREATE OPERATOR public.= (LEFTARG = text, RIGHTARG = text, FUNCTION = public.planted_text);
SQL
DB=hp_planted q -c "CREATE EXTENSION heapprof" -c "SELECT heapprof_top(1)" >/dev/null
[ "$(q -c "SELECT rolsuper FROM pg_roles WHERE rolname = 'hp_dbowner'")" = f ] ||
	{ echo "a planted operator ran as superuser during CREATE EXTENSION"; exit 1; }
# ... nor when a superuser runs pg_heapprof there: the database owner puts
# the extension's schema after public and plants a look-alike in public
DB=hp_planted q -c "DROP EXTENSION heapprof" -c "CREATE SCHEMA hp" -c "CREATE EXTENSION heapprof SCHEMA hp" >/dev/null
DB=hp_planted PGUSER=hp_dbowner q >/dev/null <<'SQL'
ALTER DATABASE hp_planted SET search_path = public, hp;
CREATE FUNCTION public.heapprof_backends()
  RETURNS TABLE(pid integer, backend_type text, usename text, application_name text, state text,
                active boolean, allocated_bytes bigint) LANGUAGE plpgsql AS
  $$ BEGIN EXECUTE 'ALTER ROLE hp_dbowner SUPERUSER'; RETURN; END $$;
SQL
"$HP_TOP/pg_heapprof" -d hp_planted --list | grep "client backend" >/dev/null || { echo "pg_heapprof --list failed"; exit 1; }
[ "$(q -c "SELECT rolsuper FROM pg_roles WHERE rolname = 'hp_dbowner'")" = f ] ||
	{ echo "a planted operator ran as superuser under pg_heapprof"; exit 1; }

# -- snapshot limits
q -c "CREATE ROLE hp_bob LOGIN" >/dev/null
q -c "SELECT count(*) FROM heapprof_grant('hp_bob', 'leaks')" >/dev/null
bob() { q_as hp_bob "$@"; }
before=$(q -c "SELECT count(*) FROM pg_ls_dir('heapprof/snapshots', true, false) f WHERE f LIKE 'hp_lim%'")
# superusers are not limited
q -c "SET heapprof.max_snapshots = 1" -c "SELECT heapprof_snapshot('hp_lim1', false)" \
	-c "SELECT heapprof_snapshot('hp_lim2', false)" -c "SELECT heapprof_snapshot('hp_lim3', false)" >/dev/null
# a plain role, limits set by the superuser for it (and all of them its share)
q -c "ALTER ROLE hp_bob SET heapprof.max_snapshots = 2" -c "ALTER ROLE hp_bob SET heapprof.role_share = 100" -c "ALTER ROLE hp_bob SET heapprof.max_snapshot_bytes = '1MB'" >/dev/null
out=$(PGUSER=hp_bob psql -X -q -At -d postgres -v VERBOSITY=verbose -c "SELECT heapprof_enable()" \
	-c "SELECT heapprof_snapshot('hp_lim1', false) > 0" -c "SELECT heapprof_snapshot('hp_lim2', false) > 0" \
	-c "SELECT heapprof_snapshot('hp_lim3', false)" 2>&1) && { echo "third session snapshot allowed: $out"; exit 1; }
grep -q "ERROR:  53400: too many heap profile snapshots" <<<"$out" || { echo "session limit: $out"; exit 1; }
grep -q "HINT:  Drop snapshots" <<<"$out" || { echo "no hint: $out"; exit 1; }
bob -c "SELECT heapprof_enable()" -c "SELECT heapprof_snapshot('hp_lim1', true)" \
	-c "SELECT heapprof_snapshot('hp_lim2', true)" >/dev/null
PGUSER=hp_bob expect_error 53400 -c "SELECT heapprof_enable()" -c "SELECT heapprof_snapshot('hp_lim3', true)"
# the byte limit too, with room left in the count
bob -c "SELECT heapprof_drop_snapshot('hp_lim2')" >/dev/null
q -c "ALTER ROLE hp_bob SET heapprof.max_snapshot_bytes = 0" >/dev/null
PGUSER=hp_bob expect_error 53400 -c "SELECT heapprof_enable()" -c "SELECT heapprof_snapshot('hp_lim3', true)"
q -c "ALTER ROLE hp_bob RESET ALL" >/dev/null
[ "$(q -c "SELECT count(*) FROM pg_ls_dir('heapprof/snapshots', true, false) f WHERE f LIKE 'hp_lim%'")" = $((before + 1)) ] ||
	{ echo "refused snapshots left files:"; q -c "SELECT pg_ls_dir('heapprof/snapshots')"; exit 1; }
# a session snapshot is judged with its identity lines (over 1 kB): for
# limits around its size, one that is taken fits in the limit, as the next
# refusal's count of what the session holds shows
lim() {
	PGOPTIONS="$QOPTS" psql -X -q -At -d postgres -v VERBOSITY=verbose \
		-c "SET heapprof.max_snapshot_bytes = '$1kB'" -c "SET ROLE hp_bob" -c "SELECT heapprof_enable()" \
		-c "SELECT 'taken', heapprof_snapshot('hp_whole', false) > 0" -c "RESET ROLE" \
		-c "SET heapprof.max_snapshot_bytes = 0" -c "SET ROLE hp_bob" -c "SELECT heapprof_snapshot('hp_whole2', false)" 2>&1 || true
}
out=$(lim 1)
size=$(sed -n '/this one has/{s/.*this one has \([0-9]*\) bytes.*/\1/p;q}' <<<"$out")
[ -n "$size" ] || { echo "no size in the refusal: $out"; exit 1; }
taken=0
for kb in $(seq $(((size + 1023) / 1024 - 2)) $(((size + 1023) / 1024 + 4))); do
	out=$(lim "$kb")
	grep -q '^taken|t' <<<"$out" || continue
	taken=$((taken + 1))
	held=$(sed -n 's/.*This session holds 1 snapshot(s) of \([0-9]*\) bytes.*/\1/p' <<<"$out")
	[ -n "$held" ] && [ "$held" -le $((kb * 1024)) ] ||
		{ echo "a session snapshot under max_snapshot_bytes = ${kb}kB: $out"; exit 1; }
done
[ $taken -gt 0 ] || { echo "no session snapshot of about $size bytes taken under $(((size + 1023) / 1024 + 4))kB"; exit 1; }
# the superuser is not limited by the persisted count
q -c "SET heapprof.max_snapshots = 0" -c "SELECT heapprof_snapshot('hp_lim_su', true)" >/dev/null
q -c "SELECT heapprof_drop_snapshot('hp_lim1')" -c "SELECT heapprof_drop_snapshot('hp_lim_su')" >/dev/null

# -- hostile files among the persisted snapshots
q -c "SELECT heapprof_snapshot('hp_ok', true)" >/dev/null
snaps=$data/heapprof/snapshots
as_pg mkfifo "$snaps/hp_fifo.heap"
as_pg mkdir "$snaps/hp_dir.heap"
as_pg ln -s "$snaps/hp_ok.heap" "$snaps/hp_link.heap"
as_pg truncate -s 1100M "$snaps/hp_huge.heap"
as_pg touch "$snaps/hp_empty.heap"
start=$SECONDS
out=$(q -c "SET statement_timeout = '20s'" -c "SELECT name FROM heapprof_snapshots() ORDER BY name" 2>&1) ||
	{ echo "listing failed: $out"; exit 1; }
[ $((SECONDS - start)) -lt 10 ] || { echo "listing took $((SECONDS - start)) s"; exit 1; }
grep -qx hp_ok <<<"$out" || { echo "listing lost the good snapshot: $out"; exit 1; }
# heapprof_stored() lists every kind, so the same
out=$out$'\n'$(q -c "SET statement_timeout = '20s'" -c "SELECT name FROM heapprof_stored() ORDER BY name" 2>&1) ||
	{ echo "heapprof_stored() failed: $out"; exit 1; }
[ "$(grep -cx hp_ok <<<"$out")" = 2 ] || { echo "heapprof_stored() lost the good snapshot: $out"; exit 1; }
for bad in hp_fifo hp_dir hp_link hp_huge hp_empty; do
	grep -qx "$bad" <<<"$out" && { echo "listed $bad"; exit 1; }
	[ "$(grep -c "WARNING:.*$bad" <<<"$out")" = 2 ] || { echo "not one WARNING for $bad in each listing: $out"; exit 1; }
	# too big is the size's error, with its way out; anything else is not a profile
	code=XX001; [ $bad = hp_huge ] && code=54000
	if [ $bad = hp_huge ]; then
		huge=$(q -c "SELECT * FROM heapprof_top(1, stored => '$bad')" 2>&1) || true
		grep -q 'HINT:.*heapprof-report' <<<"$huge" ||
			{ echo "a profile over 256 MB: no hint to report on it off the server: $huge"; exit 1; }
	fi
	expect_error $code -c "SET statement_timeout = '20s'" -c "SELECT * FROM heapprof_top(1, stored => '$bad')" ||
		{ echo "stored => '$bad' not refused cleanly"; exit 1; }
done
[ $((SECONDS - start)) -lt 30 ] || { echo "readers took $((SECONDS - start)) s"; exit 1; }
q -c "SELECT heapprof_drop_snapshot('hp_ok')" >/dev/null
# a writer sees the empty file as taken, as readers do
expect_error 42710 -c "SELECT heapprof_snapshot('hp_empty', true)"
as_pg rm -rf "$snaps/hp_fifo.heap" "$snaps/hp_dir.heap" "$snaps/hp_link.heap" "$snaps/hp_huge.heap" "$snaps/hp_empty.heap"

# -- huge stacks: refused beyond 65,536 frames, and statement_timeout holds
# within the cap (interrupts are checked by frames, not by stacks)
for n in 1000000 65536; do
	awk -v n="$n" 'BEGIN { printf "heap_v2/524288\n  t*: 1: 100 [0: 0]\n@"
		for (i = 0; i < n; i++) printf " 0x%x", 4194304 + 16 * i
		printf "\n  t*: 1: 100 [0: 0]\n\nMAPPED_LIBRARIES:\n" }' >"$w.deep"
	chmod 644 "$w.deep"
	as_pg cp "$w.deep" "$snaps/hp_deep$n.heap"
done
start=$SECONDS
expect_error XX001 -c "SET statement_timeout = '2s'" -c "SELECT * FROM heapprof_top(1, stored => 'hp_deep1000000')"
out=$(q -c "SET statement_timeout = '2s'" -c "SELECT length(heapprof_dump_flamegraph(stored => 'hp_deep65536', fold => false))" 2>&1) ||
	grep -q "canceling statement due to statement timeout" <<<"$out" || { echo "deep stack: $out"; exit 1; }
[ $((SECONDS - start)) -lt 15 ] || { echo "deep stacks took $((SECONDS - start)) s under statement_timeout = 2s"; exit 1; }
as_pg rm -f "$snaps/hp_deep1000000.heap" "$snaps/hp_deep65536.heap"
rm -f "$w.deep"

# -- a snapshot cannot shadow an exit dump
q -c "ALTER SYSTEM SET heapprof.dump_on_exit_threshold = 0" -c "SELECT pg_reload_conf()" >/dev/null
create_ext heapprof_test
psql -X -q -At -d postgres -c "SELECT heapprof_enable()" -c "SELECT heapprof_test_hold(1048576)" \
	-c "SET SESSION AUTHORIZATION hp_bob" -c "SELECT pg_backend_pid()" >"$w"
pid=$(tail -n 1 "$w")
name=$(wait_query "an exit dump of $pid" 10 "SELECT name FROM heapprof_dumps() WHERE pid = $pid")
q -c "ALTER SYSTEM RESET heapprof.dump_on_exit_threshold" -c "SELECT pg_reload_conf()" >/dev/null
# owned by the login role, so bob may neither list nor read it
[ "$(q -c "SELECT owner FROM heapprof_dumps() WHERE name = '$name'")" = postgres ] ||
	{ echo "exit dump owned by the session user"; q -c "SELECT * FROM heapprof_dumps()"; exit 1; }
q -c "SELECT count(*) FROM heapprof_grant('hp_bob', 'history')" >/dev/null
[ -z "$(bob -c "SELECT name FROM heapprof_dumps() WHERE name = '$name'")" ] || { echo "bob lists the dump"; exit 1; }
expect_error 42501 -c "SET ROLE hp_bob" -c "SELECT * FROM heapprof_top(1, stored => '$name')"
# bob cannot plant a snapshot under its name ...
expect_error 42710 -c "SET ROLE hp_bob" -c "SELECT heapprof_enable()" -c "SELECT heapprof_snapshot('$name', true)"
# ... and a file planted there anyway makes the name ambiguous, never silently read
as_pg cp "$data/heapprof/dumps/$name.heap" "$snaps/$name.heap"
expect_error 42P08 -c "SELECT * FROM heapprof_top(1, stored => '$name')"
as_pg rm -f "$snaps/$name.heap" "$data/heapprof/dumps/$name.heap"

# -- one heapprof_grant() line per workflow is enough, from a role's own
# sessions: the client (processes; pprof, raw and --client-symbols: trusted)
q -c "CREATE ROLE hp_dbg LOGIN" >/dev/null
q -c "SELECT count(*) FROM heapprof_grant('hp_dbg', 'processes', 'trusted')" >/dev/null
coproc DBG { PGUSER=hp_dbg psql -X -q -At -d postgres; }
echo "SELECT pg_backend_pid();" >&"${DBG[1]}"
read -r -t 10 dbg <&"${DBG[0]}"
cli() { PGUSER=hp_dbg "$HP_TOP/pg_heapprof" -d postgres "$@"; }
cli --list | grep "^ *$dbg " >/dev/null || { echo "heapprof_grant: --list misses $dbg"; exit 1; }
cli --enable --pid "$dbg" >/dev/null
for f in top text flamegraph pprof collapsed dot; do
	cli --report "$f" --pid "$dbg" -o "$w.$f" || { echo "heapprof_grant: --report $f failed"; exit 1; }
done
cli --seconds 1 --report top --pid "$dbg" -o "$w.leak" 2>/dev/null || { echo "heapprof_grant: --seconds failed"; exit 1; }
# without --report: text (crashed on a NULL format before)
cli --seconds 1 --pid "$dbg" -o "$w.leak0" 2>/dev/null && [ -f "$w.leak0" ] ||
	{ echo "--seconds without --report failed"; exit 1; }
cli --client-symbols --report text --pid "$dbg" -o "$w.client" 2>"$w.client.err" ||
	{ echo "heapprof_grant: --client-symbols failed:"; cat "$w.client.err" "$w.client"; exit 1; }
# snapshots and exit dumps in SQL (leaks, history)
q -c "SELECT count(*) FROM heapprof_revoke('hp_dbg')" -c "SELECT count(*) FROM heapprof_grant('hp_dbg', 'leaks', 'history')" >/dev/null
PGUSER=hp_dbg q -c "SELECT heapprof_enable()" -c "SELECT heapprof_snapshot('hp_dbg1', true)" \
	-c "SELECT count(*) FROM heapprof_stacks(base => 'hp_dbg1')" -c "SELECT count(*) FROM heapprof_snapshots()" \
	-c "SELECT heapprof_drop_snapshot('hp_dbg1')" -c "SELECT count(*) FROM heapprof_dumps()" >/dev/null ||
	{ echo "heapprof_grant: snapshots workflow failed"; exit 1; }
kill "$DBG_PID" 2>/dev/null || true
rm -f "$w".*

# -- pg_heapprof --setup: the hint verbatim, here none (profiling usable, preloaded)
"$HP_TOP/pg_heapprof" -d postgres --setup >"$w.setup" 2>"$w.setup.err" || { echo "--setup failed: $(cat "$w.setup.err")"; exit 1; }
[ "$(cat "$w.setup")" = "$(q -c 'SELECT hint FROM heapprof_status()')" ] && [ ! -s "$w.setup" ] &&
	grep -q 'nothing to set up' "$w.setup.err" || { echo "--setup on a ready server: $(cat "$w.setup" "$w.setup.err")"; exit 1; }
set +e
"$HP_TOP/pg_heapprof" -d postgres --setup --pid 1 >/dev/null 2>&1
rc=$?
set -e
[ "$rc" = 2 ] || { echo "pg_heapprof --setup --pid exited $rc"; exit 1; }
rm -f "$w".setup*

# -- a pid beyond int is a bad argument (status 2), not a server error
set +e
"$HP_TOP/pg_heapprof" -d postgres --report top --pid 99999999999 >/dev/null 2>&1
rc=$?
set -e
[ "$rc" = 2 ] || { echo "pg_heapprof --pid 99999999999 exited $rc"; exit 1; }

# -- NULL names
expect_error 22023 -c "SELECT heapprof_drop_snapshot(NULL)"
q -c "SELECT count(*) FROM heapprof_revoke('hp_bob')" >/dev/null
echo ok
