/*
 * heapprof_pg.h -- declarations shared by the PostgreSQL-facing files.
 */
#ifndef HEAPPROF_PG_H
#define HEAPPROF_PG_H

#include "jemalloc.h"

/* Path named in hints; the Makefile finds it on the build machine. */
#ifndef HEAPPROF_JEMALLOC_SO
#define HEAPPROF_JEMALLOC_SO "libjemalloc.so.2"
#endif

#define HEAPPROF_MALLOC_CONF "prof:true,prof_active:false"

/* heapprof.symbol_cache_limit, in kB */
extern int	hp_symbol_cache_limit_kb;

extern const char *hp_setup_hint(hpj_state state);
extern void hp_require_profiling(void);
extern void hp_check_mallctl(int rc, const char *what);

/* fold.c */
struct hp_options;
extern void hp_fold_postgres(struct hp_options *o);

/* dump.c */
struct StringInfoData;
extern void hp_take_dump(struct StringInfoData *out, bool identity);

#endif
