-- Reports on the calling backend, with lg_prof_sample:0 (exact byte counts).
CREATE EXTENSION IF NOT EXISTS heapprof;
CREATE EXTENSION IF NOT EXISTS heapprof_test;
CREATE FUNCTION temp_files() RETURNS bigint LANGUAGE sql AS
$$ SELECT count(*) FROM pg_ls_dir('base/pgsql_tmp', true, false) AS f WHERE f LIKE '%heapprof%' $$;

-- An empty profile (profiling never enabled here) is valid, never an error.
SELECT heapprof_disable();
SELECT * FROM heapprof_top();
SELECT * FROM heapprof_dump_text();
SELECT * FROM heapprof_dump_collapsed();
SELECT * FROM heapprof_stacks();
SELECT regexp_replace(line, 'pid \d+', 'pid N', 'g') FROM heapprof_dump_dot() AS line;

-- Hold 10 MiB through hpt_hold -> hpt_outer -> hpt_middle -> hpt_leaf_alloc.
SELECT heapprof_reset();
SELECT heapprof_enable();
SELECT heapprof_test_hold(10 * 1048576);

SELECT flat_bytes, cum_bytes, function FROM heapprof_top(1000)
WHERE function LIKE 'hpt%' OR function = 'heapprof_test_hold' ORDER BY function;
SELECT rank, flat_bytes, flat_pct > 90 AS most, function, location LIKE '%heapprof_test.c:%' AS has_line
FROM heapprof_top(1);
SELECT flat_bytes, cum_bytes FROM heapprof_top(50, objects => true) WHERE function = 'hpt_leaf_alloc';
-- by cum (jeprof --cum): every stack is rooted in _start, so the first row holds it all
SELECT rank, cum_pct FROM heapprof_top(1, order_by => 'cum');
SELECT count(*) AS out_of_order FROM (
  SELECT cum_bytes, lag(cum_bytes) OVER (ORDER BY rank) AS prev FROM heapprof_top(1000, order_by => 'cum')) s
WHERE prev < cum_bytes - 1;
SELECT count(*) AS rooted_first FROM heapprof_dump_text(1, order_by => 'cum') AS line WHERE line ~ ' 100\.0% \S+$';
SELECT bytes, objects, frames[1:4] FROM heapprof_stacks() WHERE frames[1] = 'hpt_leaf_alloc';
-- every stack ends in main, after the allocator's own frames are cut
SELECT count(*) > 0 AS stacks, bool_and(frames[array_upper(frames, 1)] = '_start') AS rooted,
       bool_and(NOT frames[1] ~ 'malloc|jemalloc') AS cut
FROM heapprof_stacks();
SELECT count(*) FROM heapprof_dump_collapsed() AS line
WHERE line ~ '^_start;.*;heapprof_test_hold;hpt_outer;hpt_middle;hpt_leaf_alloc 10485760$';
-- jeprof --text layout; shares depend on the rest of the backend's memory
SELECT regexp_replace(line, '\d+\.\d%', 'P%', 'g') FROM heapprof_dump_text() AS line WHERE line ~ 'hpt_';
SELECT count(*) FROM heapprof_dump_text() AS line WHERE line ~ '^Total: \d+\.\d MB$';
SELECT regexp_replace(line, '\d+\.\d%', 'P%', 'g') FROM heapprof_dump_text(show_bytes => true) AS line
WHERE line ~ 'hpt_leaf_alloc$';
SELECT count(*) AS nodes FROM heapprof_dump_dot(nodecount => 5) AS line WHERE line ~ '^N\d+ \[label=';
SELECT count(*) FROM heapprof_dump_dot() AS line
WHERE line ~ '^N\d+ \[label="hpt_leaf_alloc\\n10\.0 \(\d+\.\d%\)\\r",shape=box';

-- focus and ignore
SELECT rank, flat_bytes, flat_pct, function FROM heapprof_top(1, focus => 'hpt_middle');
SELECT count(*) FROM heapprof_top(100, ignore => '^hpt_') WHERE function LIKE 'hpt_%';
SELECT count(*) FROM heapprof_stacks(focus => 'heapprof_test\.c');
-- a filter that matches nothing says so, not that the profile is empty
SELECT count(*) FROM heapprof_top(focus => 'no_such_function_anywhere');

