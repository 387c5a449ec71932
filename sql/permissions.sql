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
DROP ROLE heapprof_alice;
DROP ROLE heapprof_monitor;
