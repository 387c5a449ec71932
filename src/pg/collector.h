/*
 * collector.h -- the heap history's collector: a background worker keeping,
 * every heapprof.history_interval, what each sampling process holds.
 */
#ifndef HEAPPROF_COLLECTOR_H
#define HEAPPROF_COLLECTOR_H

/* heapprof.history_interval, in seconds (0: no history kept). */
extern int	hpg_history_interval;

/* heapprof_growth()'s and the exporter's cut-off, bytes per hour: what a sampled heap's noise stays below. */
#define HPG_GROWTH_MIN_RATE (1024.0 * 1024)

/* _PG_init: the settings, and the worker when preloaded. */
extern void hpg_collector_init(void);

#endif
