/*
 * symindex.h -- the engine's symbol index files, kept per object under
 * $PGDATA/heapprof/symbols.
 */
#ifndef HEAPPROF_PG_SYMINDEX_H
#define HEAPPROF_PG_SYMINDEX_H

#include "engine/symbolize.h"

/* _PG_init: heapprof.symbol_index_limit, and the folder given to the symbolizers. */
extern void hpg_symindex_init(void);
/* Bytes of every file in the folder (drafts included). */
extern int64 hpg_symindex_bytes(void);

#endif
