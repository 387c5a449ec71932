# tests/lib.sh -- throwaway PostgreSQL clusters for heapprof's tests and demo, and
# the helpers the test scripts share (at the end).
#
# The server is the one $PG_CONFIG names: by default pg_config, which on
# Debian 12 is PostgreSQL 15 (/usr/bin/pg_config answers for the newest
# postgresql-server-dev-NN); tests/pgbuild prints one for 17 or 18.
# Clusters run as a non-root user (postgres when invoked as root), on a
# private port and socket directory under one scratch folder that is removed
# on exit.  Source this file; it sets PGBIN, JEMALLOC_SO and HP_SCRATCH, and
# exports PG_CONFIG and a PATH that starts with PGBIN, so that make, psql,
# pg_config and the rest of the tests all use that one server version.

export PG_CONFIG=${PG_CONFIG:-pg_config}
PGBIN=$("$PG_CONFIG" --bindir) || { echo "tests/lib.sh: $PG_CONFIG --bindir failed" >&2; exit 1; }
[ -x "$PGBIN/postgres" ] || { echo "tests/lib.sh: no server in $PGBIN (from $PG_CONFIG)" >&2; exit 1; }
case ":$PATH:" in
	":$PGBIN:"*) ;;
	*) export PATH="$PGBIN:$PATH" ;;
