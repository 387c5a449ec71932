#!/usr/bin/env bash
# t_cluster.sh -- what a DBA does from the shell against a jemalloc server
# (cluster (a), exact counts): dot rows piped into Graphviz, the raw dump
# read by jeprof and by heapprof-report offline with equal totals.
set -euo pipefail
. "${HP_TOP:=$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
work=$(scratch)
cd "$HP_TOP"

create_ext heapprof heapprof_test

# one session: hold 6 MiB, take every report
q >/dev/null <<SQL
SELECT heapprof_enable();
SELECT heapprof_test_hold(6 * 1048576);
\\o $work/heap.dot
SELECT * FROM heapprof_dump_dot();
\\o $work/raw.heap
SELECT heapprof_dump_raw();
\\o $work/text.txt
SELECT * FROM heapprof_dump_text(show_bytes => true);
SQL

dot -Tsvg "$work/heap.dot" > "$work/heap.svg"
grep -q '<svg' "$work/heap.svg"
grep -q 'hpt_leaf_alloc' "$work/heap.svg"
grep -q '^ *6291456 .* hpt_leaf_alloc$' "$work/text.txt" || { cat "$work/text.txt"; exit 1; }

# offline: heapprof-report finds the same allocation in the raw dump
./heapprof-report --text --show_bytes "$work/raw.heap" > "$work/offline.txt"
grep -q '^ *6291456 .* hpt_leaf_alloc$' "$work/offline.txt"

# jeprof reads the same file and agrees on the total
postgres=$(pg_config --bindir)/postgres
jeprof --text --show_bytes "$postgres" "$work/raw.heap" 2>/dev/null > "$work/jeprof.txt"
diff <(head -n1 "$work/jeprof.txt") <(head -n1 "$work/offline.txt")
grep -q '^ *6291456 .* hpt_leaf_alloc$' "$work/jeprof.txt"

# heapprof-report refuses bad input with a message and exit status 1
printf 'not a dump\n' > "$work/bad.heap"
if ./heapprof-report "$work/bad.heap" 2> "$work/err"; then exit 1; fi
grep -q 'not a jemalloc heap profile' "$work/err"
if ./heapprof-report "$work/missing.heap" 2> "$work/err"; then exit 1; fi
grep -q 'could not read' "$work/err"
echo "dot, raw, offline and jeprof agree"
