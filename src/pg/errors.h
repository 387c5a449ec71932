/*
 * errors.h -- why profiling is not usable, and what to set: messages and hints.
 */
#ifndef HEAPPROF_ERRORS_H
#define HEAPPROF_ERRORS_H

#include "jemalloc.h"

/* Path named in hints; the Makefile finds it on the build machine. */
#ifndef HEAPPROF_JEMALLOC_SO
#define HEAPPROF_JEMALLOC_SO "libjemalloc.so.2"
/* ERROR for a file that could not be written (rc an errno, pid 0: this process), SQLSTATE as PostgreSQL's. */
extern void hpg_check_write(int rc, const char *what, const char *path, int pid);

#endif

#define HEAPPROF_MALLOC_CONF "prof:true,prof_active:false"

/* The hint for PostgreSQL's "permission denied for function heapprof_...": a hook of every report. */
extern void hpg_errors_init(void);

/* What to set so that profiling becomes usable; NULL when it is. */
extern const char *hpg_setup_hint(hpj_state state);
/* The state as a sentence. */
extern const char *hpg_state_message(hpj_state state);

/* ERROR unless jemalloc is this process's allocator and started with prof:true. */
extern void hpg_require_profiling(void);
/* ERROR for a failed mallctl call (rc an errno) on a process where profiling is usable. */
extern void hpg_check_mallctl(int rc, const char *what);

/* ERROR for a file that could not be written (rc an errno, pid 0: this process), SQLSTATE as PostgreSQL's. */
extern void hpg_check_write(int rc, const char *what, const char *path, int pid);

#endif
