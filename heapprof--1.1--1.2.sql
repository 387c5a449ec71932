/* heapprof--1.1--1.2.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION heapprof UPDATE TO '1.2'" to load this file. \quit

-- Every object is qualified, operators are pg_catalog's and the functions
-- written in SQL run with a fixed search_path ("Security Considerations for
-- Extension Scripts").  A fresh CREATE EXTENSION runs 1.0, 1.1 and then this
-- script, so an install and an update cannot differ.

-- Reports: the stored profile to report on is named by stored => NAME ----------
-- (1.1 called it dump, a word that also names the heapprof_dump_* reports and
-- exit dumps).  An argument's name changes only by re-creating the function,
-- so each report's grants are kept aside and given back (by the extension's
-- owner, who runs the update): a DBA's own grants and the workflows' survive
-- the update alike -- to PUBLIC too, and a grant a role made WITH GRANT
-- OPTION made again by that role, in the order the ACL holds them (a grant
-- follows its grantor's), so that REVOKE ... CASCADE still reaches it.
CREATE TABLE @extschema@.heapprof_update_acl AS
SELECT p.proname::pg_catalog.text AS proname, a.grantee, a.is_grantable,
       CASE WHEN a.grantor OPERATOR(pg_catalog.=) p.proowner THEN NULL ELSE a.grantor END AS grantor, a.n
FROM pg_catalog.pg_proc p
JOIN pg_catalog.pg_depend d
  ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
 AND d.objid OPERATOR(pg_catalog.=) p.oid AND d.deptype OPERATOR(pg_catalog.=) 'e'
JOIN pg_catalog.pg_extension e
  ON e.oid OPERATOR(pg_catalog.=) d.refobjid AND e.extname OPERATOR(pg_catalog.=) 'heapprof',
LATERAL pg_catalog.aclexplode(p.proacl) WITH ORDINALITY a(grantor, grantee, privilege_type, is_grantable, n)
WHERE p.proname OPERATOR(pg_catalog.=) ANY (ARRAY['heapprof_dump_dot', 'heapprof_dump_text',
        'heapprof_dump_collapsed', 'heapprof_top', 'heapprof_stacks', 'heapprof_dump_flamegraph',
        'heapprof_dump_pprof'])
  AND a.grantee OPERATOR(pg_catalog.<>) p.proowner;

DROP FUNCTION @extschema@.heapprof_dump_dot(boolean, text, text, integer, double precision, double precision, boolean, boolean, text, boolean, text, integer, boolean, double precision);
DROP FUNCTION @extschema@.heapprof_dump_text(integer, boolean, text, text, boolean, boolean, text, boolean, text, integer, text, boolean, double precision);
DROP FUNCTION @extschema@.heapprof_dump_collapsed(boolean, text, text, boolean, text, boolean, text, integer, boolean, double precision);
DROP FUNCTION @extschema@.heapprof_top(integer, boolean, text, text, boolean, text, boolean, text, integer, text, boolean, double precision);
DROP FUNCTION @extschema@.heapprof_stacks(text, text, boolean, text, boolean, text, integer, boolean, double precision);
DROP FUNCTION @extschema@.heapprof_dump_flamegraph(boolean, text, text, boolean, text, boolean, text, integer, text, boolean, double precision);
DROP FUNCTION @extschema@.heapprof_dump_pprof(boolean, text, text, boolean, text, boolean, text, integer, boolean, double precision);

-- Options as in 1.0, with stored for dump:
--   stored         report on this stored profile (a snapshot, exit dump or
--                  statement capture; heapprof_stored() lists them) instead
--                  of a process now
-- and the labels every sample carries (heapprof.labels): the top-level
-- statement's queryid, as pg_stat_activity shows it, and the memory context
-- allocated in:
--   group_by       'function' (as before), 'query' or 'context': every stack
--                  under a root "query QUERYID" or "context NAME"
--   queryid        keep only the samples of this statement
--   context        keep only the samples allocated in this memory context
-- heapprof_stacks instead returns each stack's queryid (NULL: outside any
-- statement, or compute_query_id off) and context as columns, to filter and
-- group by in SQL (pg_heapprof --merge reads them too).
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
    stored text DEFAULT NULL,
    pid integer DEFAULT NULL,
    peak boolean DEFAULT false,
    seconds double precision DEFAULT NULL,
    group_by text DEFAULT 'function',
    queryid bigint DEFAULT NULL,
    context text DEFAULT NULL)
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
    stored text DEFAULT NULL,
    pid integer DEFAULT NULL,
    order_by text DEFAULT 'flat',
    peak boolean DEFAULT false,
    seconds double precision DEFAULT NULL,
    group_by text DEFAULT 'function',
    queryid bigint DEFAULT NULL,
    context text DEFAULT NULL)
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
    stored text DEFAULT NULL,
    pid integer DEFAULT NULL,
    peak boolean DEFAULT false,
    seconds double precision DEFAULT NULL,
    group_by text DEFAULT 'function',
    queryid bigint DEFAULT NULL,
    context text DEFAULT NULL)
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
    stored text DEFAULT NULL,
    pid integer DEFAULT NULL,
    order_by text DEFAULT 'flat',
    peak boolean DEFAULT false,
    seconds double precision DEFAULT NULL,
    group_by text DEFAULT 'function',
    queryid bigint DEFAULT NULL,
    context text DEFAULT NULL)
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
    stored text DEFAULT NULL,
    pid integer DEFAULT NULL,
    peak boolean DEFAULT false,
    seconds double precision DEFAULT NULL)
RETURNS TABLE(bytes bigint, objects bigint, frames text[], queryid bigint, context text)
AS 'MODULE_PATHNAME', 'heapprof_stacks'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.heapprof_dump_flamegraph(
    objects boolean DEFAULT false,
    focus text DEFAULT NULL,
    ignore text DEFAULT NULL,
    fold boolean DEFAULT true,
    base text DEFAULT NULL,
    drop_negative boolean DEFAULT false,
    stored text DEFAULT NULL,
    pid integer DEFAULT NULL,
    title text DEFAULT NULL,
    peak boolean DEFAULT false,
    seconds double precision DEFAULT NULL,
    group_by text DEFAULT 'function',
    queryid bigint DEFAULT NULL,
    context text DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'heapprof_dump_flamegraph'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.heapprof_dump_pprof(
    objects boolean DEFAULT false,
    focus text DEFAULT NULL,
    ignore text DEFAULT NULL,
    fold boolean DEFAULT true,
    base text DEFAULT NULL,
    drop_negative boolean DEFAULT false,
    stored text DEFAULT NULL,
    pid integer DEFAULT NULL,
    peak boolean DEFAULT false,
    seconds double precision DEFAULT NULL,
    group_by text DEFAULT 'function',
    queryid bigint DEFAULT NULL,
    context text DEFAULT NULL)
RETURNS bytea
AS 'MODULE_PATHNAME', 'heapprof_dump_pprof'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

REVOKE ALL ON FUNCTION
    @extschema@.heapprof_dump_dot(boolean, text, text, integer, double precision, double precision, boolean, boolean, text, boolean, text, integer, boolean, double precision, text, bigint, text),
    @extschema@.heapprof_dump_text(integer, boolean, text, text, boolean, boolean, text, boolean, text, integer, text, boolean, double precision, text, bigint, text),
    @extschema@.heapprof_dump_collapsed(boolean, text, text, boolean, text, boolean, text, integer, boolean, double precision, text, bigint, text),
    @extschema@.heapprof_top(integer, boolean, text, text, boolean, text, boolean, text, integer, text, boolean, double precision, text, bigint, text),
    @extschema@.heapprof_stacks(text, text, boolean, text, boolean, text, integer, boolean, double precision),
    @extschema@.heapprof_dump_flamegraph(boolean, text, text, boolean, text, boolean, text, integer, text, boolean, double precision, text, bigint, text),
    @extschema@.heapprof_dump_pprof(boolean, text, text, boolean, text, boolean, text, integer, boolean, double precision, text, bigint, text)
FROM PUBLIC;

-- Every stored profile a report reads by name, of every kind -------------------
CREATE FUNCTION @extschema@.heapprof_stored()
RETURNS TABLE(
    name text,
    kind text,
    pid integer,
    owner text,
    taken_at timestamptz,
    total_bytes bigint,
    file_bytes bigint)
AS 'MODULE_PATHNAME', 'heapprof_stored'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;
REVOKE ALL ON FUNCTION @extschema@.heapprof_stored() FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.heapprof_stored() IS
    'the stored profiles you may read with stored => name: snapshots, exit dumps, statement captures';

-- Live memory by statement: pg_stat_statements for the heap -------------------
-- Each sampled allocation carries the queryid of the statement that made it
-- (heapprof.labels; compute_query_id must be on, or auto with
-- pg_stat_statements loaded).  heapprof_query_bytes sums a profile's bytes
-- by queryid without naming a frame, with the text the process saw
-- (pg_stat_activity's, cut to 255 bytes, of at most 64 statements);
-- heapprof_queries takes the text from pg_stat_statements where it has the
-- queryid (which shows another role's text only where pg_stat_activity
-- would).  Options as for the reports: pid, stored, base, peak,
-- drop_negative.  The row with a NULL queryid is what was allocated outside
-- any statement.
CREATE FUNCTION @extschema@.heapprof_query_bytes(
    base text DEFAULT NULL,
    drop_negative boolean DEFAULT false,
    stored text DEFAULT NULL,
    pid integer DEFAULT NULL,
    peak boolean DEFAULT false)
RETURNS TABLE(queryid bigint, query text, bytes bigint, objects bigint)
AS 'MODULE_PATHNAME', 'heapprof_query_bytes'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.heapprof_queries(
    base text DEFAULT NULL,
    drop_negative boolean DEFAULT false,
    stored text DEFAULT NULL,
    pid integer DEFAULT NULL,
    peak boolean DEFAULT false)
RETURNS TABLE(queryid bigint, query text, bytes bigint, objects bigint, backends integer)
LANGUAGE plpgsql VOLATILE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    pgss pg_catalog.text;
BEGIN
    SELECT n.nspname INTO pgss
    FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace
    WHERE e.extname OPERATOR(pg_catalog.=) 'pg_stat_statements';
    IF pgss IS NOT NULL THEN
        BEGIN
            -- installed, but perhaps not loaded, or not granted
            EXECUTE pg_catalog.format('SELECT 1 FROM %I.pg_stat_statements(false) LIMIT 1', pgss);
        EXCEPTION WHEN object_not_in_prerequisite_state OR insufficient_privilege THEN
            pgss := NULL;
        END;
    END IF;
    IF pgss IS NULL THEN
        RETURN QUERY SELECT q.queryid, q.query, q.bytes, q.objects, 1
            FROM @extschema@.heapprof_query_bytes(base => $1, drop_negative => $2, stored => $3, pid => $4, peak => $5) q;
        RETURN;
    END IF;
    RETURN QUERY EXECUTE pg_catalog.format(
        'SELECT q.queryid, COALESCE((SELECT s.query FROM %I.pg_stat_statements s
                                     WHERE s.queryid OPERATOR(pg_catalog.=) q.queryid
                                     ORDER BY s.userid OPERATOR(pg_catalog.=) (SELECT r.oid FROM pg_catalog.pg_roles r
                                                                  WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER) DESC,
                                              s.calls DESC LIMIT 1), q.query),
                q.bytes, q.objects, 1
         FROM @extschema@.heapprof_query_bytes(base => $1, drop_negative => $2, stored => $3, pid => $4, peak => $5) q', pgss)
        USING $1, $2, $3, $4, $5;
END
$$;
REVOKE ALL ON FUNCTION @extschema@.heapprof_query_bytes(text, boolean, text, integer, boolean),
    @extschema@.heapprof_queries(text, boolean, text, integer, boolean) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.heapprof_queries(text, boolean, text, integer, boolean) IS
    'live heap bytes and objects by statement (queryid), with pg_stat_statements'' text';

-- heapprof_stored joins the workflows that read stored profiles.
CREATE OR REPLACE FUNCTION @extschema@.heapprof_workflows()
RETURNS TABLE(workflow text, function regprocedure)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT w.workflow, p.oid::pg_catalog.regprocedure
FROM (VALUES
    -- profile one's own sessions
    ('own', 'heapprof_status'), ('own', 'heapprof_enable'), ('own', 'heapprof_disable'),
    ('own', 'heapprof_reset'), ('own', 'heapprof_top'), ('own', 'heapprof_dump_dot'),
    ('own', 'heapprof_queries'), ('own', 'heapprof_query_bytes'),
    -- own, and snapshots to diff against
    ('leaks', 'heapprof_status'), ('leaks', 'heapprof_enable'), ('leaks', 'heapprof_disable'),
    ('leaks', 'heapprof_reset'), ('leaks', 'heapprof_top'), ('leaks', 'heapprof_dump_dot'),
    ('leaks', 'heapprof_dump_text'), ('leaks', 'heapprof_stacks'), ('leaks', 'heapprof_snapshot'),
    ('leaks', 'heapprof_snapshots'), ('leaks', 'heapprof_drop_snapshot'), ('leaks', 'heapprof_stored'),
    ('leaks', 'heapprof_queries'), ('leaks', 'heapprof_query_bytes'),
    -- pid => N and pg_heapprof: --list, --enable, --disable, --report, --seconds
    ('processes', 'heapprof_status'), ('processes', 'heapprof_backends'),
    ('processes', 'heapprof_enable'), ('processes', 'heapprof_disable'),
    ('processes', 'heapprof_reset'), ('processes', 'heapprof_top'),
    ('processes', 'heapprof_dump_dot'), ('processes', 'heapprof_dump_text'),
    ('processes', 'heapprof_dump_collapsed'), ('processes', 'heapprof_dump_flamegraph'),
    ('processes', 'heapprof_stacks'), ('processes', 'heapprof_snapshot'),
    ('processes', 'heapprof_drop_snapshot'), ('processes', 'heapprof_queries'),
    ('processes', 'heapprof_query_bytes'),
    -- the peak, statement captures, windows and exit dumps, in SQL and with
    -- pg_heapprof --peak, --allocations, --stored and --captures
    ('history', 'heapprof_status'), ('history', 'heapprof_peak'),
    ('history', 'heapprof_captures'), ('history', 'heapprof_allocations'),
    ('history', 'heapprof_dumps'), ('history', 'heapprof_stored'), ('history', 'heapprof_top'),
    ('history', 'heapprof_dump_dot'), ('history', 'heapprof_dump_text'),
    ('history', 'heapprof_dump_collapsed'), ('history', 'heapprof_dump_flamegraph'),
    ('history', 'heapprof_stacks'), ('history', 'heapprof_queries'), ('history', 'heapprof_query_bytes'),
    -- run-time addresses and the paths of everything mapped (pprof, raw,
    -- pg_heapprof --client-symbols): for roles trusted with /proc
    ('trusted', 'heapprof_dump_raw'), ('trusted', 'heapprof_dump_portable'),
    ('trusted', 'heapprof_dump_pprof')) AS w(workflow, proname)
JOIN pg_catalog.pg_proc p ON p.proname OPERATOR(pg_catalog.=) w.proname
JOIN pg_catalog.pg_depend d
  ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
 AND d.objid OPERATOR(pg_catalog.=) p.oid
 AND d.deptype OPERATOR(pg_catalog.=) 'e'
JOIN pg_catalog.pg_extension e
  ON e.oid OPERATOR(pg_catalog.=) d.refobjid
 AND e.extname OPERATOR(pg_catalog.=) 'heapprof'
ORDER BY w.workflow, p.oid::pg_catalog.regprocedure::pg_catalog.text
$$;

-- Give back what the re-created reports held, then every workflow holder what
-- its workflows now name (heapprof_stored included).  GRANT in an extension
-- script is recorded as the extension's initial privilege, which pg_dump
-- never dumps, so these grants would vanish in a dump and restore: the
-- initial privileges are put back as they were before the grants, as a fresh
-- install has them, and the grants stay the DBA's own.
DO LANGUAGE plpgsql $$
DECLARE
    g record;
    init pg_catalog.jsonb;
    me pg_catalog.text := CURRENT_USER;
BEGIN
    SELECT pg_catalog.jsonb_object_agg(i.objoid::pg_catalog.text, i.initprivs::pg_catalog.text) INTO init
    FROM pg_catalog.pg_init_privs i
    JOIN pg_catalog.pg_depend d
      ON d.classid OPERATOR(pg_catalog.=) i.classoid AND d.objid OPERATOR(pg_catalog.=) i.objoid
     AND d.deptype OPERATOR(pg_catalog.=) 'e'
    JOIN pg_catalog.pg_extension e
      ON e.oid OPERATOR(pg_catalog.=) d.refobjid AND e.extname OPERATOR(pg_catalog.=) 'heapprof'
    WHERE i.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass;
    FOR g IN SELECT p.oid::pg_catalog.regprocedure AS function, a.is_grantable,
                    CASE WHEN a.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                         ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)) END AS grantee,
                    pg_catalog.pg_get_userbyid(a.grantor) AS grantor
             FROM @extschema@.heapprof_update_acl a
             JOIN pg_catalog.pg_proc p ON p.proname OPERATOR(pg_catalog.=) a.proname
              AND p.pronamespace OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace
             WHERE a.grantee OPERATOR(pg_catalog.=) 0
                OR EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.oid OPERATOR(pg_catalog.=) a.grantee)
             ORDER BY a.proname, a.n LOOP
        IF g.grantor IS NOT NULL THEN
            EXECUTE pg_catalog.format('SET LOCAL ROLE %I', g.grantor);
        END IF;
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s%s',
            g.function, g.grantee, CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
        IF g.grantor IS NOT NULL THEN
            EXECUTE pg_catalog.format('SET LOCAL ROLE %I', me);
        END IF;
    END LOOP;
    FOR g IN SELECT DISTINCT w.function, pg_catalog.pg_get_userbyid(h.role) AS role
             FROM @extschema@.heapprof_grants h
             JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) h.role
             JOIN @extschema@.heapprof_workflows() w ON w.workflow OPERATOR(pg_catalog.=) h.workflow
             ORDER BY 1, 2 LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %I', g.function, g.role);
    END LOOP;
    UPDATE pg_catalog.pg_init_privs i
    SET initprivs = (init OPERATOR(pg_catalog.->>) i.objoid::pg_catalog.text)::pg_catalog.aclitem[]
    WHERE i.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
      AND init OPERATOR(pg_catalog.?) i.objoid::pg_catalog.text
      AND i.initprivs OPERATOR(pg_catalog.<>) (init OPERATOR(pg_catalog.->>) i.objoid::pg_catalog.text)::pg_catalog.aclitem[];
END
$$;
DROP TABLE @extschema@.heapprof_update_acl;

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
