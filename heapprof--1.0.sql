/* heapprof--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION heapprof" to load this file. \quit

-- Control of the calling backend's profiler ---------------------------------

-- Every function takes pid => N to act on server process N instead of the
-- calling backend (needs heapprof in shared_preload_libraries).

-- A named row type: its pid column and the pid parameter may share a name.
CREATE TYPE @extschema@.heapprof_status_row AS (
    pid integer,
    jemalloc boolean,
    jemalloc_version text,
    prof_enabled boolean,
    active boolean,
    sample_interval bigint,
    allocated_bytes bigint,
    active_bytes bigint,
    resident_bytes bigint,
    sampling_since timestamptz,
    peak_bytes bigint,
    peak_at timestamptz,
    missing_debug_info text[],
    hint text);

CREATE FUNCTION @extschema@.heapprof_status(pid integer DEFAULT NULL)
RETURNS @extschema@.heapprof_status_row
AS 'MODULE_PATHNAME', 'heapprof_status'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

-- postgres and the libraries loaded from its pkglibdir (in this backend):
-- whether their debug info is on this machine, or where it would be.
CREATE FUNCTION @extschema@.heapprof_objects(
    OUT object text, OUT build_id text, OUT debug_info boolean, OUT debug_file text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'heapprof_objects'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.heapprof_enable(pid integer DEFAULT NULL)
RETURNS boolean
AS 'MODULE_PATHNAME', 'heapprof_enable'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.heapprof_disable(pid integer DEFAULT NULL)
RETURNS boolean
AS 'MODULE_PATHNAME', 'heapprof_disable'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.heapprof_reset(sample_interval bigint DEFAULT NULL, pid integer DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'heapprof_reset'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

-- The processes heapprof can reach, to pick a pid.  active,
-- allocated_bytes and sampling_since are what a process last published
-- (NULL until it took part in heapprof); they and state are NULL where
-- pg_stat_activity would not show the caller the state.
CREATE FUNCTION @extschema@.heapprof_backends()
RETURNS TABLE(
    pid integer,
    backend_type text,
    usename text,
    application_name text,
    state text,
    active boolean,
    allocated_bytes bigint,
    sampling_since timestamptz)
AS 'MODULE_PATHNAME', 'heapprof_backends'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- The requests to other processes under way (superusers: who holds the slots).
CREATE FUNCTION @extschema@.heapprof_requests()
RETURNS TABLE(
    requester integer,
    requester_role text,
    target integer,
    operation text,
    state text,
    since timestamptz)
AS 'MODULE_PATHNAME', 'heapprof_requests'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- Reports ---------------------------------------------------------------------
-- Each report dumps the calling backend's live sampled allocations (or reads
-- the stored profile named by dump), unsamples them as jeprof does, names
-- every frame and aggregates.  Options:
--   objects        count objects instead of bytes
--   focus, ignore  keep / drop stacks with a frame matching a regular
--                  expression, as for the ~ operator (name, file:line,
--                  object+0xOFFSET; never a run-time address)
--   fold           charge memory to the caller of PostgreSQL's allocator
--                  (palloc, MemoryContextAlloc*, AllocSetAlloc, ...)
--   base           subtract this stored profile, per symbolized stack
--   drop_negative  with base: shrinking stacks count as 0
--   dump           report on this stored profile instead of the backend now
--   pid            report on server process pid instead of the calling backend
--   peak           report on the profile taken when the process held the most
--                  (since profiling was enabled or reset; heapprof.track_peak)
--   seconds        report on what process pid allocates during a window of
--                  this many seconds instead of what it holds

CREATE FUNCTION @extschema@.heapprof_dump_dot(
    objects boolean DEFAULT false,
    focus text DEFAULT NULL,
    ignore text DEFAULT NULL,
    nodecount integer DEFAULT 80,
    nodefraction double precision DEFAULT 0.005,
    edgefraction double precision DEFAULT 0.001,
    show_bytes boolean DEFAULT false,
    fold boolean DEFAULT true,
    base text DEFAULT NULL,
    drop_negative boolean DEFAULT false,
    dump text DEFAULT NULL,
    pid integer DEFAULT NULL,
    peak boolean DEFAULT false,
    seconds double precision DEFAULT NULL)
RETURNS SETOF text
AS 'MODULE_PATHNAME', 'heapprof_dump_dot'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.heapprof_dump_text(
    n integer DEFAULT NULL,
    objects boolean DEFAULT false,
    focus text DEFAULT NULL,
    ignore text DEFAULT NULL,
    show_bytes boolean DEFAULT false,
    fold boolean DEFAULT true,
    base text DEFAULT NULL,
    drop_negative boolean DEFAULT false,
    dump text DEFAULT NULL,
    pid integer DEFAULT NULL,
    order_by text DEFAULT 'flat',
    peak boolean DEFAULT false,
    seconds double precision DEFAULT NULL)
RETURNS SETOF text
AS 'MODULE_PATHNAME', 'heapprof_dump_text'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.heapprof_dump_collapsed(
    objects boolean DEFAULT false,
    focus text DEFAULT NULL,
    ignore text DEFAULT NULL,
    fold boolean DEFAULT true,
    base text DEFAULT NULL,
    drop_negative boolean DEFAULT false,
    dump text DEFAULT NULL,
    pid integer DEFAULT NULL,
    peak boolean DEFAULT false,
    seconds double precision DEFAULT NULL)
RETURNS SETOF text
AS 'MODULE_PATHNAME', 'heapprof_dump_collapsed'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.heapprof_top(
    n integer DEFAULT 20,
    objects boolean DEFAULT false,
    focus text DEFAULT NULL,
    ignore text DEFAULT NULL,
    fold boolean DEFAULT true,
    base text DEFAULT NULL,
    drop_negative boolean DEFAULT false,
    dump text DEFAULT NULL,
    pid integer DEFAULT NULL,
    order_by text DEFAULT 'flat',
    peak boolean DEFAULT false,
    seconds double precision DEFAULT NULL)
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

CREATE FUNCTION @extschema@.heapprof_stacks(
    focus text DEFAULT NULL,
    ignore text DEFAULT NULL,
    fold boolean DEFAULT true,
    base text DEFAULT NULL,
    drop_negative boolean DEFAULT false,
    dump text DEFAULT NULL,
    pid integer DEFAULT NULL,
    peak boolean DEFAULT false,
    seconds double precision DEFAULT NULL)
RETURNS TABLE(bytes bigint, objects bigint, frames text[])
AS 'MODULE_PATHNAME', 'heapprof_stacks'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

-- heapprof_top's rows for the heap when the process held the most.
CREATE FUNCTION @extschema@.heapprof_peak(
    n integer DEFAULT 20,
    objects boolean DEFAULT false,
    focus text DEFAULT NULL,
    ignore text DEFAULT NULL,
    fold boolean DEFAULT true,
    base text DEFAULT NULL,
    drop_negative boolean DEFAULT false,
    pid integer DEFAULT NULL,
    order_by text DEFAULT 'flat')
RETURNS TABLE(
    rank integer,
    flat_bytes bigint,
    flat_pct double precision,
    sum_pct double precision,
    cum_bytes bigint,
    cum_pct double precision,
    function text,
    location text)
AS 'MODULE_PATHNAME', 'heapprof_peak'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

-- What process pid allocates during a window, per stack, and the part of it
-- freed again before the window ended (temporary).
CREATE FUNCTION @extschema@.heapprof_allocations(
    seconds double precision DEFAULT 10,
    pid integer DEFAULT NULL,
    focus text DEFAULT NULL,
    ignore text DEFAULT NULL,
    fold boolean DEFAULT true)
RETURNS TABLE(
    bytes bigint,
    objects bigint,
    temporary_bytes bigint,
    temporary_pct double precision,
    frames text[])
AS 'MODULE_PATHNAME', 'heapprof_allocations'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

-- One self-contained interactive SVG flame graph (search, zoom, tooltips);
-- with base, colors show growth (red) and shrinkage (blue).
CREATE FUNCTION @extschema@.heapprof_dump_flamegraph(
    objects boolean DEFAULT false,
    focus text DEFAULT NULL,
    ignore text DEFAULT NULL,
    fold boolean DEFAULT true,
    base text DEFAULT NULL,
    drop_negative boolean DEFAULT false,
    dump text DEFAULT NULL,
    pid integer DEFAULT NULL,
    title text DEFAULT NULL,
    peak boolean DEFAULT false,
    seconds double precision DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'heapprof_dump_flamegraph'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

-- gzip-compressed pprof protobuf (inuse_objects, inuse_space), for go tool
-- pprof and speedscope; objects picks the default sample type.
CREATE FUNCTION @extschema@.heapprof_dump_pprof(
    objects boolean DEFAULT false,
    focus text DEFAULT NULL,
    ignore text DEFAULT NULL,
    fold boolean DEFAULT true,
    base text DEFAULT NULL,
    drop_negative boolean DEFAULT false,
    dump text DEFAULT NULL,
    pid integer DEFAULT NULL,
    peak boolean DEFAULT false,
    seconds double precision DEFAULT NULL)
RETURNS bytea
AS 'MODULE_PATHNAME', 'heapprof_dump_pprof'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.heapprof_dump_raw(pid integer DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'heapprof_dump_raw'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

-- The raw dump after heapprof's "%" lines (build-ids of the loaded objects):
-- what heapprof-report needs to name it on another machine.
CREATE FUNCTION @extschema@.heapprof_dump_portable(pid integer DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'heapprof_dump_portable'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

-- Drop this backend's symbol caches (they are rebuilt on the next report).
CREATE FUNCTION @extschema@.heapprof_forget_symbols()
RETURNS bigint
AS 'MODULE_PATHNAME', 'heapprof_forget_symbols'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- Stored profiles: snapshots and exit dumps -------------------------------------

-- Keep this backend's profile now under a name (for the session; persist
-- also writes $PGDATA/heapprof/snapshots/NAME.heap).  Returns its total bytes.
CREATE FUNCTION @extschema@.heapprof_snapshot(name text, persist boolean DEFAULT false, pid integer DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'heapprof_snapshot'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.heapprof_snapshots()
RETURNS TABLE(
    name text,
    pid integer,
    owner text,
    taken_at timestamptz,
    total_bytes bigint,
    samples bigint,
    persisted boolean)
AS 'MODULE_PATHNAME', 'heapprof_snapshots'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.heapprof_drop_snapshot(name text)
RETURNS void
AS 'MODULE_PATHNAME', 'heapprof_drop_snapshot'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

-- Profiles left by backends that exited above heapprof.dump_on_exit_threshold.
CREATE FUNCTION @extschema@.heapprof_dumps()
RETURNS TABLE(
    name text,
    pid integer,
    backend_type text,
    owner text,
    taken_at timestamptz,
    total_bytes bigint,
    file_bytes bigint)
AS 'MODULE_PATHNAME', 'heapprof_dumps'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- Statements that left memory behind (heapprof.capture_min_growth); every
-- report reads one with dump => name.
CREATE FUNCTION @extschema@.heapprof_captures()
RETURNS TABLE(
    name text,
    pid integer,
    usename text,
    datname text,
    queryid bigint,
    query text,
    captured_at timestamptz,
    growth_bytes bigint,
    total_bytes bigint,
    partial boolean)
AS 'MODULE_PATHNAME', 'heapprof_captures'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- Permissions: profiling exposes memory layout and costs speed -------------
-- Every object is qualified and no expression is evaluated, so nothing a
-- role planted in a schema on the search_path can run here ("Security
-- Considerations for Extension Scripts").

REVOKE ALL ON FUNCTION
    @extschema@.heapprof_status(integer),
    @extschema@.heapprof_objects(),
    @extschema@.heapprof_enable(integer),
    @extschema@.heapprof_disable(integer),
    @extschema@.heapprof_reset(bigint, integer),
    @extschema@.heapprof_backends(),
    @extschema@.heapprof_requests(),
    @extschema@.heapprof_dump_dot(boolean, text, text, integer, double precision, double precision, boolean, boolean, text, boolean, text, integer, boolean, double precision),
    @extschema@.heapprof_dump_text(integer, boolean, text, text, boolean, boolean, text, boolean, text, integer, text, boolean, double precision),
    @extschema@.heapprof_dump_collapsed(boolean, text, text, boolean, text, boolean, text, integer, boolean, double precision),
    @extschema@.heapprof_top(integer, boolean, text, text, boolean, text, boolean, text, integer, text, boolean, double precision),
    @extschema@.heapprof_stacks(text, text, boolean, text, boolean, text, integer, boolean, double precision),
    @extschema@.heapprof_dump_flamegraph(boolean, text, text, boolean, text, boolean, text, integer, text, boolean, double precision),
    @extschema@.heapprof_dump_pprof(boolean, text, text, boolean, text, boolean, text, integer, boolean, double precision),
    @extschema@.heapprof_dump_raw(integer),
    @extschema@.heapprof_dump_portable(integer),
    @extschema@.heapprof_forget_symbols(),
    @extschema@.heapprof_snapshot(text, boolean, integer),
    @extschema@.heapprof_snapshots(),
    @extschema@.heapprof_drop_snapshot(text),
    @extschema@.heapprof_dumps(),
    @extschema@.heapprof_peak(integer, boolean, text, text, boolean, text, boolean, integer, text),
    @extschema@.heapprof_allocations(double precision, integer, text, text, boolean),
    @extschema@.heapprof_captures()
FROM PUBLIC;

-- status shows no addresses, only sizes and settings
GRANT EXECUTE ON FUNCTION @extschema@.heapprof_status(integer) TO pg_monitor;
-- file names and build-ids, no addresses
GRANT EXECUTE ON FUNCTION @extschema@.heapprof_objects() TO pg_monitor;
