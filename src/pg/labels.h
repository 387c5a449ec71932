/*
 * labels.h -- every sampled allocation labelled with the statement running
 * and the memory context that owns it.
 */
#ifndef HEAPPROF_PG_LABELS_H
#define HEAPPROF_PG_LABELS_H

#include "engine/format.h"

/* _PG_init: heapprof.labels. */
extern void hpg_labels_init(void);

/*
 * In jemalloc's backtrace hook, after the unwinder filled vec[0 .. *len)
 * with at most max_len - HP_LABEL_FRAMES frames: take owner.c's wrappers'
 * frames out, append the labels.  Plain reads and stores into static
 * tables: no allocation, lock or error.
 */
extern void hpg_labels_push(void **vec, unsigned *len, unsigned max_len);

/* The backtrace hook that pushes the labels is in (peak.c installs it). */
extern void hpg_labels_hooked(void);

/*
 * This process's sampling was turned on or off: the owners' wrappers go in
 * while it samples with heapprof.labels on and the hook in, and out when it
 * stops, so a process that does not sample pays nothing for them.
 */
extern void hpg_labels_follow(bool sampling);

/* The tables the pushed frames point into, for a dump's label lines. */
extern void hpg_labels_tables(hp_identity *id);

#endif
