/*
 * snapshots.h -- named heap profiles: this session's and persisted ones.
 */
#ifndef HEAPPROF_SNAPSHOTS_H
#define HEAPPROF_SNAPSHOTS_H

#include "lib/stringinfo.h"

/* GUCs; from _PG_init. */
extern void hpg_snapshots_init(void);

/*
 * The stored profile called name -- this session's snapshot, a persisted
 * snapshot or an exit dump -- appended to out.  ERROR if there is none, if
 * the name is ambiguous, or if the current user may not read it.
 */
extern void hpg_profile_by_name(const char *name, StringInfo out);

#endif
