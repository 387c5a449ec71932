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

-- Permissions: profiling exposes memory layout and costs speed -------------

REVOKE ALL ON FUNCTION heapprof_status() FROM PUBLIC;
REVOKE ALL ON FUNCTION heapprof_enable() FROM PUBLIC;
REVOKE ALL ON FUNCTION heapprof_disable() FROM PUBLIC;
REVOKE ALL ON FUNCTION heapprof_reset(bigint) FROM PUBLIC;

-- status shows no addresses, only sizes and settings
GRANT EXECUTE ON FUNCTION heapprof_status() TO pg_monitor;
