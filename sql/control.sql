-- Control of the calling backend's profiler, on a server started with
-- LD_PRELOAD=libjemalloc.so.2 MALLOC_CONF=prof:true,prof_active:false,lg_prof_sample:0
CREATE EXTENSION heapprof;
CREATE EXTENSION heapprof_test;

SELECT pid = pg_backend_pid() AS own_pid, jemalloc, jemalloc_version ~ '^5\.' AS version_5,
       prof_enabled, active, sample_interval, allocated_bytes > 0 AS allocated,
       active_bytes >= allocated_bytes AS active_ge_allocated,
       resident_bytes > 0 AS resident,
       hint IS NULL AS nothing_to_set_up,
       names_hint IS NULL OR names_hint LIKE 'No debug info for %' AS names_hint_ok
FROM heapprof_status();

-- debug info: postgres and heapprof.so among the objects, each with its
-- build-id and where its debug info is or would be (heapprof.so's own DWARF
-- when built -g from the tree, the .build-id path from the Debian package); a
-- names_hint exactly when some object lacks it, naming heapprof's own
-- -dbgsym package when heapprof.so is one of them
SELECT bool_or(object ~ '/postgres$') AS has_postgres, bool_or(object ~ '/heapprof\.so$') AS has_heapprof,
       bool_and(build_id ~ '^[0-9a-f]{16,}$') AS build_ids,
       bool_and(debug_info OR debug_file = '/usr/lib/debug/.build-id/' || substr(build_id, 1, 2) || '/'
                                           || substr(build_id, 3) || '.debug') AS where_looked,
       bool_or(object ~ '/heapprof\.so$' AND ((debug_file = object) = debug_info OR debug_file LIKE '/usr/lib/debug/%'))
         AS heapprof_where_found
FROM heapprof_objects();
SELECT missing_debug_info = coalesce((SELECT array_agg(regexp_replace(object, '^.*/', ''))
                                      FROM heapprof_objects() WHERE NOT debug_info), '{}') AS same_missing,
       (cardinality(missing_debug_info) > 0) = (names_hint IS NOT NULL) AS hint_iff_missing,
       ('heapprof.so' = ANY (missing_debug_info)) =
         coalesce(names_hint LIKE '%postgresql-' || current_setting('server_version_num')::int / 10000
                                || '-heapprof-dbgsym (make deb builds it%', false) AS names_own_dbgsym
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
