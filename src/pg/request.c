/*
 * request.c -- the requester's side of a request to another process.
 *
 * The requester checks that it may ask (the rule of pg_signal_backend),
 * takes a slot (shmem.c), rings the target's doorbell (target.c) and sleeps
 * on the condition variable until the answer comes, the target exits, the
 * timeout passes or the query is cancelled.  It rings again only while the
 * request is still pending -- a signal can be consumed by a request served
 * just before this one -- never while the target works on it, so no extra
 * memory-context walk is queued on a busy target.
 *
 * Slots are a shared resource: a role that is not superuser may hold at most
 * ROLE_SHARE of them and never the last RESERVED ones, so superusers keep a
 * way in; a slot whose target or requester is gone is reclaimed by the next
 * requester that needs one.
 */
#include "postgres.h"

#include <limits.h>
#include <signal.h>

#include "access/xlog.h"
#include "access/xlogrecovery.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/procsignal.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "errors.h"
#include "myprofile.h"
#include "request.h"

#define RESIGNAL_MS 250
#define RESERVED 8				/* slots only superusers may take */
#define ROLE_SHARE 16			/* slots one other role may hold at once */

static int	request_timeout_ms = 5000;

void
hpg_request_init(void)
{
	DefineCustomIntVariable("heapprof.request_timeout",
							"How long a request to another process (pid => N) waits for its answer.",
							NULL,
							&request_timeout_ms,
							5000, 1, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
}

/* The target's PGPROC; ERROR if it cannot be reached. */
static PGPROC *
find_target(int pid, hpg_signal_id *signal_id)
{
	PGPROC	   *proc = BackendPidGetProc(pid);
	bool		backend = proc != NULL;

	if (proc == NULL)
		proc = AuxiliaryPidGetProc(pid);
	if (proc == NULL && (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("no process has PID %d", pid),
				 errhint("It may have exited; heapprof_backends() lists the processes that can be asked.")));
	if (proc == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("PID %d is not a server process heapprof can reach", pid),
				 errhint("The postmaster, the logger and background workers without shared-memory access cannot be asked; heapprof_backends() lists the processes that can.")));
	*signal_id = hpg_signal_id_of(proc, backend);
	return proc;
}

/* The rule of pg_signal_backend: superuser, or the privileges of the target's role. */
static void
check_permission(int pid, PGPROC *proc)
{
	Oid			role = proc->roleId;

	if (superuser())
		return;
	if (!OidIsValid(role) || superuser_arg(role))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to profile process %d", pid),
				 errhint("Only superusers may profile superuser backends and auxiliary processes.")));
	if (!has_privs_of_role(GetUserId(), role))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to profile process %d", pid),
				 errhint("Only superusers and roles with the privileges of the role the process runs as may profile it.")));
}

/* Is pid still the process that was at procno when the request was made? */
static bool
still_running(int pid, int procno)
{
	PGPROC	   *proc = BackendPidGetProc(pid);

	if (proc == NULL)
		proc = AuxiliaryPidGetProc(pid);
	return proc != NULL && hpg_procno(proc) == procno;
}

/*
 * Free the slots nobody will free: a target that exited while working leaves
 * its slot ABANDONED (or WORKING, with its requester gone too), and a slot
 * whose requester vanished without its exit callback would stay PENDING.
 * The proc array is looked up outside the spinlock (it takes an LWLock); a
 * slot is freed only if it still holds the same request, with the files its
 * path names (a target that exited may have written them).
 */
void
hpg_reclaim_slots(void)
{
	hpg_slot	copy[HPG_NSLOTS];
	bool		gone[HPG_NSLOTS];

	SpinLockAcquire(&hpg_shmem->mutex);
	memcpy(copy, hpg_shmem->slots, sizeof(copy));
	SpinLockRelease(&hpg_shmem->mutex);
	for (int i = 0; i < HPG_NSLOTS; i++)
		gone[i] = copy[i].state != SLOT_FREE &&
			(!still_running(copy[i].target, copy[i].target_procno) ||
			 (copy[i].state != SLOT_ABANDONED && BackendPidGetProc(copy[i].requester) == NULL));
	SpinLockAcquire(&hpg_shmem->mutex);
	for (int i = 0; i < HPG_NSLOTS; i++)
	{
		if (gone[i] && hpg_shmem->slots[i].seq == copy[i].seq &&
			hpg_shmem->slots[i].state == copy[i].state)
		{
			hpg_shmem->slots[i].state = SLOT_FREE;
			hpg_shmem->slots[i].seq = 0;
		}
		else
			gone[i] = false;
	}
	SpinLockRelease(&hpg_shmem->mutex);
	for (int i = 0; i < HPG_NSLOTS; i++)
		if (gone[i] && copy[i].path[0])
			hpg_remove_dump_files(copy[i].path);
}

