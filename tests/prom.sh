# tests/prom.sh -- Debian's prometheus-postgres-exporter (0.11.1) with
# heapprof's queries file, and Prometheus (2.42) scraping it with heapprof's
# alerting rules, for the tests.  Source it after tests/lib.sh:
#   . tests/lib.sh
#   . tests/prom.sh
#   start_cluster ...
#   prom_start "$HP_SCRATCH/prom" "$PORT" "$HP_SCRATCH/NAME/sock" postgres ROLE || fail "prometheus"
#   prom_metrics | grep '^heapprof_heap_outside_bytes'
#   prom_wait 'heapprof_function_bytes' 30 && prom_query 'heapprof_function_bytes'
# Both run as the clusters' OS user (as_pg: postgres under root), never as
# root, on 127.0.0.1 only, with their logs (exporter.log, prometheus.log), the
# files they read and Prometheus' data in DIR.  prom_start registers prom_stop
# with at_exit; calling prom_stop again, from the script's own cleanup, is
# harmless.
#
# Settings, from the environment when this file is sourced:
#   PROM_EXPORTER_PORT  the exporter's port (59187)
#   PROM_PORT           Prometheus' port (59090)
#   PROM_QUERIES        the queries file (prometheus/heapprof-queries.yaml)
#   PROM_RULES          the rules file (prometheus/heapprof-alerts.yaml)
#   PROM_SCRAPE         scrape and rule evaluation interval (5s)

: "${HP_TOP:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
PROM_EXPORTER_PORT=${PROM_EXPORTER_PORT:-59187}
PROM_PORT=${PROM_PORT:-59090}
PROM_QUERIES=${PROM_QUERIES:-$HP_TOP/prometheus/heapprof-queries.yaml}
PROM_RULES=${PROM_RULES:-$HP_TOP/prometheus/heapprof-alerts.yaml}
PROM_SCRAPE=${PROM_SCRAPE:-5s}
PROM_PIDS=()
PROM_DIR=
PROM_AT_EXIT=

# prom_spawn DIR LOG CMD...: CMD in the background in DIR as the clusters' OS
# user, its output appended to LOG; prints its pid (the command's own: the
# shell that starts it execs nothing else and exits)
# shellcheck disable=SC2016 # $1... are the inner shell's
prom_spawn() {
	as_pg bash -c 'cd "$1" || exit 1; log=$2; shift 2; "$@" </dev/null >>"$log" 2>&1 & echo $!' prom_spawn "$@"
}

# prom_answers URL: an HTTP 2xx from URL
prom_answers() { curl -sf -o /dev/null --max-time 2 "$1"; }

# prom_ready NAME PID LOG URL SECONDS: wait until URL answers; fail if PID
# exits first or SECONDS pass, showing the end of LOG
prom_ready() {
	local name=$1 pid=$2 log=$3 url=$4 n=$(($5 * 10))
	until prom_answers "$url"; do
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "prom_start: $name exited:" >&2
			tail -n 20 "$log" >&2
			return 1
		fi
		n=$((n - 1))
		if [ "$n" -le 0 ]; then
			echo "prom_start: $name did not answer $url in $5 s:" >&2
			tail -n 20 "$log" >&2
			return 1
		fi
		sleep 0.1
	done
}

