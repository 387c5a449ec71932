-- A server with jemalloc but prof:false: status explains, every other function refuses.
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/unusable.inc
