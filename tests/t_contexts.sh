#!/usr/bin/env bash
# t_contexts.sh -- a sample's context label agrees with PostgreSQL's own
# accounting, pg_backend_memory_contexts (its own cluster: jemalloc with
# every allocation sampled from the postmaster's start, heapprof preloaded):
#  - after a workload that fills the plan cache (300 prepared statements,
#    one CachedPlanSource, CachedPlanQuery and CachedPlan each), the
#    relcache (400 tables with an index) and the PL/pgSQL function cache
#    (50 functions compiled), every context name above 512 kB in
#    pg_backend_memory_contexts has within 10 % of its total_bytes in
#    heapprof_stacks() under that name (the block a context owns: made with
#    MemoryContextAlloc from another, grown by repalloc, its first block);
#  - a finished statement's contexts (its portal, executor, SPI and
#    PL/pgSQL contexts), deleted in between, hold nothing under their names
#    after it: no name of a context holds more in heapprof than
#    PostgreSQL counts for it; the memory the statement left in the caches
#    is theirs;
#  - hash tables' contexts (named after their tables once hash_create has
#    allocated in them) are theirs, first block and all: the hash tables
#    every backend makes agree within 10 % (and 8 kB more: a block
#    jemalloc rounds up to its next size class);
#  - a context of each allocator (AllocSet, Generation, Slab, Bump on 17+)
#    filled from another with small chunks and large ones grown by repalloc
#    agrees the same way;
#  - so do 20 contexts of 1 MB blocks made under a context no one
#    allocates in, while reused contexts are moved under watched ones, and
#    1 MB allocated in a context whose method table is heapprof's own copy
#    (its doorbell) right after another was deleted and malloc'd over;
#  - memory allocated into another context than the current one
#    (MemoryContextAllocHuge(TopMemoryContext, ...) from a statement) is
#    the other's; memory no context owns (8 MB of plain malloc) says so
#    ("current: NAME"), and the allocator split -- how much is outside
#    memory contexts, which functions hold it -- is one query over
#    heapprof_stacks().
set -euo pipefail
cd "${HP_TOP:-$(dirname "$0")/..}"
. tests/lib.sh
P=${PORT:-55772}
start_cluster contexts "$P" "prof:true,prof_active:true,lg_prof_sample:0" \
	"shared_preload_libraries = 'heapprof'" || fail "cluster did not start"
export $(cluster_env contexts "$P")
w=$(scratch)
q -c "CREATE EXTENSION heapprof" -c "CREATE EXTENSION heapprof_test" >/dev/null
q >/dev/null <<'SQL'
DO $$ BEGIN FOR i IN 1..400 LOOP
	EXECUTE format('CREATE TABLE t%s (a int PRIMARY KEY, b text, c timestamptz)', i);
END LOOP; END $$;
SQL

# One session: the workload, then both views of its memory.  Its backend
# sampled every allocation from its start (forked from the postmaster,
# prof_active:true), so heapprof sees all it holds.
chmod 777 "$w"
sed "s|PGVIEW|$w/pg|; s|HPVIEW|$w/hp|; s|SPLIT|$w/split|; s|OUTSIDE|$w/outside|; s|LEAK|$w/leak|" >"$w/workload.sql" <<'SQL'
SET jit = off;
-- the relcache, loaded inside one statement (a DO block: portal, SPI, PL/pgSQL)
DO $$ BEGIN FOR i IN 1..400 LOOP EXECUTE format('SELECT count(*) FROM t%s WHERE a = 1', i); END LOOP; END $$;
-- the plan cache
\o /dev/null
SELECT format('PREPARE p%s AS SELECT a, b FROM t%s WHERE a = $1 AND b <> ''x'' ORDER BY c', i, i)
	FROM generate_series(1, 300) i \gexec
