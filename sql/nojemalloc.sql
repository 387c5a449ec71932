-- A server without jemalloc: status explains, every other function refuses.
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/unusable.inc
-- without pg_read_all_settings, the hint shows no configuration
CREATE ROLE hp_plain;
GRANT EXECUTE ON FUNCTION heapprof_status(integer) TO hp_plain;
SET ROLE hp_plain;
SELECT hint FROM heapprof_status();
RESET ROLE;
DROP OWNED BY hp_plain;
DROP ROLE hp_plain;
