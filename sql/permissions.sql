-- No heapprof function is executable by PUBLIC; GRANT opens them per role.
CREATE EXTENSION IF NOT EXISTS heapprof;
CREATE EXTENSION IF NOT EXISTS heapprof_test;

CREATE TEMP VIEW heapprof_functions AS
SELECT p.oid::regprocedure AS fn
FROM pg_proc p
JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'heapprof';

SELECT count(*) >= 4 AS has_functions FROM heapprof_functions;
SELECT fn AS executable_by_public FROM heapprof_functions
WHERE has_function_privilege('public', fn, 'EXECUTE');

CREATE ROLE heapprof_alice LOGIN;
CREATE ROLE heapprof_monitor LOGIN IN ROLE pg_monitor;
SELECT fn AS executable_by_pg_monitor FROM heapprof_functions
WHERE has_function_privilege('pg_monitor', fn, 'EXECUTE') ORDER BY 1::text;

\pset format unaligned
SET ROLE heapprof_alice;
SELECT heapprof_test_error('SELECT heapprof_status()');
SELECT heapprof_test_error('SELECT heapprof_enable()');
RESET ROLE;

SET ROLE heapprof_monitor;
SELECT jemalloc FROM heapprof_status();
SELECT heapprof_test_error('SELECT heapprof_enable()');
RESET ROLE;

-- the documented way to let a monitoring role profile its own backend
GRANT EXECUTE ON FUNCTION heapprof_enable(integer), heapprof_disable(integer) TO heapprof_alice;
SET ROLE heapprof_alice;
SELECT heapprof_enable();
SELECT heapprof_disable();
RESET ROLE;

REVOKE EXECUTE ON FUNCTION heapprof_enable(integer), heapprof_disable(integer) FROM heapprof_alice;

-- Grants by workflow: every member function is in a workflow or is one of
-- the few left to superusers (heapprof_objects: pg_monitor), so a function
-- added later cannot be forgotten; a workflow lists each function once and
-- names only functions that exist.
\pset format aligned
SELECT fn::regproc::text AS in_no_workflow FROM heapprof_functions
WHERE fn NOT IN (SELECT function FROM heapprof_workflows()) ORDER BY 1;
SELECT workflow, function::regproc, count(*) FROM heapprof_workflows()
GROUP BY 1, 2 HAVING count(*) > 1;
SELECT workflow, string_agg(function::regproc::text, ' ' ORDER BY function::regproc::text) AS functions
FROM heapprof_workflows() GROUP BY 1 ORDER BY 1;
\pset format unaligned

-- one line per role and workflow; errors name what is wrong
SELECT count(*) AS granted FROM heapprof_grant('heapprof_alice', 'own');
SELECT heapprof_test_error($$SELECT heapprof_grant('heapprof_alice', 'everything')$$);
SELECT heapprof_test_error($$SELECT heapprof_grant('heapprof_nobody', 'own')$$);
SELECT heapprof_test_error($$SELECT heapprof_grant('public', 'own')$$);
SELECT heapprof_test_error($$SELECT heapprof_grant('heapprof_alice', NULL)$$);
-- only superusers and the extension's owner grant, even with EXECUTE
SET ROLE heapprof_alice;
SELECT heapprof_test_error($$SELECT heapprof_grant('heapprof_alice', 'trusted')$$);
RESET ROLE;
GRANT EXECUTE ON FUNCTION heapprof_grant(text, text[]), heapprof_grant_check(text, text[]) TO heapprof_alice;
SET ROLE heapprof_alice;
SELECT heapprof_test_error($$SELECT heapprof_grant('heapprof_alice', 'trusted')$$);
RESET ROLE;
REVOKE EXECUTE ON FUNCTION heapprof_grant(text, text[]), heapprof_grant_check(text, text[]) FROM heapprof_alice;
SET ROLE heapprof_alice;
-- the role profiles its own session with nothing else granted
SELECT heapprof_enable();
SELECT count(*) > 0 AS top_rows FROM heapprof_top(5);
SELECT count(*) > 0 AS dot_lines FROM heapprof_dump_dot();
SELECT heapprof_reset() > 0 AS reset, heapprof_disable();
SELECT heapprof_test_error('SELECT heapprof_snapshots()');
RESET ROLE;
-- a function a later version adds to a workflow (a new overload here) is
-- granted by the same line, and a DBA who sees an update through runs
-- nothing new
CREATE FUNCTION heapprof_snapshots(newopt boolean) RETURNS bigint LANGUAGE sql AS 'SELECT 1';
ALTER EXTENSION heapprof ADD FUNCTION heapprof_snapshots(boolean);
SELECT f::regproc::text AS granted FROM heapprof_grant('heapprof_alice', 'leaks') f ORDER BY 1;
SELECT role, workflow FROM heapprof_grants ORDER BY 2;
SET ROLE heapprof_alice;
SELECT heapprof_snapshots(true);
SELECT count(*) >= 0 AS listed FROM heapprof_snapshots();
RESET ROLE;
ALTER EXTENSION heapprof DROP FUNCTION heapprof_snapshots(boolean);
DROP FUNCTION heapprof_snapshots(boolean);
-- revoking leaks keeps what own still needs
SELECT f::regproc::text AS revoked FROM heapprof_revoke('heapprof_alice', 'leaks') f ORDER BY 1;
SELECT fn::regproc::text AS alice_keeps FROM heapprof_functions
WHERE has_function_privilege('heapprof_alice', fn, 'EXECUTE') ORDER BY 1;
SELECT count(*) AS revoked FROM heapprof_revoke('heapprof_alice');
SELECT fn AS alice_keeps FROM heapprof_functions
WHERE has_function_privilege('heapprof_alice', fn, 'EXECUTE');
SELECT count(*) AS rows_left FROM heapprof_grants;
-- no workflow at all is an error, not a silent no-op: it lists the workflows
SELECT heapprof_test_error($$SELECT heapprof_grant('heapprof_alice')$$);
SELECT heapprof_test_error($$SELECT heapprof_grant('heapprof_alice', VARIADIC '{}'::text[])$$);
SELECT heapprof_test_error($$SELECT heapprof_grant('heapprof_alice', VARIADIC NULL::text[])$$);
-- a role dropped without a revoke leaves no row behind the next grant
CREATE ROLE heapprof_gone;
SELECT count(*) > 0 AS granted FROM heapprof_grant('heapprof_gone', 'own');
DROP OWNED BY heapprof_gone;
DROP ROLE heapprof_gone;
SELECT count(*) > 0 AS granted FROM heapprof_grant('heapprof_alice', 'own');
SELECT role, workflow FROM heapprof_grants ORDER BY 1;
-- a revoke lists only what it removed: not a grant another grantor made
GRANT EXECUTE ON FUNCTION heapprof_snapshots() TO heapprof_monitor WITH GRANT OPTION;
SET ROLE heapprof_monitor;
GRANT EXECUTE ON FUNCTION heapprof_snapshots() TO heapprof_alice;
RESET ROLE;
SELECT count(*) AS listed FROM heapprof_revoke('heapprof_alice', 'leaks') f WHERE f = 'heapprof_snapshots()'::regprocedure;
SELECT has_function_privilege('heapprof_alice', 'heapprof_snapshots()', 'EXECUTE') AS granted_by_monitor;
REVOKE EXECUTE ON FUNCTION heapprof_snapshots() FROM heapprof_monitor CASCADE;
SELECT count(*) AS revoked FROM heapprof_revoke('heapprof_alice');
DROP ROLE heapprof_alice;
DROP ROLE heapprof_monitor;
