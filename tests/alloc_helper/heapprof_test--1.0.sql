\echo Use "CREATE EXTENSION heapprof_test" to load this file. \quit

-- Hold `bytes` bytes in chunks of `chunk` bytes, allocated with malloc through
-- hpt_hold -> hpt_outer -> hpt_middle -> hpt_leaf_alloc.  Returns bytes held in all.
CREATE FUNCTION heapprof_test_hold(bytes bigint, chunk integer DEFAULT 1048576)
RETURNS bigint AS 'MODULE_PATHNAME', 'heapprof_test_hold' LANGUAGE C STRICT;

-- The same through palloc in a child of TopMemoryContext:
-- hpt_hold_palloc -> hpt_palloc_middle -> hpt_palloc_leaf -> palloc.
CREATE FUNCTION heapprof_test_hold_palloc(bytes bigint, chunk integer DEFAULT 1048576)
RETURNS bigint AS 'MODULE_PATHNAME', 'heapprof_test_hold_palloc' LANGUAGE C STRICT;

-- Leak bytes into TopMemoryContext on every call, through hpt_leak_top.
CREATE FUNCTION heapprof_test_leak(bytes bigint)
RETURNS bigint AS 'MODULE_PATHNAME', 'heapprof_test_leak' LANGUAGE C STRICT;

-- A leak outside memory contexts (pg_stat_monitor issue #792): malloc `bytes`
-- bytes through hpt_malloc_leak and never free them.  Returns the calls so far
-- in this process.
CREATE FUNCTION heapprof_test_malloc_leak(bytes integer)
RETURNS bigint AS 'MODULE_PATHNAME', 'heapprof_test_malloc_leak' LANGUAGE C STRICT;

-- Its twin that leaks nothing: malloc `bytes` bytes through hpt_malloc_twin
-- and free them at once.  Returns the calls so far in this process.
CREATE FUNCTION heapprof_test_malloc_twin(bytes integer)
RETURNS bigint AS 'MODULE_PATHNAME', 'heapprof_test_malloc_twin' LANGUAGE C STRICT;

-- One context of each allocator ("hpt aset", "hpt generation", "hpt slab",
-- and "hpt bump" on 17+) kept under TopMemoryContext, each filled with
-- `bytes` bytes by MemoryContextAlloc from the caller's context: small chunks,
-- large chunks grown by repalloc.  Returns the contexts made.
CREATE FUNCTION heapprof_test_contexts(bytes bigint)
RETURNS integer AS 'MODULE_PATHNAME', 'heapprof_test_contexts' LANGUAGE C STRICT;

-- n times: a context "hpt F" deleted onto AllocSet's freelist, one "hpt A"
-- of blk-byte blocks under a context no one allocates in, and one "hpt B"
-- under the current context (F's reused), moved and allocated in.
CREATE FUNCTION heapprof_test_reuse(n integer, blk integer)
RETURNS integer AS 'MODULE_PATHNAME', 'heapprof_test_reuse' LANGUAGE C STRICT;

-- bytes allocated in heapprof's "heapprof doorbell" context (a method table
-- of heapprof's own) right after another context was deleted and its memory
-- malloc'd over.
CREATE FUNCTION heapprof_test_doorbell(bytes integer)
RETURNS integer AS 'MODULE_PATHNAME', 'heapprof_test_doorbell' LANGUAGE C STRICT;

-- Busy-loop for the given seconds without checking for interrupts, like
-- code that does not reach CHECK_FOR_INTERRUPTS (for timeout tests).
CREATE FUNCTION heapprof_test_spin(seconds float8)
RETURNS void AS 'MODULE_PATHNAME', 'heapprof_test_spin' LANGUAGE C STRICT;

-- Free everything held; returns the bytes released.
CREATE FUNCTION heapprof_test_release()
RETURNS bigint AS 'MODULE_PATHNAME', 'heapprof_test_release' LANGUAGE C STRICT;

-- Run a statement and return its error as "SQLSTATE: message / HINT: hint",
-- so expected files show all three without source line numbers.
CREATE FUNCTION heapprof_test_error(query text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    state text;
    msg text;
    hint text;
BEGIN
    EXECUTE query;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT;
    RETURN state || ': ' || msg || E'\nHINT: ' || coalesce(nullif(hint, ''), '<none>');
END $$;
