/*
 * compat.h -- every PostgreSQL version difference heapprof deals with, 15 to 19.
 *
 * heapprof is written against PostgreSQL 15's spelling where a newer one
 * does not exist there; this header maps the few APIs that moved.  Nothing
 * else in src/pg tests PG_VERSION_NUM.
 */
#ifndef HEAPPROF_COMPAT_H
#define HEAPPROF_COMPAT_H

#include "postgres.h"

#include "access/htup_details.h"	/* heap_form_tuple: not via funcapi.h in 19 */
#include "storage/proc.h"
#include "utils/backend_status.h"
#include "utils/tuplestore.h"	/* tuplestore_putvalues: not via funcapi.h in 19 */
#include "utils/wait_event.h"	/* PG_WAIT_EXTENSION: not via pgstat.h in 19 */

#if PG_VERSION_NUM >= 170000
#include "common/file_utils.h"	/* PG_TEMP_FILES_DIR, PG_TEMP_FILE_PREFIX moved in 17 */
#endif
#include "storage/fd.h"

/* 16 renamed the lookup by 1-based index into the local backend-status table. */
#if PG_VERSION_NUM >= 160000
#define hpg_local_beentry(i) pgstat_get_local_beentry_by_index(i)
#else
#define hpg_local_beentry(i) pgstat_fetch_stat_local_beentry(i)
#endif

/*
 * A process's index in the proc array (0-based), the same range in every
 * version: MaxBackends + NUM_AUXILIARY_PROCS + max_prepared_xacts.
 */
#if PG_VERSION_NUM >= 170000
#define hpg_procno(proc) GetNumberFromPGProc(proc)
#else
#define hpg_procno(proc) ((proc)->pgprocno)
#endif

/*
 * What SendProcSignal takes to find the target's slot at once.  17 made it
 * the proc number for every process; before, a backend's 1-based
 * BackendId, and auxiliary processes had none (an invalid id makes
 * SendProcSignal search every slot).
 */
#if PG_VERSION_NUM >= 170000
typedef ProcNumber hpg_signal_id;
#define hpg_signal_id_of(proc, is_backend) ((void) (is_backend), GetNumberFromPGProc(proc))
#else
typedef BackendId hpg_signal_id;
#define hpg_signal_id_of(proc, is_backend) ((is_backend) ? (proc)->backendId : InvalidBackendId)
#endif

/*
 * The queryid of the top-level statement running, as pg_stat_activity shows
 * it (pgstat_get_my_query_id's field), and 0 when none runs: an idle
 * session's entry keeps its last statement's.  Plain reads of this
 * backend's own entry.  18 made the field int64, from uint64.
 */
static inline uint64
hpg_running_query_id(void)
{
	PgBackendStatus *be = MyBEEntry;

	return be != NULL && be->st_state == STATE_RUNNING ? (uint64) be->st_query_id : 0;
}

/*
 * A memory context method table's alloc and realloc (owner.c wraps them):
 * 16 dropped realloc's context (the chunk's own is GetMemoryChunkContext's),
 * 17 added flags to both.
 */
#if PG_VERSION_NUM >= 170000
#define HPG_ALLOC_PARAMS MemoryContext context, Size size, int flags
#define HPG_ALLOC_ARGS context, size, flags
#define HPG_REALLOC_PARAMS void *pointer, Size size, int flags
#define HPG_REALLOC_ARGS pointer, size, flags
#define HPG_REALLOC_OWNER GetMemoryChunkContext(pointer)
#elif PG_VERSION_NUM >= 160000
#define HPG_ALLOC_PARAMS MemoryContext context, Size size
#define HPG_ALLOC_ARGS context, size
#define HPG_REALLOC_PARAMS void *pointer, Size size
#define HPG_REALLOC_ARGS pointer, size
#define HPG_REALLOC_OWNER GetMemoryChunkContext(pointer)
#else
#define HPG_ALLOC_PARAMS MemoryContext context, Size size
#define HPG_ALLOC_ARGS context, size
#define HPG_REALLOC_PARAMS MemoryContext context, void *pointer, Size size
#define HPG_REALLOC_ARGS context, pointer, size
#define HPG_REALLOC_OWNER context
#endif

/* 17 added the Bump allocator, whose method table owner.c wraps too. */
#if PG_VERSION_NUM >= 170000
#define HPG_HAVE_BUMP 1
#endif

#endif
