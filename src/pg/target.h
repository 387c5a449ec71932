/*
 * target.h -- serving heapprof's requests in the process they are meant for.
 */
#ifndef HEAPPROF_TARGET_H
#define HEAPPROF_TARGET_H

/* _PG_init, in the postmaster: the log hook and the doorbell context every process inherits. */
extern void hpg_target_init(void);

#endif
