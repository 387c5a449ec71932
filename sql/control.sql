-- Control of the calling backend's profiler, on a server started with
-- LD_PRELOAD=libjemalloc.so.2 MALLOC_CONF=prof:true,prof_active:false,lg_prof_sample:0
CREATE EXTENSION heapprof;
CREATE EXTENSION heapprof_test;

SELECT pid = pg_backend_pid() AS own_pid, jemalloc, jemalloc_version ~ '^5\.' AS version_5,
       prof_enabled, active, sample_interval, allocated_bytes > 0 AS allocated,
       active_bytes >= allocated_bytes AS active_ge_allocated,
       resident_bytes > 0 AS resident, hint
FROM heapprof_status();

-- allocated_bytes is live: holding 8 MiB shows up
SELECT allocated_bytes AS before FROM heapprof_status() \gset
SELECT heapprof_test_hold(8 * 1048576);
SELECT (allocated_bytes - :before) / 1048576.0 BETWEEN 7 AND 9 AS grew_8mib FROM heapprof_status();
SELECT heapprof_test_release();

SELECT heapprof_enable();
SELECT heapprof_enable();   -- idempotent
SELECT active FROM heapprof_status();

-- Profiling is per backend: another session is still inactive.
CREATE EXTENSION dblink;
SELECT format('host=%s port=%s dbname=%s user=postgres',
              current_setting('unix_socket_directories'), current_setting('port'),
              current_database()) AS other \gset
SELECT other_pid <> pg_backend_pid() AS other_backend, other_active
FROM dblink(:'other', 'SELECT pid, active FROM heapprof_status()')
     AS t(other_pid int, other_active bool);
SELECT active FROM heapprof_status();

SELECT heapprof_disable();
SELECT active FROM heapprof_status();

-- reset keeps the interval, or sets a new one
SELECT heapprof_reset();
SELECT heapprof_reset(65536);
SELECT sample_interval FROM heapprof_status();
SELECT heapprof_reset(sample_interval => 1);
SELECT heapprof_reset(NULL);
\pset format unaligned
SELECT heapprof_test_error('SELECT heapprof_reset(0)');
SELECT heapprof_test_error('SELECT heapprof_reset(3)');
SELECT heapprof_test_error('SELECT heapprof_reset(-524288)');
SELECT heapprof_test_error('SELECT heapprof_reset(2147483648)');
SELECT sample_interval FROM heapprof_status();