/* Count a ring of the target's doorbell, for its log hook (see hpg_published). */
static void
count_ring(PGPROC *proc, int pid)
{
	hpg_published *p;

	SpinLockAcquire(&hpg_shmem->mutex);
	p = hpg_published_of(hpg_procno(proc));
	if (p)
	{
		p->rung_pid = pid;
		p->rings++;
	}
	SpinLockRelease(&hpg_shmem->mutex);
}

/* The request this process is waiting for, for release_at_exit. */
static hpg_slot *inflight;
static uint64 inflight_seq;

/*
 * before_shmem_exit: a requester that exits with FATAL while it waits (no
 * PG_FINALLY runs then) still frees its slot and removes a dump it did not
 * read.
 */
static void
release_at_exit(int code, Datum arg)
{
	char		path[MAXPGPATH] = "";

	if (inflight == NULL)
		return;
	SpinLockAcquire(&hpg_shmem->mutex);
	if (inflight->seq == inflight_seq)
	{
		if (inflight->state == SLOT_WORKING)
			inflight->state = SLOT_ABANDONED;	/* the target removes the files */
		else
		{
			/* a slot that names a path owns the files there, whatever its op */
			if (inflight->state == SLOT_DONE)
				memcpy(path, inflight->path, sizeof(path));
			inflight->state = SLOT_FREE;
		}
	}
	SpinLockRelease(&hpg_shmem->mutex);
	if (path[0])
		hpg_remove_dump_files(path);
	inflight = NULL;
}

/* Take a free slot for the request, within the caller's share; NULL if none. */
static hpg_slot *
take_slot(int pid, PGPROC *proc, hpg_op op, int arg, const char *path, uint64 *seq, bool *over_share)
{
	bool		super = superuser();
	Oid			role = GetUserId();
	hpg_slot   *slot = NULL;
	int			nfree = 0;
	int			mine = 0;

	*over_share = false;
	hpg_reclaim_slots();
	SpinLockAcquire(&hpg_shmem->mutex);
	for (int i = 0; i < HPG_NSLOTS; i++)
	{
		hpg_slot   *s = &hpg_shmem->slots[i];

		if (s->state == SLOT_FREE)
		{
			nfree++;
			if (slot == NULL)
				slot = s;
		}
		else if (s->requester_role == role)
			mine++;
	}
	if (!super && (nfree <= RESERVED || mine >= ROLE_SHARE))
	{
		*over_share = nfree > RESERVED;
		slot = NULL;
	}
	if (slot)
	{
		*seq = ++hpg_shmem->next_seq;
		slot->state = SLOT_PENDING;
		slot->requester = MyProcPid;
		slot->requester_role = role;
		slot->target = pid;
		slot->target_procno = hpg_procno(proc);
		slot->target_role = proc->roleId;
		slot->seq = *seq;
		slot->since = GetCurrentTimestamp();
		slot->op = op;
		slot->arg = arg;
		strlcpy(slot->path, path ? path : "", sizeof(slot->path));
	}
	SpinLockRelease(&hpg_shmem->mutex);
	return slot;
}