# prom_start DIR PGPORT PGHOST_SOCKETDIR DBNAME ROLE: the exporter, connected
# as ROLE to DBNAME over the socket, and Prometheus scraping it every
# PROM_SCRAPE; returns once both answer over HTTP
prom_start() {
	local dir=$1 pgport=$2 sock=$3 db=$4 role=$5 c p
	[ ${#PROM_PIDS[@]} -eq 0 ] || { echo "prom_start: already started (in $PROM_DIR)" >&2; return 1; }
	for c in prometheus-postgres-exporter prometheus curl; do
		command -v "$c" >/dev/null || { echo "prom_start: no $c (tests/deps test installs it)" >&2; return 1; }
	done
	for p in "$PROM_EXPORTER_PORT" "$PROM_PORT"; do
		! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null ||
			{ echo "prom_start: port $p is taken (set PROM_EXPORTER_PORT, PROM_PORT)" >&2; return 1; }
	done
	PROM_DIR=$dir
	as_pg mkdir -p "$dir/data" || return 1
	# copies the OS user can read wherever the tree is
	as_pg tee "$dir/heapprof-queries.yaml" <"$PROM_QUERIES" >/dev/null || return 1
	as_pg tee "$dir/heapprof-alerts.yaml" <"$PROM_RULES" >/dev/null || return 1
	as_pg tee "$dir/prometheus.yml" >/dev/null <<-EOF || return 1
		global:
		  scrape_interval: $PROM_SCRAPE
		  evaluation_interval: $PROM_SCRAPE
		rule_files:
		  - $dir/heapprof-alerts.yaml
		scrape_configs:
		  - job_name: heapprof
		    static_configs:
		      - targets: ['127.0.0.1:$PROM_EXPORTER_PORT']
	EOF
	if [ -z "$PROM_AT_EXIT" ] && declare -F at_exit >/dev/null; then
		at_exit prom_stop
		PROM_AT_EXIT=1
	fi
	# only heapprof's queries: no built-in metrics, settings or collectors
	# (pg_up and the exporter's own go_*, process_* and pg_exporter_* remain)
	p=$(prom_spawn "$dir" "$dir/exporter.log" env \
		DATA_SOURCE_NAME="host=$sock port=$pgport dbname=$db user=$role sslmode=disable" \
		prometheus-postgres-exporter \
		--extend.query-path="$dir/heapprof-queries.yaml" \
		--web.listen-address="127.0.0.1:$PROM_EXPORTER_PORT" \
		--disable-default-metrics --disable-settings-metrics \
		--no-collector.database --no-collector.bgwriter) || return 1
	PROM_PIDS+=("$p")
	prom_ready exporter "$p" "$dir/exporter.log" "http://127.0.0.1:$PROM_EXPORTER_PORT/" 20 || return 1
	p=$(prom_spawn "$dir" "$dir/prometheus.log" prometheus \
		--config.file="$dir/prometheus.yml" \
		--storage.tsdb.path="$dir/data" \
		--web.listen-address="127.0.0.1:$PROM_PORT") || return 1
	PROM_PIDS+=("$p")
	prom_ready prometheus "$p" "$dir/prometheus.log" "http://127.0.0.1:$PROM_PORT/-/ready" 30
}

# prom_metrics: the exporter's /metrics (it runs the queries, unless cached)
prom_metrics() { curl -sS --fail-with-body --max-time 30 "http://127.0.0.1:$PROM_EXPORTER_PORT/metrics"; }

# prom_get PATH: the JSON of a GET on Prometheus' HTTP API, e.g.
# /api/v1/rules or /api/v1/alerts
prom_get() { curl -sS --fail-with-body --max-time 30 "http://127.0.0.1:$PROM_PORT$1"; }

# prom_query EXPR: the JSON of an instant query of EXPR now; fails (with
# Prometheus' error, as JSON) on a bad expression
prom_query() {
	curl -sS --fail-with-body --max-time 30 -G --data-urlencode "query=$1" "http://127.0.0.1:$PROM_PORT/api/v1/query"
}

# prom_has EXPR: an instant query of EXPR returns at least one series
prom_has() {
	local out
	out=$(prom_query "$1" 2>/dev/null) || return 1
	[[ $out == *'"status":"success"'* && $out != *'"result":[]'* ]]
}

# prom_wait EXPR SECONDS: wait until EXPR has a series (Prometheus applies its
# targets about 5 s after it starts, then scrapes at an offset it picks within
# PROM_SCRAPE: the first sample came 9-10 s after prom_start)
prom_wait() { WAIT_STEP=0.5 wait_for "Prometheus to have $1" "$2" prom_has "$1"; }

# prom_stop: stop the exporter and Prometheus (TERM, KILL after 10 s)
prom_stop() {
	local p n=100
	[ ${#PROM_PIDS[@]} -gt 0 ] || return 0
	for p in "${PROM_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	while [ "$n" -gt 0 ]; do
		for p in "${PROM_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && break; p=; done
		[ -n "$p" ] || break
		n=$((n - 1))
		sleep 0.1
	done
	if [ "$n" -eq 0 ]; then
		for p in "${PROM_PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	fi
	PROM_PIDS=()
}