-- Folding (the default) charges palloc'd memory to the caller of PostgreSQL's
-- allocator.  1 MiB pallocs get blocks of their own: 1 MiB + header, which
-- jemalloc serves from its 1.25 MiB size class.
SELECT heapprof_test_hold_palloc(10 * 1048576);
SELECT flat_bytes, cum_bytes, function FROM heapprof_top(100)
WHERE function IN ('hpt_palloc_leaf', 'hpt_palloc_middle', 'MemoryContextAllocHuge') ORDER BY function;
-- unfolded, the memory stays with the allocator: hpt_palloc_leaf holds none itself
SELECT flat_bytes, cum_bytes, function FROM heapprof_top(100, fold => false)
WHERE function = 'hpt_palloc_leaf';
-- the unfolded leaf is the allocator's own code: AllocSetAlloc (from 17 a
-- static helper such as AllocSetAllocLarge, reached by sibling calls from
-- palloc & co.), static, so on a stripped binary an honest label and never a
-- neighbour's exported name
SELECT frames[1] AS alloc_set_alloc FROM heapprof_stacks(fold => false)
WHERE frames[2] IN ('MemoryContextAllocHuge', 'hpt_palloc_leaf') ORDER BY bytes DESC LIMIT 1 \gset
SELECT :'alloc_set_alloc' ~ '^(AllocSet\w*|postgres\+0x[0-9a-f]+)$' AS honest;
-- folded, neither it nor any allocator entry point holds memory itself
SELECT count(*) AS allocator_rows FROM heapprof_top(1000)
WHERE flat_bytes <> 0 AND (function = :'alloc_set_alloc' OR function ~ '^(palloc|palloc0|repalloc|MemoryContextAlloc.*|AllocSet.*)$');
SELECT heapprof_test_error('SELECT * FROM heapprof_top(fold => NULL)');

-- the raw dump feeds jeprof or heapprof-report offline
SELECT split_part(raw, E'\n', 1) AS header, raw LIKE '%MAPPED_LIBRARIES:%' AS has_maps
FROM heapprof_dump_raw() AS raw;

-- released memory leaves the profile
SELECT heapprof_test_release();
SELECT count(*) FROM heapprof_top(100) WHERE function LIKE 'hpt_%';

\pset format unaligned
SELECT heapprof_test_error('SELECT * FROM heapprof_top(0)');
SELECT heapprof_test_error('SELECT * FROM heapprof_top(NULL)');
SELECT heapprof_test_error('SELECT * FROM heapprof_top(2000000)');
SELECT heapprof_test_error('SELECT * FROM heapprof_top(objects => NULL)');
SELECT heapprof_test_error('SELECT * FROM heapprof_top(focus => ''('')');
SELECT heapprof_test_error('SELECT * FROM heapprof_dump_dot(nodecount => -1)');
SELECT heapprof_test_error('SELECT * FROM heapprof_dump_dot(nodefraction => 2)');
SELECT heapprof_test_error('SELECT * FROM heapprof_dump_dot(edgefraction => ''NaN'')');
SELECT heapprof_test_error('SELECT * FROM heapprof_dump_dot(edgefraction => NULL)');
SELECT heapprof_test_error('SELECT * FROM heapprof_dump_text(-5)');
SELECT heapprof_test_error('SELECT * FROM heapprof_top(order_by => NULL)');
SELECT heapprof_test_error('SELECT * FROM heapprof_dump_text(order_by => ''bytes'')');
SELECT heapprof_test_error('SELECT * FROM heapprof_dump_collapsed(ignore => ''[z-a]'')');
-- hostile patterns: PostgreSQL's regex engine refuses or can be cancelled; the backend survives
SELECT heapprof_test_error('SELECT * FROM heapprof_top(focus => repeat(''('', 20000) || ''a'' || repeat('')'', 20000))');
SELECT heapprof_test_error('SELECT * FROM heapprof_top(ignore => ''(((a{255}){255}){255}){255}'')');
\pset format aligned
SET statement_timeout = '500ms';
SELECT count(*) FROM heapprof_top(focus => '^(.*)(.*)(.*)(.*)(.*)(.*)(.*)\7\6\5\4\3\2\1$');
RESET statement_timeout;
SELECT count(*) > 0 AS still_reporting FROM heapprof_top();

-- symbol caches stay between reports, within heapprof.symbol_cache_limit
SELECT heapprof_forget_symbols() > 0 AS dropped;
SELECT heapprof_forget_symbols() AS nothing_left;
SET heapprof.symbol_cache_limit = 0;
SELECT count(*) > 0 AS reported FROM heapprof_top();
SELECT heapprof_forget_symbols() AS dropped_after_report;
RESET heapprof.symbol_cache_limit;
SHOW heapprof.symbol_cache_limit;

-- no dump file is left behind, errors included
SELECT temp_files();
SELECT heapprof_disable();
