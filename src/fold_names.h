/*
 * fold_names.h -- PostgreSQL's memory-context entry points, as data for the
 * engine's allocator folding (hp_options.fold_names).
 *
 * Every palloc-family call enters PostgreSQL's allocator through one of
 * these exported functions; folding cuts them and everything leafward, so
 * memory is charged to their callers.  The engine knows nothing of
 * PostgreSQL: the module and heapprof-report (by default) both pass
 * this list.  Plain C, no PostgreSQL headers.
 */
#ifndef HEAPPROF_FOLD_NAMES_H
#define HEAPPROF_FOLD_NAMES_H

/* NULL-terminated. */
extern const char *const hp_postgres_allocator[];

#endif
