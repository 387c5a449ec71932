-- Other processes by pid (cluster (a) preloads heapprof).  dblink sessions
-- are the targets: idle between commands, busy while a query runs.
CREATE EXTENSION IF NOT EXISTS heapprof;
CREATE EXTENSION IF NOT EXISTS heapprof_test;
CREATE EXTENSION IF NOT EXISTS dblink;
SELECT format('host=%s port=%s dbname=%s', current_setting('unix_socket_directories'),
              current_setting('port'), current_database()) AS conn \gset
SELECT dblink_connect('target', :'conn' || ' user=postgres');
SELECT * FROM dblink('target', 'SELECT pg_backend_pid()') AS t(pid int) \gset target_
SELECT * FROM dblink('target', 'SELECT heapprof_reset()') AS t(r bigint);

-- an idle session answers at once; then its allocations are reported here
SELECT clock_timestamp() AS t0 \gset
SELECT heapprof_enable(pid => :target_pid);
SELECT active FROM heapprof_status(pid => :target_pid);
SELECT clock_timestamp() - :'t0' < interval '1 second' AS within_a_second;
SELECT active FROM heapprof_status();
SELECT * FROM dblink('target', 'SELECT heapprof_test_hold(4194304)') AS t(held bigint);
SELECT flat_bytes, function FROM heapprof_top(1, pid => :target_pid);
SELECT count(*) > 3 AS graph FROM heapprof_dump_dot(pid => :target_pid);
SELECT bytes, frames[1:4] FROM heapprof_stacks(pid => :target_pid) WHERE frames[1] = 'hpt_leaf_alloc';
SELECT pid = :target_pid AS target, backend_type, active FROM heapprof_backends() WHERE pid = :target_pid;

-- a snapshot of another process, and a diff against it
SELECT heapprof_snapshot('remote_before', pid => :target_pid) >= 4194304 AS snap;
SELECT * FROM dblink('target', 'SELECT heapprof_test_hold(2097152)') AS t(held bigint);
SELECT flat_bytes, function FROM heapprof_top(1, base => 'remote_before', pid => :target_pid);
SELECT pid = :target_pid AS of_target FROM heapprof_snapshots() WHERE name = 'remote_before';
SELECT heapprof_drop_snapshot('remote_before');

-- a busy session answers at its next interrupt check
SELECT dblink_send_query('target', 'SELECT pg_sleep(1)');
SELECT clock_timestamp() AS t0 \gset
SELECT active FROM heapprof_status(pid => :target_pid);
SELECT clock_timestamp() - :'t0' < interval '1 second' AS within_a_second;
SELECT * FROM dblink_get_result('target') AS t(r text);
SELECT * FROM dblink_get_result('target') AS t(r text);

-- reset and disable by pid
SELECT heapprof_reset(65536, pid => :target_pid);
SELECT sample_interval FROM heapprof_status(pid => :target_pid);
SELECT heapprof_reset(1, pid => :target_pid);
SELECT heapprof_disable(pid => :target_pid);

-- the checkpointer, an auxiliary process
SELECT prof_enabled, active FROM heapprof_status(pid => (SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'));

\pset format unaligned
-- not a server process heapprof can reach; contradictory arguments
SELECT heapprof_test_error('SELECT heapprof_status(pid => 1)');
SELECT heapprof_test_error('SELECT heapprof_status(pid => 2147483647)');
SELECT heapprof_test_error(format('SELECT * FROM heapprof_top(stored => ''x'', pid => %s)', :target_pid));

-- a target that does not check for interrupts: the request times out
-- (asked once it is surely spinning: before, it answers at its next check)
SELECT dblink_send_query('target', 'SELECT heapprof_test_spin(2)');
DO $$ BEGIN
  WHILE NOT EXISTS (SELECT FROM pg_stat_activity WHERE query = 'SELECT heapprof_test_spin(2)' AND state = 'active') LOOP
    PERFORM pg_stat_clear_snapshot();
    PERFORM pg_sleep(0.01);
  END LOOP;
END $$;
SELECT pg_sleep(0.2);
SET heapprof.request_timeout = '300ms';
SELECT regexp_replace(heapprof_test_error(format('SELECT heapprof_status(pid => %s)', :target_pid)),
                      'process \d+', 'process N');
RESET heapprof.request_timeout;
SELECT * FROM dblink_get_result('target') AS t(r text);
SELECT * FROM dblink_get_result('target') AS t(r text);

-- a target that exits while the request waits (its spin outlasts a slow killer);
-- the spin has begun before the request is made (an idle target would answer it).
-- Terminated, it leaves at its next interrupt check, where it may serve the
-- request first: either way the request ends then, never at its timeout
SELECT dblink_send_query('target', 'SELECT heapprof_test_spin(3)');
SELECT set_config('hp.target', :'target_pid', false) IS NOT NULL AS waiting;
DO $$ BEGIN
  FOR i IN 1..500 LOOP
    EXIT WHEN EXISTS (SELECT FROM pg_stat_activity WHERE pid = current_setting('hp.target')::int
                      AND state = 'active' AND query LIKE '%heapprof_test_spin%');
    PERFORM pg_sleep(0.01);
  END LOOP;
END $$;
SELECT dblink_connect('killer', :'conn' || ' user=postgres');
SELECT dblink_send_query('killer', format('SELECT pg_sleep(0.2), pg_terminate_backend(%s)', :target_pid));
SELECT r = 'no error' OR r LIKE '55000: process N exited before answering%Nothing was left behind%' AS ended
FROM regexp_replace(heapprof_test_error(format('SELECT heapprof_status(pid => %s)', :target_pid)),
                    'process \d+', 'process N') r;
SELECT * FROM dblink_get_result('killer') AS t(s text, killed bool);
SELECT * FROM dblink_get_result('killer') AS t(s text, killed bool);
SELECT dblink_disconnect('killer');
SELECT dblink_disconnect('target');

-- privileges: only the privileges of the target's role (or superuser) will do
CREATE ROLE heapprof_carol LOGIN;
GRANT EXECUTE ON FUNCTION heapprof_status(integer), heapprof_enable(integer) TO heapprof_carol;
SELECT dblink_connect('carol', :'conn' || ' user=heapprof_carol');
SELECT * FROM dblink('carol', 'SELECT pg_backend_pid()') AS t(pid int) \gset carol_
SELECT dblink_connect('admin', :'conn' || ' user=postgres');
SELECT * FROM dblink('admin', 'SELECT pg_backend_pid()') AS t(pid int) \gset admin_
SELECT pid AS checkpointer FROM pg_stat_activity WHERE backend_type = 'checkpointer' \gset
SET ROLE heapprof_carol;
SELECT regexp_replace(heapprof_test_error(format('SELECT heapprof_status(pid => %s)', :checkpointer)),
                      'process \d+', 'process N');
SELECT regexp_replace(heapprof_test_error(format('SELECT heapprof_enable(pid => %s)', :admin_pid)),
                      'process \d+', 'process N');
SELECT active FROM heapprof_status(pid => :carol_pid);
RESET ROLE;
SELECT dblink_disconnect('carol');
SELECT dblink_disconnect('admin');
REVOKE EXECUTE ON FUNCTION heapprof_status(integer), heapprof_enable(integer) FROM heapprof_carol;
DROP ROLE heapprof_carol;
\pset format aligned
