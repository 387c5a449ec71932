/*
 * snapshots.h -- named heap profiles: this session's and persisted ones.
 */
#ifndef HEAPPROF_SNAPSHOTS_H
#define HEAPPROF_SNAPSHOTS_H

#include "lib/stringinfo.h"

/* GUCs; from _PG_init. */
extern void hpg_snapshots_init(void);

#endif