esac
JEMALLOC_SO=$(ls /usr/lib/*/libjemalloc.so.2 2>/dev/null | sed -n 1p)
HP_SCRATCH=$(mktemp -d /tmp/heapprof.XXXXXX)
chmod 755 "$HP_SCRATCH"
HP_CLUSTERS=()
HP_AT_EXIT=()

if [ "$(id -u)" -eq 0 ]; then
	HP_OSUSER=postgres
	chown "$HP_OSUSER" "$HP_SCRATCH"
	as_pg() { runuser -u "$HP_OSUSER" -- "$@"; }
else
	HP_OSUSER=$(id -un)
	as_pg() { "$@"; }
fi

hp_cleanup() {
	local c d
	for c in "${HP_AT_EXIT[@]}"; do eval "$c" || true; done
	for d in "${HP_CLUSTERS[@]}"; do
		as_pg "$PGBIN/pg_ctl" -D "$d/data" -m immediate stop >/dev/null 2>&1 || true
	done
	if [ -n "${HP_KEEP:-}" ]; then
		echo "kept $HP_SCRATCH" >&2
	else
		rm -rf "$HP_SCRATCH"
	fi
}
trap hp_cleanup EXIT

# start_cluster NAME PORT MALLOC_CONF|-   (- = no jemalloc at all)
# Extra postgresql.conf lines may follow as further arguments.
start_cluster() {
	local name=$1 port=$2 conf=$3
	shift 3
	local dir=$HP_SCRATCH/$name
	as_pg mkdir -p "$dir/sock"
	as_pg "$PGBIN/initdb" -D "$dir/data" -U postgres -A trust --no-sync >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log" >&2; return 1; }
	{
		echo "port = $port"
		echo "unix_socket_directories = '$dir/sock'"
		echo "listen_addresses = ''"
		echo "fsync = off"
		local line
		for line in "$@"; do echo "$line"; done
	} | as_pg tee -a "$dir/data/postgresql.conf" >/dev/null
	local env=()
	[ "$conf" = - ] || env=(LD_PRELOAD="$JEMALLOC_SO" MALLOC_CONF="$conf")
	HP_CLUSTERS+=("$dir")
	# pg_ctl inherits LD_PRELOAD too; harmless with prof_active:false.
	as_pg env "${env[@]}" "$PGBIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w start >/dev/null ||
		{ cat "$dir/server.log" >&2; return 1; }
}

# Connection settings for a cluster started by start_cluster.
cluster_env() {
	echo "PGHOST=$HP_SCRATCH/$1/sock PGPORT=$2 PGUSER=postgres"
}

# --- helpers for the test scripts ------------------------------------------
# A script sources this file as
#   . "${HP_TOP:=$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
# and registers its own cleanup with at_exit, never with trap (lib.sh's trap
# runs it, then stops the clusters and removes the scratch folder).

# at_exit COMMAND: eval COMMAND at exit, before the clusters stop; the last
# registered runs first
at_exit() { HP_AT_EXIT=("$1" "${HP_AT_EXIT[@]}"); }

# fail MESSAGE: the test failed
fail() { echo "FAIL: $*" >&2; exit 1; }

# scratch: a new private folder, removed at exit
scratch() { mktemp -d "$HP_SCRATCH/work.XXXXXX"; }

# q PSQL-ARGS...: one psql session, tuples only, stops at the first error.
# DB names the database (postgres); QOPTS, options for the superuser's own
# sessions (as a rule -c heapprof.dump_on_exit_threshold=-1, so that the
# test's own queries leave no exit dump), is left out for any other role,
# which may not set them.
q() {
	local o=${PGOPTIONS:-}
	[ "${PGUSER:-postgres}" != postgres ] || o="$o${QOPTS:+ $QOPTS}"
	PGOPTIONS=$o psql -X -q -At -d "${DB:-postgres}" -v ON_ERROR_STOP=1 "$@"
}
# q_as ROLE PSQL-ARGS...: q as that role
q_as() { PGUSER=$1 q "${@:2}"; }

# expect_error SQLSTATE PSQL-ARGS...: q fails with that SQLSTATE
expect_error() {
	local state=$1 out
	shift
	if out=$(q -v VERBOSITY=verbose "$@" 2>&1); then
		echo "expected $state, succeeded: $*"; return 1
	fi
	grep -q "ERROR:  $state:" <<<"$out" || { echo "expected $state from $*, got: $out"; return 1; }
}

# wait_for WHAT SECONDS COMMAND...: run COMMAND until it succeeds, every
# WAIT_STEP (0.1) s, SECONDS / WAIT_STEP times at the most (a slow COMMAND
# makes the wait longer, as a loop of tries does); then say what was
# awaited and for how long, and return 1
wait_for() {
	# hp_ names: COMMAND runs in this scope, where a local hides its variable
	local hp_what=$1 hp_step=${WAIT_STEP:-0.1} hp_n hp_t0=${EPOCHREALTIME//[!0-9]/} hp_ds
	hp_n=$(awk -v s="$2" -v t="$hp_step" 'BEGIN { print int(s / t + 0.5) }')
	shift 2
	until "$@"; do
		hp_n=$((hp_n - 1))
		if [ "$hp_n" -le 0 ]; then
			hp_ds=$(( (${EPOCHREALTIME//[!0-9]/} - hp_t0) / 100000 ))
			echo "timed out waiting for $hp_what ($((hp_ds / 10)).$((hp_ds % 10)) s)" >&2
			return 1
		fi
		sleep "$hp_step"
	done
}
# wait_query WHAT SECONDS SQL: wait_for SQL to return a row; print it
wait_query() {
	local hp_out
	wait_for "$1" "$2" hp_row "$3" || return 1
	printf '%s\n' "$hp_out"
}
# hp_row SQL: SQL returns a row, put in wait_query's hp_out
hp_row() { hp_out=$(q -c "$1") && [ -n "$hp_out" ]; }
# session_pid APPLICATION_NAME: the pid of that session, once it has started
session_pid() { wait_query "session $1" 5 "SELECT pid FROM pg_stat_activity WHERE application_name = '$1'"; }
# exited PID: the process PID is gone
exited() { ! kill -0 "$1" 2>/dev/null; }
# has_lines FILE N: FILE has at least N lines
has_lines() { [ "$(wc -l <"$1")" -ge "$2" ]; }
# create_ext NAME...: the extensions, in the database DB (postgres)
create_ext() {
	local e args=()
	for e; do args+=(-c "CREATE EXTENSION IF NOT EXISTS $e"); done
	q "${args[@]}" >/dev/null
}
