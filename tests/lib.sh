# tests/lib.sh -- throwaway PostgreSQL clusters for heapprof's tests and demo.
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
JEMALLOC_SO=$(ls /usr/lib/*/libjemalloc.so.2 2>/dev/null | head -n 1)
HP_SCRATCH=$(mktemp -d /tmp/heapprof.XXXXXX)
chmod 755 "$HP_SCRATCH"
HP_CLUSTERS=()

if [ "$(id -u)" -eq 0 ]; then
	HP_OSUSER=postgres
	chown "$HP_OSUSER" "$HP_SCRATCH"
	as_pg() { runuser -u "$HP_OSUSER" -- "$@"; }
else
	HP_OSUSER=$(id -un)
	as_pg() { "$@"; }
fi

hp_cleanup() {
	local d
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
