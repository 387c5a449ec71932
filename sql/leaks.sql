-- Leak hunting: snapshots, diffs against them, stored profiles (lg_prof_sample:0).
CREATE EXTENSION IF NOT EXISTS heapprof;
CREATE EXTENSION IF NOT EXISTS heapprof_test;
SELECT heapprof_reset();
SELECT heapprof_enable();
SELECT heapprof_snapshot('before') >= 0 AS taken;

-- a backend leaking in a loop: the leaking call site tops the diff, exactly
SELECT sum(heapprof_test_hold(1048576)) > 0 AS leaked FROM generate_series(1, 5);
SELECT rank, flat_bytes, function FROM heapprof_top(1, base => 'before');
SELECT bytes, objects, frames[1:4] FROM heapprof_stacks(base => 'before') ORDER BY bytes DESC LIMIT 1;
SELECT count(*) FROM heapprof_dump_collapsed(base => 'before') AS line
WHERE line ~ ';heapprof_test_hold;hpt_outer;hpt_middle;hpt_leaf_alloc 5242880$';
SELECT count(*) FROM heapprof_dump_dot(base => 'before') AS line WHERE line ~ 'hpt_leaf_alloc\\n5\.0 ';

-- freed memory shows negative; drop_negative counts it as 0
SELECT heapprof_snapshot('leaky', persist => true) >= 5242880 AS holds_leak;
SELECT heapprof_test_release();
SELECT flat_bytes FROM heapprof_top(1000, base => 'leaky') WHERE function = 'hpt_leaf_alloc';
SELECT count(*) FROM heapprof_top(1000, base => 'leaky', drop_negative => true)
WHERE function = 'hpt_leaf_alloc' AND flat_bytes <> 0;

-- a stored profile can be reported on, and listed
SELECT flat_bytes, function FROM heapprof_top(1, stored => 'leaky');
SELECT name, pid = pg_backend_pid() AS mine, owner, total_bytes > 0 AS has_bytes,
       samples > 0 AS has_samples, persisted, taken_at <= now() AS taken_before
FROM heapprof_snapshots() ORDER BY name;
SELECT f FROM pg_ls_dir('heapprof/snapshots') AS f ORDER BY f;

-- another session sees the persisted snapshot only
CREATE EXTENSION IF NOT EXISTS dblink;
SELECT format('host=%s port=%s dbname=%s user=postgres',
              current_setting('unix_socket_directories'), current_setting('port'),
              current_database()) AS other \gset
SELECT * FROM dblink(:'other', 'SELECT name, persisted FROM heapprof_snapshots() ORDER BY name')
     AS t(name text, persisted bool);
SELECT * FROM dblink(:'other', 'SELECT flat_bytes FROM heapprof_top(1, stored => ''leaky'')') AS t(flat bigint);

-- errors
\pset format unaligned
SELECT heapprof_test_error('SELECT heapprof_snapshot(''before'')');
SELECT heapprof_test_error('SELECT heapprof_snapshot(''../etc/passwd'')');
SELECT heapprof_test_error('SELECT heapprof_snapshot(NULL)');
SELECT heapprof_test_error('SELECT heapprof_drop_snapshot(NULL)');
SELECT heapprof_test_error('SELECT * FROM heapprof_top(base => ''nosuch'')');
SELECT heapprof_test_error('SELECT * FROM heapprof_top(stored => ''nosuch'')');
SELECT heapprof_test_error('SELECT heapprof_drop_snapshot(''nosuch'')');
SELECT heapprof_test_error('SELECT * FROM heapprof_top(drop_negative => NULL)');
-- a corrupt stored file is an error, not a crash
DO $$ BEGIN
  EXECUTE format('COPY (SELECT ''not a heap profile'') TO %L',
                 current_setting('data_directory') || '/heapprof/snapshots/corrupt.heap');
END $$;
SELECT heapprof_test_error('SELECT * FROM heapprof_top(stored => ''corrupt'')');
SELECT name, total_bytes, samples FROM heapprof_snapshots() WHERE name = 'corrupt';
SELECT heapprof_drop_snapshot('corrupt');
\pset format aligned

-- privileges: a role reads only the stored profiles of roles it has the privileges of
CREATE ROLE heapprof_alice;
CREATE ROLE heapprof_bob;
GRANT EXECUTE ON FUNCTION heapprof_enable(integer), heapprof_snapshot(text, boolean, integer), heapprof_snapshots(),
  heapprof_drop_snapshot(text), heapprof_top
  TO heapprof_alice, heapprof_bob;
SET ROLE heapprof_alice;
SELECT heapprof_snapshot('alice_snap', persist => true) >= 0 AS taken;
SELECT name, owner FROM heapprof_snapshots() ORDER BY name;
RESET ROLE;
SET ROLE heapprof_bob;
SELECT name FROM heapprof_snapshots() WHERE persisted ORDER BY name;
\pset format unaligned
SELECT heapprof_test_error('SELECT * FROM heapprof_top(stored => ''alice_snap'')');
SELECT heapprof_test_error('SELECT heapprof_drop_snapshot(''alice_snap'')');
SELECT heapprof_test_error('SELECT * FROM heapprof_top(base => ''leaky'')');
\pset format aligned
RESET ROLE;
SELECT name, owner FROM heapprof_snapshots() WHERE name = 'alice_snap';
SELECT heapprof_drop_snapshot('alice_snap');
SELECT heapprof_drop_snapshot('before');
-- the jemalloc binding initialises itself: a fresh session's first report,
-- on a stored profile, measures its symbol caches against the limit
\c
SET heapprof.symbol_cache_limit = 0;
SELECT count(*) > 0 AS has_rows FROM heapprof_top(stored => 'leaky');
SELECT heapprof_forget_symbols() AS kept_beyond_limit;
SELECT heapprof_drop_snapshot('leaky');
SELECT count(*) AS left_over FROM heapprof_snapshots();
SELECT count(*) AS files FROM pg_ls_dir('heapprof/snapshots') AS f;
REVOKE EXECUTE ON FUNCTION heapprof_enable(integer), heapprof_snapshot(text, boolean, integer), heapprof_snapshots(),
  heapprof_drop_snapshot(text), heapprof_top
  FROM heapprof_alice, heapprof_bob;
DROP ROLE heapprof_alice;
DROP ROLE heapprof_bob;
SELECT heapprof_disable();
