-- A server without jemalloc: status explains, every other function refuses.
CREATE EXTENSION heapprof;
CREATE EXTENSION heapprof_test;
\pset format unaligned
\x on
SELECT pid = pg_backend_pid() AS own_pid, jemalloc, jemalloc_version ~ '^5\.' AS version_5, prof_enabled, active,
       sample_interval, allocated_bytes > 0 AS allocated, resident_bytes > 0 AS resident, hint
FROM heapprof_status();
\x off
SELECT heapprof_test_error('SELECT heapprof_enable()');
SELECT heapprof_test_error('SELECT heapprof_disable()');
SELECT heapprof_test_error('SELECT heapprof_reset()');
SELECT heapprof_test_error('SELECT heapprof_reset(65536)');
SELECT heapprof_test_error('SELECT * FROM heapprof_top()');
SELECT heapprof_test_error('SELECT * FROM heapprof_dump_dot()');
SELECT heapprof_test_error('SELECT heapprof_dump_raw()');
-- without pg_read_all_settings, the hint shows no configuration
CREATE ROLE hp_plain;
GRANT EXECUTE ON FUNCTION heapprof_status(integer) TO hp_plain;
SET ROLE hp_plain;
SELECT hint FROM heapprof_status();
RESET ROLE;
DROP OWNED BY hp_plain;
DROP ROLE hp_plain;
