/*
 * shmem.h -- heapprof's shared memory: request slots and what each process
 * last published of itself.  See shmem.c for the locking protocol.
 */
#ifndef HEAPPROF_SHMEM_H
#define HEAPPROF_SHMEM_H

#include "storage/condition_variable.h"
#include "storage/spin.h"

#include "jemalloc.h"
#include "values.h"

#define HPG_NSLOTS 64

/* What a request asks of its target. */
typedef enum hpg_op
{
	HPG_OP_STATUS,
	HPG_OP_ENABLE,
	HPG_OP_DISABLE,
	HPG_OP_RESET,
	HPG_OP_DUMP,
	HPG_OP_WINDOW_START,		/* record recent allocations for arg ms from now */
	HPG_OP_WINDOW_FETCH,		/* write them to path (and path.ids, path.maps) */
	HPG_OP_COUNT				/* not an operation: the size of tables indexed by one */
} hpg_op;

/* The target's answer. */
typedef struct hpg_answer
{
	int			rc;				/* 0, a mallctl errno, -1: profiling not usable there, -2: not the process asked */
	hpj_status	status;			/* the target's, after the request (version NULL) */
	char		version[64];
	hpg_peak	peak;
	int64		clock_ns;		/* the target's jemalloc clock when it answered */
} hpg_answer;

typedef enum hpg_slot_state
{
	SLOT_FREE,
	SLOT_PENDING,				/* filled by a requester, not yet taken */
	SLOT_WORKING,				/* taken by its target */
	SLOT_DONE,					/* answered; the requester frees it */
	SLOT_ABANDONED,				/* requester gone while its target works; the target frees it */
	SLOT_STATE_COUNT			/* not a state: the size of tables indexed by one */
} hpg_slot_state;

typedef struct hpg_slot
{
	hpg_slot_state state;
	int			requester;		/* pid */
	Oid			requester_role;
	int			target;			/* pid */
	int			target_procno;	/* where the target was in the proc array */
	Oid			target_role;	/* as found by the requester: a reused pid differs */
	uint64		seq;
	TimestampTz since;
	hpg_op		op;
	int			arg;			/* lg_sample for HPG_OP_RESET (-1 = keep), ms for HPG_OP_WINDOW_START */
	char		path[MAXPGPATH];	/* for HPG_OP_DUMP and HPG_OP_WINDOW_FETCH */
	hpg_answer	answer;
} hpg_slot;

/*
 * Per process, by proc number: what it last published of itself, and how
 * often heapprof rang its doorbell (for rung_pid), so that it can tell
 * heapprof's signals -- including late ones, for requests already answered
 * or given up -- from a DBA's pg_log_backend_memory_contexts.
 */
typedef struct hpg_published
{
	int			pid;
	bool		active;
	int64		allocated;
	uint64		sampling_since;	/* as hpj_status has it */
	int			rung_pid;
	uint32		rings;
} hpg_published;

/*
 * What the history's collector (collector.c) last did, for
 * heapprof_collector(): it alone writes it.
 */
typedef struct hpg_collector_state
{
	int			pid;			/* 0 when not running */
	TimestampTz last_tick;		/* the last tick kept */
	int			processes;		/* asked at it */
	int			answered;		/* of them, in the tick */
	int64		tick_bytes;		/* its file's size */
	int64		ticks;			/* kept since the collector started */
	TimestampTz error_at;		/* the last failure, 0 if none */
	char		error[256];
} hpg_collector_state;

typedef struct hpg_shared
{
	slock_t		mutex;
	ConditionVariable cv;		/* broadcast when a slot is answered or freed */
	uint64		next_seq;
	hpg_slot	slots[HPG_NSLOTS];
	hpg_collector_state collector;
	int			nprocs;
	hpg_published procs[FLEXIBLE_ARRAY_MEMBER];
} hpg_shared;

/* NULL unless heapprof is in shared_preload_libraries. */
extern hpg_shared *hpg_shmem;

/* _PG_init, in the postmaster: ask for the shared memory. */
extern void hpg_shmem_init(void);

/* The published entry of a proc number, or NULL (caller holds the mutex). */
extern hpg_published *hpg_published_of(int procno);

/* Whether process pid's sampling is active, as it last published; false if unknown. */
extern bool hpg_published_active(int pid, bool *active);

/* Record this process's profiling state for heapprof_backends().  Plain C. */
extern void hpg_publish_state(void);

#endif