void
hpg_request(int pid, hpg_op op, int arg, const char *path, hpg_answer *out)
{
	hpg_signal_id signal_id;
	PGPROC	   *volatile proc;
	hpg_slot   *volatile slot;	/* read in PG_FINALLY */
	uint64		seq_taken = 0;
	volatile uint64 seq;
	int			target_procno;
	bool		over_share;
	static bool registered = false;

	if (hpg_shmem == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("profiling other processes needs heapprof in shared_preload_libraries"),
				 errhint("Add heapprof to shared_preload_libraries in postgresql.conf and restart the server.")));
	proc = find_target(pid, &signal_id);
	check_permission(pid, proc);
	if (!registered)
	{
		before_shmem_exit(release_at_exit, (Datum) 0);
		registered = true;
	}

	slot = take_slot(pid, proc, op, arg, path, &seq_taken, &over_share);
	seq = seq_taken;
	target_procno = hpg_procno(proc);
	if (slot == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_TOO_MANY_CONNECTIONS),
				 errmsg("too many heapprof requests are under way"),
				 over_share ?
				 errhint("A role that is not superuser may have at most %d requests waiting at once; wait for one to finish.", ROLE_SHARE) :
				 errhint("At most %d requests can wait at once (%d of them for superusers only); try again.", HPG_NSLOTS, RESERVED)));

	inflight = slot;
	inflight_seq = seq;
	PG_TRY();
	{
		TimestampTz start = GetCurrentTimestamp();
		TimestampTz signalled = 0;

		ConditionVariablePrepareToSleep(&hpg_shmem->cv);
		for (;;)
		{
			hpg_slot_state state;
			TimestampTz now = GetCurrentTimestamp();

			SpinLockAcquire(&hpg_shmem->mutex);
			/* a reclaimed slot may hold another request by now */
			state = slot->seq == seq ? slot->state : SLOT_FREE;
			if (state == SLOT_DONE)
				*out = slot->answer;
			SpinLockRelease(&hpg_shmem->mutex);
			if (state == SLOT_DONE)
				break;
			if (!still_running(pid, target_procno))
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("process %d exited before answering", pid),
						 errhint("Nothing was left behind; choose another process from heapprof_backends().")));
			if (TimestampDifferenceExceeds(start, now, request_timeout_ms))
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("process %d did not answer within heapprof.request_timeout (%d ms)",
								pid, request_timeout_ms),
						 errhint("A process answers at its next interrupt check: one busy in code that does not check (the checkpointer during a spread checkpoint, a long C loop) answers later. Raise heapprof.request_timeout or try again.")));
			/* ring while pending only: a working target needs no further walk */
			if (state == SLOT_PENDING &&
				(signalled == 0 || TimestampDifferenceExceeds(signalled, now, RESIGNAL_MS)))
			{
				count_ring(proc, pid);
				SendProcSignal(pid, PROCSIG_LOG_MEMORY_CONTEXT, signal_id);
				/* an idle startup process sleeps on its recovery latch, not on MyLatch */
				if (RecoveryInProgress())
					WakeupRecovery();
				signalled = now;
			}
			ConditionVariableTimedSleep(&hpg_shmem->cv, 100, PG_WAIT_EXTENSION);
		}
	}
	PG_FINALLY();
	{
		ConditionVariableCancelSleep();
		SpinLockAcquire(&hpg_shmem->mutex);
		if (slot->seq == seq)
			slot->state = slot->state == SLOT_WORKING ? SLOT_ABANDONED : SLOT_FREE;
		SpinLockRelease(&hpg_shmem->mutex);
		inflight = NULL;
	}
	PG_END_TRY();
	if (out->rc == -2)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("process %d is no longer the process that was asked", pid),
				 errhint("Its pid now belongs to a process of another role; pick the process again from heapprof_backends().")));
}

void
hpg_check_answer(int pid, const hpg_answer *a, const char *what)
{
	if (a->rc < 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("in process %d: %s", pid, hpg_state_message(a->status.state)),
				 errhint("%s", hpg_setup_hint(a->status.state))));
	if (a->rc > 0)
		ereport(ERROR,
				(errcode(ERRCODE_SYSTEM_ERROR),
				 errmsg("jemalloc in process %d could not %s: %s", pid, what, strerror(a->rc)),
				 errhint("Check heapprof_status(pid => %d) and the server log.", pid)));
}

/* The answer to a request that writes files (HPG_OP_DUMP, HPG_OP_WINDOW_FETCH) to path. */
void
hpg_check_file_answer(int pid, const hpg_answer *a, const char *what, const char *path)
{
	if (a->rc > 0)
		hpg_check_write(a->rc, what, path, pid);
	hpg_check_answer(pid, a, what);
}
