/* heapprof--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION heapprof" to load this file. \quit

-- Control of the calling backend's profiler ---------------------------------

CREATE FUNCTION heapprof_status(
    OUT pid integer,
    OUT jemalloc boolean,
    OUT jemalloc_version text,
    OUT prof_enabled boolean,
    OUT active boolean,
    OUT sample_interval bigint,
    OUT allocated_bytes bigint,
    OUT active_bytes bigint,
    OUT resident_bytes bigint,
    OUT hint text)
RETURNS record
AS 'MODULE_PATHNAME', 'heapprof_status'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION heapprof_enable()
RETURNS boolean
AS 'MODULE_PATHNAME', 'heapprof_enable'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION heapprof_disable()
RETURNS boolean
AS 'MODULE_PATHNAME', 'heapprof_disable'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION heapprof_reset(sample_interval bigint DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'heapprof_reset'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

-- Reports on the calling backend's heap profile -----------------------------
-- Each call dumps the live sampled allocations, unsamples them as jeprof does,
-- names every frame and aggregates.  objects => true counts objects instead
-- of bytes; focus / ignore keep / drop stacks with a frame matching a regular
-- expression, as for the ~ operator (name, file:line or address).  fold => true
-- (the default) charges memory to the caller of PostgreSQL's allocator
-- (palloc, MemoryContextAlloc*, AllocSetAlloc, ...) instead of to it.

CREATE FUNCTION heapprof_dump_dot(
    objects boolean DEFAULT false,
    focus text DEFAULT NULL,
    ignore text DEFAULT NULL,
    nodecount integer DEFAULT 80,
    nodefraction double precision DEFAULT 0.005,
    edgefraction double precision DEFAULT 0.001,
    show_bytes boolean DEFAULT false,
    fold boolean DEFAULT true)
RETURNS SETOF text
AS 'MODULE_PATHNAME', 'heapprof_dump_dot'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION heapprof_dump_text(
    n integer DEFAULT NULL,
    objects boolean DEFAULT false,
    focus text DEFAULT NULL,
    ignore text DEFAULT NULL,
    show_bytes boolean DEFAULT false,
    fold boolean DEFAULT true)
RETURNS SETOF text
AS 'MODULE_PATHNAME', 'heapprof_dump_text'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION heapprof_dump_collapsed(
    objects boolean DEFAULT false,
    focus text DEFAULT NULL,
    ignore text DEFAULT NULL,
    fold boolean DEFAULT true)
RETURNS SETOF text
AS 'MODULE_PATHNAME', 'heapprof_dump_collapsed'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION heapprof_top(
    n integer DEFAULT 20,
    objects boolean DEFAULT false,
    focus text DEFAULT NULL,
    ignore text DEFAULT NULL,
    fold boolean DEFAULT true)
RETURNS TABLE(
    rank integer,
    flat_bytes bigint,
    flat_pct double precision,
    sum_pct double precision,
    cum_bytes bigint,
    cum_pct double precision,
    function text,
    location text)
AS 'MODULE_PATHNAME', 'heapprof_top'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION heapprof_stacks(
    focus text DEFAULT NULL,
    ignore text DEFAULT NULL,
    fold boolean DEFAULT true)
RETURNS TABLE(bytes bigint, objects bigint, frames text[])
AS 'MODULE_PATHNAME', 'heapprof_stacks'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION heapprof_dump_raw()
RETURNS text
AS 'MODULE_PATHNAME', 'heapprof_dump_raw'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- Drop this backend's symbol caches (they are rebuilt on the next report).
CREATE FUNCTION heapprof_forget_symbols()
RETURNS bigint
AS 'MODULE_PATHNAME', 'heapprof_forget_symbols'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- Permissions: profiling exposes memory layout and costs speed -------------

REVOKE ALL ON FUNCTION heapprof_status() FROM PUBLIC;
REVOKE ALL ON FUNCTION heapprof_enable() FROM PUBLIC;
REVOKE ALL ON FUNCTION heapprof_disable() FROM PUBLIC;
REVOKE ALL ON FUNCTION heapprof_reset(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION heapprof_dump_dot(boolean, text, text, integer, double precision, double precision, boolean, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION heapprof_dump_text(integer, boolean, text, text, boolean, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION heapprof_dump_collapsed(boolean, text, text, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION heapprof_top(integer, boolean, text, text, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION heapprof_stacks(text, text, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION heapprof_dump_raw() FROM PUBLIC;
REVOKE ALL ON FUNCTION heapprof_forget_symbols() FROM PUBLIC;

-- status shows no addresses, only sizes and settings
GRANT EXECUTE ON FUNCTION heapprof_status() TO pg_monitor;