SELECT format('EXECUTE p%s(%s)', i, i) FROM generate_series(1, 300) i \gexec
\o
-- the PL/pgSQL function cache
DO $$ DECLARE s int; BEGIN FOR i IN 1..50 LOOP
	EXECUTE format('CREATE FUNCTION g%s(n int) RETURNS int LANGUAGE plpgsql AS $f$ DECLARE s int := 0;
		BEGIN FOR k IN 1..n LOOP s := s + k; END LOOP; RETURN s; END $f$', i);
	EXECUTE format('SELECT g%s(10)', i) INTO s;
END LOOP; END $$;
-- a big statement that ends: a sort of 200000 rows in its own contexts
SELECT count(*) FROM (SELECT md5(g::text) m FROM generate_series(1, 200000) g ORDER BY 1) s;
-- 3 MB into TopMemoryContext from a statement, 8 MB of plain malloc held
SELECT heapprof_test_leak(3000000);
SELECT heapprof_test_hold(8000000);
-- every allocator's paths to malloc, each from another context: 4 MB each
SELECT heapprof_test_contexts(4000000);
-- contexts made under one no one allocates in, reused ones moved elsewhere
SELECT heapprof_test_reuse(20, 1048576);
-- 1 MB in a context whose method table is heapprof's own copy, after a deleted one
SELECT heapprof_test_doorbell(1048448);
\o
-- the allocator split, and who holds what is outside
\copy (SELECT context LIKE 'current: %', sum(bytes)::bigint FROM heapprof_stacks() WHERE context IS NOT NULL GROUP BY 1) TO 'SPLIT' WITH (DELIMITER '|')
\copy (SELECT frames[1], sum(bytes)::bigint FROM heapprof_stacks() WHERE context LIKE 'current: %' GROUP BY 1 ORDER BY 2 DESC LIMIT 1) TO 'OUTSIDE' WITH (DELIMITER '|')
\copy (SELECT context, sum(bytes)::bigint FROM heapprof_stacks() WHERE frames[1] = 'hpt_leak_top' GROUP BY 1) TO 'LEAK' WITH (DELIMITER '|')
-- both views one after the other, nothing kept between them
\copy (SELECT name, sum(total_bytes)::bigint FROM pg_backend_memory_contexts GROUP BY 1) TO 'PGVIEW' WITH (DELIMITER '|')
\copy (SELECT context, sum(bytes)::bigint FROM heapprof_stacks() WHERE context IS NOT NULL GROUP BY 1) TO 'HPVIEW' WITH (DELIMITER '|')
SQL

q -f "$w/workload.sql" >"$w/out" 2>&1 || fail "the workload failed: $(cat "$w/out")"
# NAME|PG|HEAPPROF lines: of every name above 512 kB in PostgreSQL's view,
# but the contexts of the statement that reads it (its portal, executor and
# expression contexts: 18's holds the view's rows, half a megabyte), gone
# when heapprof's is read
mine='^(MessageContext|PortalContext|ExecutorState|ExprContext|tuplestore tuples|COPY|pg_get_backend_memory_contexts)$'
cmp=$(awk -F'|' -v mine="$mine" 'NR == FNR { hp[$1] = $2; next }
	$2 > 512 * 1024 && $1 !~ mine { print $1 "|" $2 "|" hp[$1] + 0 }' "$w/hp" "$w/pg")
# of every name heapprof holds more under than PostgreSQL counts (not the
# blocks no context owns, nor hash tables' first blocks)
over=$(awk -F'|' 'NR == FNR { pg[$1] = $2; next }
	$1 !~ /^current: / && $1 != "new context" && $2 > pg[$1] * 1.1 + 16384 { print $1 "|" $2 "|" pg[$1] + 0 }' "$w/pg" "$w/hp")
unnamed=$(awk -F'|' '$1 == "new context" { print $2 }' "$w/hp")
dyn=$(awk -F'|' '$1 == "dynahash" { print $2 }' "$w/hp")
# hash tables every backend makes (not those the postmaster made, before heapprof was loaded)
hashes='^(Portal hash|Relcache by OID|smgr relation table|Operator class cache|Operator lookup cache|Type information cache|Record information cache|Event Trigger Cache|PrivateRefCount|TableSpace cache)$'
disagree=$(awk -F'|' -v re="$hashes" 'NR == FNR { hp[$1] = $2; next }
	$1 ~ re && (hp[$1] > $2 * 1.1 + 8192 || hp[$1] < $2 * 0.9) { print $1 "|" $2 "|" hp[$1] + 0 }' "$w/hp" "$w/pg")
nhash=$(awk -F'|' -v re="$hashes" '$1 ~ re { n++ } END { print n + 0 }' "$w/pg")
names=(CacheMemoryContext CachedPlanSource CachedPlanQuery 'index info' 'PL/pgSQL function' TopMemoryContext
	'hpt aset' 'hpt generation' 'hpt slab' 'hpt A' 'heapprof doorbell')
[ "$(q -c "SHOW server_version_num")" -lt 170000 ] || names+=('hpt bump')
for name in "${names[@]}"; do
	grep -q "^$name|" <<<"$cmp" || fail "$name is not above 512 kB in pg_backend_memory_contexts: $cmp"
done
worst=0
summary=
while IFS='|' read -r name pg hp; do
	# per mille off, either way
	off=$(( (hp > pg ? hp - pg : pg - hp) * 1000 / pg ))
	[ "$off" -le 100 ] || fail "$name: pg_backend_memory_contexts $pg bytes, heapprof $hp ($((off / 10)).$((off % 10)) % off)"
	[ "$off" -le "$worst" ] || worst=$off
	summary+="${summary:+, }$name $((hp * 100 / pg)) %"
done <<<"$cmp"

[ -z "$over" ] || fail "names holding more in heapprof than PostgreSQL counts for them (name|heapprof|pg): $over"
[ "$(cut -d"|" -f1 "$w/leak")" = TopMemoryContext ] ||
	fail "3 MB allocated into TopMemoryContext from a statement is labelled: $(cat "$w/leak")"
outside=$(awk -F'|' '$1 == "t" { print $2 }' "$w/split")
inside=$(awk -F'|' '$1 == "f" { print $2 }' "$w/split")
[ "${outside:-0}" -ge 8000000 ] && [ "${outside:-0}" -lt 12000000 ] ||
	fail "outside memory contexts: ${outside:-0} bytes after 8 MB of plain malloc (split: $(cat "$w/split"))"
[ "$(cut -d'|' -f1 "$w/outside")" = hpt_leaf_alloc ] || fail "outside memory contexts, on top: $(cat "$w/outside")"
[ -z "$dyn" ] || fail "hash tables' first blocks are labelled dynahash ($dyn bytes), not by their tables"
[ "$nhash" -ge 8 ] && [ -z "$disagree" ] ||
	fail "hash tables (of $nhash) that heapprof and pg_backend_memory_contexts disagree on (name|pg|heapprof): $disagree"
[ "${unnamed:-0}" -le $((8 * 8192)) ] || fail "new context (first blocks of contexts not named) holds $unnamed bytes"
echo "contexts: $(wc -l <<<"$cmp") above 512 kB agree with pg_backend_memory_contexts within $((worst / 10)).$((worst % 10)) % ($summary); no name holds more than PostgreSQL counts after a finished statement; $nhash hash tables agree; $((${unnamed:-0} / 1024)) kB unnamed; split: $((inside / 1024)) kB in contexts, $((outside / 1024)) kB outside (hpt_leaf_alloc on top)"
