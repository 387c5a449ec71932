/* heapprof--1.1--1.2.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION heapprof UPDATE TO '1.2'" to load this file. \quit

-- Every object is qualified, operators are pg_catalog's and the functions
-- written in SQL run with a fixed search_path ("Security Considerations for
-- Extension Scripts").  A fresh CREATE EXTENSION runs 1.0, 1.1 and then this
-- script, so an install and an update cannot differ.

-- Shared symbol indexes ---------------------------------------------------------
-- heapprof_status(): symbol_index_bytes is what the objects' symbol indexes
-- under $PGDATA/heapprof/symbols take (bounded by heapprof.symbol_index_limit);
-- symbol_index_hits and symbol_index_misses count this backend's objects
-- named from a shared index or indexed on its own (NULL for another pid).
-- The row type grows and the function keeps its oid, so grants stay.
ALTER TYPE @extschema@.heapprof_status_row
    ADD ATTRIBUTE symbol_index_bytes bigint,
    ADD ATTRIBUTE symbol_index_hits bigint,
    ADD ATTRIBUTE symbol_index_misses bigint;

CREATE OR REPLACE FUNCTION @extschema@.heapprof_status(pid integer DEFAULT NULL)
RETURNS @extschema@.heapprof_status_row
AS 'MODULE_PATHNAME', 'heapprof_status_1_2'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;
