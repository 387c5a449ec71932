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

/* settings (heapprof.c defines them) */
extern int	hp_symbol_cache_limit_kb;
extern int	hp_dump_on_exit_threshold_kb;
extern int	hp_max_dumps;
extern int	hp_max_dump_bytes_kb;

extern const char *hp_setup_hint(hpj_state state);
extern void hp_require_profiling(void);
extern void hp_check_mallctl(int rc, const char *what);

/* fold.c */
struct hp_options;
extern void hp_fold_postgres(struct hp_options *o);

/* store.c */
struct StringInfoData;
extern void hp_store_read(const char *name, struct StringInfoData *out);
extern void hp_store_register_exit(void);

/* dump.c */
extern void hp_take_dump(struct StringInfoData *out, bool identity);

#endif
