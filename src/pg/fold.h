/*
 * fold.h -- where this process's allocator functions without names start.
 */
#ifndef HEAPPROF_FOLD_H
#define HEAPPROF_FOLD_H

#include <stddef.h>
#include <stdint.h>

/* Read the method tables once (in _PG_init: a palloc'ing step). */
extern void hpg_fold_init(void);
/* The sorted starts; plain C, for the identity lines of any dump. */
extern const uint64_t *hpg_fold_starts(size_t *n);

#endif
