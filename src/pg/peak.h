/*
 * peak.h -- the heap profile of a process at its highest memory use.
 */
#ifndef HEAPPROF_PEAK_H
#define HEAPPROF_PEAK_H

#include "values.h"

/* _PG_init: heapprof.track_peak and, in the postmaster, jemalloc's hook. */
extern void hpg_peak_init(void);
/* $PGDATA/heapprof/peaks/PID.heap: identity lines, then jemalloc's dump. */
extern void hpg_peak_path(char *path, size_t size, int pid);
/* Remove this process's peak files when it exits (registered once). */
extern void hpg_peak_register(void);
/* The rest is plain C, for the target of a request too. */
/* Did the hook ask for a CHECK_FOR_INTERRUPTS? */
extern bool hpg_peak_due(void);
/* Take the peak profile if one is due (at a CHECK_FOR_INTERRUPTS). */
extern void hpg_peak_serve(void);
/* Forget the peak: profiling was enabled or reset. */
extern void hpg_peak_reset(void);
extern void hpg_peak_get(hpg_peak *p);

#endif
