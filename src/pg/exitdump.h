/*
 * exitdump.h -- a backend's heap profile left behind when it exits.
 */
#ifndef HEAPPROF_EXITDUMP_H
#define HEAPPROF_EXITDUMP_H

/* _PG_init: the exit-dump settings. */
extern void hpg_exitdump_init(void);
/* Arrange for this process's exit dump. */
extern void hpg_exitdump_register(void);

#endif
