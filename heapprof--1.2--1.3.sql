/* heapprof--1.2--1.3.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION heapprof UPDATE TO '1.3'" to load this file. \quit

-- Every object is qualified, operators are pg_catalog's and the functions
-- written in SQL run with a fixed search_path ("Security Considerations for
-- Extension Scripts").  A fresh CREATE EXTENSION runs 1.0 to 1.2 and then
-- this script, so an install and an update cannot differ.  Functions are
-- replaced in place (CREATE OR REPLACE keeps their oid, grants and comment).

-- Grants that say what to do ----------------------------------------------------
-- heapprof_grant(role) without a workflow, and an unknown workflow, answer
-- with the workflows and what each is for, and the call that grants one.
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
        'history (the peak, statement captures, allocation windows, exit dumps), '
        'trusted (run-time addresses and mapped paths: pprof, raw dumps, pg_heapprof --client-symbols); '
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
    SELECT w INTO bad FROM pg_catalog.unnest(workflows) AS w
    WHERE w IS NULL OR w OPERATOR(pg_catalog.<>) ALL (ARRAY['own', 'leaks', 'processes', 'history', 'trusted'])
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'unknown heapprof workflow "%"', bad
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = list;
    END IF;
    RETURN r;
END
$$;

-- The workflows may be left out: heapprof_grant_check() then lists them.
CREATE OR REPLACE FUNCTION @extschema@.heapprof_grant(role text, VARIADIC workflows text[] DEFAULT NULL)
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
