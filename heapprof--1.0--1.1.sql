/* heapprof--1.0--1.1.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION heapprof UPDATE TO '1.1'" to load this file. \quit

-- Every object is qualified, operators are pg_catalog's and the functions
-- written in SQL run with a fixed search_path ("Security Considerations for
-- Extension Scripts").  A fresh CREATE EXTENSION runs 1.0 and then this
-- script, so an install and an update cannot differ.

-- heapprof_status(): hint says only what profiling still needs (NULL when
-- it is usable and heapprof is preloaded); names_hint says what would name
-- code that reports label by address.  The row type grows and the function
-- keeps its oid, so the grants a DBA gave on it stay.
ALTER TYPE @extschema@.heapprof_status_row ADD ATTRIBUTE names_hint text;

CREATE OR REPLACE FUNCTION @extschema@.heapprof_status(pid integer DEFAULT NULL)
RETURNS @extschema@.heapprof_status_row
AS 'MODULE_PATHNAME', 'heapprof_status_1_1'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

-- Grants by workflow ------------------------------------------------------------
-- A workflow names functions, not signatures: a new option changes a
-- signature, never a name.  heapprof_grants remembers who holds which
-- workflow, so an update that re-creates a function or adds one to a
-- workflow grants it again to every holder (pg_dump keeps its rows).

CREATE TABLE @extschema@.heapprof_grants (
    role pg_catalog.regrole NOT NULL,
    workflow pg_catalog.text NOT NULL,
    PRIMARY KEY (role, workflow));
SELECT pg_catalog.pg_extension_config_dump('@extschema@.heapprof_grants', '');

-- The functions of each workflow, with their current signatures.
CREATE FUNCTION @extschema@.heapprof_workflows()
RETURNS TABLE(workflow text, function regprocedure)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT w.workflow, p.oid::pg_catalog.regprocedure
FROM (VALUES
    -- profile one's own sessions
    ('own', 'heapprof_status'), ('own', 'heapprof_enable'), ('own', 'heapprof_disable'),
    ('own', 'heapprof_reset'), ('own', 'heapprof_top'), ('own', 'heapprof_dump_dot'),
    -- own, and snapshots to diff against
    ('leaks', 'heapprof_status'), ('leaks', 'heapprof_enable'), ('leaks', 'heapprof_disable'),
    ('leaks', 'heapprof_reset'), ('leaks', 'heapprof_top'), ('leaks', 'heapprof_dump_dot'),
    ('leaks', 'heapprof_dump_text'), ('leaks', 'heapprof_stacks'), ('leaks', 'heapprof_snapshot'),
    ('leaks', 'heapprof_snapshots'), ('leaks', 'heapprof_drop_snapshot'),
    -- pid => N and pg_heapprof: --list, --enable, --disable, --report, --seconds
    ('processes', 'heapprof_status'), ('processes', 'heapprof_backends'),
    ('processes', 'heapprof_enable'), ('processes', 'heapprof_disable'),
    ('processes', 'heapprof_reset'), ('processes', 'heapprof_top'),
    ('processes', 'heapprof_dump_dot'), ('processes', 'heapprof_dump_text'),
    ('processes', 'heapprof_dump_collapsed'), ('processes', 'heapprof_dump_flamegraph'),
    ('processes', 'heapprof_stacks'), ('processes', 'heapprof_snapshot'),
    ('processes', 'heapprof_drop_snapshot'),
    -- the peak, statement captures, windows and exit dumps, in SQL and with
    -- pg_heapprof --peak, --allocations, --dump and --captures
    ('history', 'heapprof_status'), ('history', 'heapprof_peak'),
    ('history', 'heapprof_captures'), ('history', 'heapprof_allocations'),
    ('history', 'heapprof_dumps'), ('history', 'heapprof_top'),
    ('history', 'heapprof_dump_dot'), ('history', 'heapprof_dump_text'),
    ('history', 'heapprof_dump_collapsed'), ('history', 'heapprof_dump_flamegraph'),
    ('history', 'heapprof_stacks'),
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

-- The caller may grant: a superuser or a member of the extension's owner.
CREATE FUNCTION @extschema@.heapprof_grant_check(role text, workflows text[])
RETURNS pg_catalog.regrole
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r pg_catalog.regrole;
    bad text;
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
                  HINT = 'Name one or more of own, leaks, processes, history and trusted.';
    END IF;
    SELECT w INTO bad FROM pg_catalog.unnest(workflows) AS w
    WHERE w IS NULL OR w OPERATOR(pg_catalog.<>) ALL (ARRAY['own', 'leaks', 'processes', 'history', 'trusted'])
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'unknown heapprof workflow "%"', bad
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'The workflows are own, leaks, processes, history and trusted; heapprof_workflows() lists their functions.';
    END IF;
    RETURN r;
END
$$;

-- GRANT EXECUTE on every function of the workflows to role; returns the
-- functions granted.
CREATE FUNCTION @extschema@.heapprof_grant(role text, VARIADIC workflows text[])
RETURNS SETOF regprocedure
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r pg_catalog.regrole := @extschema@.heapprof_grant_check(role, workflows);
    f pg_catalog.regprocedure;
BEGIN
    -- rows of roles dropped since (a regrole holds no dependency) go first
    DELETE FROM @extschema@.heapprof_grants g
    WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_roles a WHERE a.oid OPERATOR(pg_catalog.=) g.role);
    INSERT INTO @extschema@.heapprof_grants
    SELECT DISTINCT r, w FROM pg_catalog.unnest(workflows) AS w
    ON CONFLICT DO NOTHING;
    FOR f IN SELECT DISTINCT w.function FROM @extschema@.heapprof_workflows() w
             WHERE w.workflow OPERATOR(pg_catalog.=) ANY (workflows) ORDER BY 1 LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %I', f, role);
        RETURN NEXT f;
    END LOOP;
END
$$;

-- Undo heapprof_grant(role, workflows) (every workflow when none is named):
-- REVOKE EXECUTE on those of their functions role holds that no workflow
-- role keeps needs; returns the functions revoked.
CREATE FUNCTION @extschema@.heapprof_revoke(role text, VARIADIC workflows text[] DEFAULT ARRAY['own', 'leaks', 'processes', 'history', 'trusted'])
RETURNS SETOF regprocedure
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r pg_catalog.regrole := @extschema@.heapprof_grant_check(role, workflows);
    f pg_catalog.regprocedure;
BEGIN
    DELETE FROM @extschema@.heapprof_grants g
    WHERE (g.role OPERATOR(pg_catalog.=) r AND g.workflow OPERATOR(pg_catalog.=) ANY (workflows))
       OR NOT EXISTS (SELECT FROM pg_catalog.pg_roles a WHERE a.oid OPERATOR(pg_catalog.=) g.role);
    FOR f IN SELECT DISTINCT w.function FROM @extschema@.heapprof_workflows() w,
                    pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
             WHERE w.workflow OPERATOR(pg_catalog.=) ANY (workflows)
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

REVOKE ALL ON FUNCTION
    @extschema@.heapprof_workflows(),
    @extschema@.heapprof_grant_check(text, text[]),
    @extschema@.heapprof_grant(text, text[]),
    @extschema@.heapprof_revoke(text, text[])
FROM PUBLIC;
REVOKE ALL ON TABLE @extschema@.heapprof_grants FROM PUBLIC;

COMMENT ON FUNCTION @extschema@.heapprof_workflows() IS
    'the functions heapprof_grant() grants for each workflow';
COMMENT ON FUNCTION @extschema@.heapprof_grant(text, text[]) IS
    'grant a role the heapprof functions of workflows own, leaks, processes, history, trusted';
COMMENT ON FUNCTION @extschema@.heapprof_revoke(text, text[]) IS
    'revoke what heapprof_grant() granted for these workflows (all when none is named)';
COMMENT ON TABLE @extschema@.heapprof_grants IS
    'the workflows heapprof_grant() gave each role';
