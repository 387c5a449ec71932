/* heapprof--1.3--1.4.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION heapprof UPDATE TO '1.4'" to load this file. \quit

-- Every object is qualified, operators are pg_catalog's and the functions
-- written in SQL run with a fixed search_path ("Security Considerations for
-- Extension Scripts").  A fresh CREATE EXTENSION runs 1.0 to 1.3 and then
-- this script, so an install and an update cannot differ.

-- The heap history ---------------------------------------------------------------
-- With heapprof.history_interval set, a background worker keeps, at every
-- tick, what each sampling process holds: its sampled heap, and the top
-- functions, statements (queryid) and memory contexts, each kind's rest in
-- one row (src/pg/collector.c).  A process's rows are shown to roles that
-- pg_stat_activity shows its details to.
CREATE FUNCTION @extschema@.heapprof_history(since interval DEFAULT '1 hour')
RETURNS TABLE("time" timestamptz, pid integer, backend_start timestamptz, backend_type text,
              database name, role name, application text, what text, key text,
              bytes bigint, outside_bytes bigint)
AS 'MODULE_PATHNAME', 'heapprof_history'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- Leak suspects: names whose bytes grew steadily (Mann-Kendall at 1 %) at a
-- robust rate (Theil-Sen: a spike, or a fill that stopped early in the
-- window, does not count) of at least min_rate bytes per hour.
CREATE FUNCTION @extschema@.heapprof_growth(since interval DEFAULT '1 hour', per_process boolean DEFAULT false,
                                            min_rate bigint DEFAULT 1048576, kinds text DEFAULT 'all')
RETURNS TABLE(kind text, name text, bytes_per_hour bigint, outside_contexts boolean,
              outside_bytes_per_hour bigint, steadiness double precision, growing_since timestamptz,
              bytes bigint, processes integer, pid integer, backend_start timestamptz)
AS 'MODULE_PATHNAME', 'heapprof_growth'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

-- The fastest growers over time, a self-contained SVG.
CREATE FUNCTION @extschema@.heapprof_dump_timeline(since interval DEFAULT '1 hour', pid integer DEFAULT NULL,
                                                   kind text DEFAULT 'function', series integer DEFAULT 8)
RETURNS text
AS 'MODULE_PATHNAME', 'heapprof_dump_timeline'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

-- What the collector does, and what its folder holds.
CREATE FUNCTION @extschema@.heapprof_collector(OUT pid integer, OUT interval_seconds integer,
                                               OUT last_tick timestamptz, OUT processes integer,
                                               OUT answered integer, OUT tick_bytes bigint, OUT ticks bigint,
                                               OUT files bigint, OUT folder_bytes bigint,
                                               OUT error text, OUT error_at timestamptz)
RETURNS record
AS 'MODULE_PATHNAME', 'heapprof_collector'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- Monitoring: sums over every process at the latest tick, never a process,
-- a role or a statement's text (prometheus/heapprof-queries.yaml).
CREATE FUNCTION @extschema@.heapprof_metrics_heap()
RETURNS TABLE(database name, backend_type text, inside_bytes bigint, outside_bytes bigint, processes integer)
AS 'MODULE_PATHNAME', 'heapprof_metrics_heap'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.heapprof_metrics_functions(top integer DEFAULT 10)
RETURNS TABLE(function text, bytes bigint, outside_bytes bigint)
AS 'MODULE_PATHNAME', 'heapprof_metrics_functions'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.heapprof_metrics_growth(since interval DEFAULT '1 hour', top integer DEFAULT 10)
RETURNS TABLE(kind text, name text, outside_contexts boolean, bytes_per_hour double precision)
AS 'MODULE_PATHNAME', 'heapprof_metrics_growth'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

REVOKE ALL ON FUNCTION @extschema@.heapprof_history(interval),
    @extschema@.heapprof_growth(interval, boolean, bigint, text),
    @extschema@.heapprof_dump_timeline(interval, integer, text, integer),
    @extschema@.heapprof_collector(),
    @extschema@.heapprof_metrics_heap(),
    @extschema@.heapprof_metrics_functions(integer),
    @extschema@.heapprof_metrics_growth(interval, integer) FROM PUBLIC;

-- Workflows: history reads the heap history too; monitor is new ----------------
CREATE OR REPLACE FUNCTION @extschema@.heapprof_grant_check(role text, workflows text[])
RETURNS pg_catalog.regrole
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r pg_catalog.regrole;
    bad text;
    list constant text := 'The workflows: own (profile one''s own sessions), '
        'leaks (own, and snapshots to diff against), '
        'processes (any process by pid => N, and pg_heapprof), '
        'history (the peak, statement captures, allocation windows, exit dumps, the heap history), '
        'trusted (run-time addresses and mapped paths: pprof, raw dumps, pg_heapprof --client-symbols), '
        'monitor (sums over every process for a monitoring role such as an exporter''s: no process, role or statement text); '
        'heapprof_workflows() lists their functions.';
BEGIN
    IF NOT pg_catalog.pg_has_role(current_user,
            (SELECT e.extowner FROM pg_catalog.pg_extension e
             WHERE e.extname OPERATOR(pg_catalog.=) 'heapprof'), 'USAGE') THEN
        RAISE EXCEPTION 'permission denied to grant or revoke heapprof workflows'
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'A superuser or the owner of the extension heapprof runs heapprof_grant() and heapprof_revoke().';
    END IF;
    SELECT a.oid INTO r FROM pg_catalog.pg_roles a WHERE a.rolname OPERATOR(pg_catalog.=) role;
    IF r IS NULL THEN
        RAISE EXCEPTION 'role "%" does not exist', role
            USING ERRCODE = 'undefined_object',
                  HINT = 'Create the role first (CREATE ROLE); heapprof grants nothing to PUBLIC.';
    END IF;
    IF pg_catalog.cardinality(workflows) IS NOT DISTINCT FROM 0 OR workflows IS NULL THEN
        RAISE EXCEPTION 'no heapprof workflow given'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = pg_catalog.format('Name one or more, as in SELECT heapprof_grant(%L, ''own''). %s', role, list);
    END IF;
    -- the workflows are heapprof_workflows()'s: no second list to forget one in
    SELECT w INTO bad FROM pg_catalog.unnest(workflows) AS w
    WHERE w IS NULL OR NOT EXISTS (SELECT FROM @extschema@.heapprof_workflows() f
                                   WHERE f.workflow OPERATOR(pg_catalog.=) w)
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'unknown heapprof workflow "%"', bad
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = list;
    END IF;
    RETURN r;
END
$$;

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
    -- the heap history kept by the server, and pg_heapprof --growth, --timeline
    ('history', 'heapprof_history'), ('history', 'heapprof_growth'),
    ('history', 'heapprof_dump_timeline'), ('history', 'heapprof_collector'),
    -- sums over every process, for an exporter's role (prometheus/heapprof-queries.yaml)
    ('monitor', 'heapprof_metrics_heap'), ('monitor', 'heapprof_metrics_functions'),
    ('monitor', 'heapprof_metrics_growth'), ('monitor', 'heapprof_collector'),
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

-- heapprof_revoke(role) revokes every workflow, whatever workflows there are:
-- its default was a list of the workflows of 1.1, which left a new one out.
CREATE OR REPLACE FUNCTION @extschema@.heapprof_revoke(role text, VARIADIC workflows text[] DEFAULT NULL)
RETURNS SETOF regprocedure
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    named text[] := COALESCE(workflows,
        ARRAY(SELECT DISTINCT w.workflow FROM @extschema@.heapprof_workflows() w));
    r pg_catalog.regrole := @extschema@.heapprof_grant_check(role, named);
    f pg_catalog.regprocedure;
BEGIN
    DELETE FROM @extschema@.heapprof_grants g
    WHERE (g.role OPERATOR(pg_catalog.=) r AND g.workflow OPERATOR(pg_catalog.=) ANY (named))
       OR NOT EXISTS (SELECT FROM pg_catalog.pg_roles a WHERE a.oid OPERATOR(pg_catalog.=) g.role);
    FOR f IN SELECT DISTINCT w.function FROM @extschema@.heapprof_workflows() w,
                    pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
             WHERE w.workflow OPERATOR(pg_catalog.=) ANY (named)
               AND p.oid OPERATOR(pg_catalog.=) w.function AND a.grantee OPERATOR(pg_catalog.=) r
               -- what this REVOKE removes: the owner's grant, not another grantor's
               AND a.grantor OPERATOR(pg_catalog.=) p.proowner
             EXCEPT
             SELECT w.function FROM @extschema@.heapprof_workflows() w
             JOIN @extschema@.heapprof_grants g ON g.workflow OPERATOR(pg_catalog.=) w.workflow
             WHERE g.role OPERATOR(pg_catalog.=) r
             ORDER BY 1 LOOP
        EXECUTE pg_catalog.format('REVOKE EXECUTE ON FUNCTION %s FROM %I', f, role);
        RETURN NEXT f;
    END LOOP;
END
$$;

-- Every workflow holder gets what its workflows now name.  GRANT in an
-- extension script is recorded as the extension's initial privilege, which
-- pg_dump never dumps: the initial privileges are put back as they were
-- before the grants, as a fresh install has them, and the grants stay the
-- DBA's own.
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
