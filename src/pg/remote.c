/*
 * remote.c -- status, switches and dumps of other server processes.
 *
 * jemalloc's state is per process, so another backend (or the checkpointer,
 * a walsender, ...) must act on itself.  The requester puts a request into a
 * slot in shared memory and rings PROCSIG_LOG_MEMORY_CONTEXT, which every
 * process that has a ProcSignal slot serves at its next CHECK_FOR_INTERRUPTS,
 * idle or busy.  heapprof runs in the target from two places reached by that
 * signal: emit_log_hook, on the "logging memory contexts" message (whose
 * memory-context lines it then keeps out of the log), and the stats method
 * of a small memory context of its own, called during the context walk even
 * when log_min_messages filters the message out.
 *
 * In the target everything is plain C under HOLD_INTERRUPTS: no palloc, no
 * ereport, only mallctl and write(); the target flips its state or writes a
 * dump file and answers.  The requester parses, symbolizes and renders.
 * A slot goes pending -> working -> done; a requester that gives up (timeout,
 * cancel) marks a working slot abandoned, and the target then frees it and
 * removes its file, so neither side ever writes into the other's request.
 */
#include "postgres.h"

#include <fcntl.h>
#include <unistd.h>

#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/memnodes.h"
#include "pgstat.h"
#include "access/twophase.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/procsignal.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/acl.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "heapprof_pg.h"

PG_FUNCTION_INFO_V1(heapprof_backends);

#define NSLOTS 64
#define RESIGNAL_MS 250

int			hp_request_timeout_ms = 5000;

typedef enum slot_state
{
	SLOT_FREE,
	SLOT_PENDING,
	SLOT_WORKING,
	SLOT_DONE,
	SLOT_ABANDONED
} slot_state;

typedef struct hp_slot
{
	slot_state	state;
	int			target;
	Oid			target_role;	/* as found by the requester: a reused pid differs */
	uint64		seq;
	hp_op		op;
	int			arg;			/* lg_sample for HP_OP_RESET, -1 = keep */
	char		path[MAXPGPATH];	/* for HP_OP_DUMP */
	hp_remote	result;
} hp_slot;

/*
 * Per process, by pgprocno: what it last published of itself, and how often
 * heapprof rang its doorbell (for rung_pid), so that it can tell heapprof's
 * signals -- including late ones, for requests already answered or given up
 * -- from a DBA's pg_log_backend_memory_contexts.
 */
typedef struct published
{
	int			pid;
	bool		active;
	int64		allocated;
	int			rung_pid;
	uint32		rings;
} published;

typedef struct hp_shared
{
	slock_t		mutex;
	ConditionVariable cv;
	uint64		next_seq;
	hp_slot		slots[NSLOTS];
	int			nprocs;
	published	procs[FLEXIBLE_ARRAY_MEMBER];
} hp_shared;

static hp_shared *shared;
static shmem_request_hook_type prev_shmem_request_hook;
static shmem_startup_hook_type prev_shmem_startup_hook;
static emit_log_hook_type prev_emit_log_hook;
static MemoryContextMethods doorbell_methods;
static void (*aset_stats) (MemoryContext, MemoryStatsPrintFunc, void *,
						   MemoryContextCounters *, bool);

static int
nprocs_needed(void)
{
	return MaxBackends + NUM_AUXILIARY_PROCS + max_prepared_xacts;
}

static Size
shared_size(void)
{
	return add_size(offsetof(hp_shared, procs),
					mul_size(nprocs_needed(), sizeof(published)));
}

static void
request_shmem(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(shared_size());
}

static void
startup_shmem(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	shared = ShmemInitStruct("heapprof", shared_size(), &found);
	if (!found)
	{
		memset(shared, 0, shared_size());
		SpinLockInit(&shared->mutex);
		ConditionVariableInit(&shared->cv);
		shared->nprocs = nprocs_needed();
	}
	LWLockRelease(AddinShmemInitLock);
}

bool
hp_remote_available(void)
{
	return shared != NULL;
}

/* ---- the target's side: plain C, never an error ---- */

/* Record this process's state for heapprof_backends(). */
void
hp_publish_state(void)
{
	hpj_status	st;
	published  *p;

	if (shared == NULL || MyProc == NULL || MyProc->pgprocno >= shared->nprocs)
		return;
	hpj_get_status(&st);
	p = &shared->procs[MyProc->pgprocno];
	SpinLockAcquire(&shared->mutex);
	p->pid = MyProcPid;	/* rung_pid and rings are the requesters' */
	p->active = st.active;
	p->allocated = st.have_stats ? (int64) st.allocated : -1;
	SpinLockRelease(&shared->mutex);
}

/* Carry out one request on this process; fills result. */
static void
do_op(hp_op op, int arg, const char *path, hp_remote *result)
{
	hpj_state	state = hpj_probe();

	result->rc = 0;
	if (op != HP_OP_STATUS && state != HPJ_USABLE)
		result->rc = -1;		/* the requester reports result->status.state */
	else if (op == HP_OP_ENABLE || op == HP_OP_DISABLE)
		result->rc = hpj_set_active(op == HP_OP_ENABLE);
	else if (op == HP_OP_RESET)
		result->rc = hpj_reset(arg);
	else if (op == HP_OP_DUMP)
	{
		result->rc = hpj_dump(path);
		if (result->rc == 0)
			result->rc = hp_write_identity_file(path);
	}
	hpj_get_status(&result->status);
	strlcpy(result->version, result->status.version ? result->status.version : "",
			sizeof(result->version));
	result->status.version = NULL;	/* a pointer into this process */
}

/* Did heapprof ring since this process last looked, or is a request waiting? */
static bool
rung_for_me(void)
{
	static uint32 seen = 0;
	bool		found = false;

	SpinLockAcquire(&shared->mutex);
	for (int i = 0; i < NSLOTS && !found; i++)
		found = shared->slots[i].state == SLOT_PENDING && shared->slots[i].target == MyProcPid;
	if (MyProc && MyProc->pgprocno < shared->nprocs)
	{
		published  *p = &shared->procs[MyProc->pgprocno];

		if (p->rung_pid == MyProcPid && p->rings != seen)
		{
			found = true;
			seen = p->rings;
		}
	}
	SpinLockRelease(&shared->mutex);
	return found;
}

/* Serve every request addressed to this process. */
static void
serve_requests(void)
{
	static bool serving = false;
	bool		answered = false;

	if (shared == NULL || serving)
		return;
	serving = true;
	HOLD_INTERRUPTS();
	for (int i = 0; i < NSLOTS; i++)
	{
		hp_slot    *slot = &shared->slots[i];
		uint64		seq = 0;
		hp_op		op = HP_OP_STATUS;
		int			arg = -1;
		char		path[MAXPGPATH];
		hp_remote	result;
		bool		mine = false;

		bool		stranger = false;

		SpinLockAcquire(&shared->mutex);
		if (slot->state == SLOT_PENDING && slot->target == MyProcPid)
		{
			slot->state = SLOT_WORKING;
			seq = slot->seq;
			op = slot->op;
			arg = slot->arg;
			memcpy(path, slot->path, sizeof(path));
			stranger = slot->target_role != (MyProc ? MyProc->roleId : InvalidOid);
			mine = true;
		}
		SpinLockRelease(&shared->mutex);
		if (!mine)
			continue;

		/* the pid was reused by a process of another role: refuse */
		if (stranger)
		{
			memset(&result, 0, sizeof(result));
			result.rc = -2;
		}
		else
			do_op(op, arg, path, &result);

		SpinLockAcquire(&shared->mutex);
		if (slot->seq == seq && slot->state == SLOT_WORKING)
		{
			slot->result = result;
			slot->state = SLOT_DONE;
			mine = false;
		}
		else if (slot->seq == seq && slot->state == SLOT_ABANDONED)
			slot->state = SLOT_FREE;
		SpinLockRelease(&shared->mutex);
		if (mine && op == HP_OP_DUMP)
			hp_remove_dump_files(path);	/* nobody waits for it any more */
		answered = true;
	}
	RESUME_INTERRUPTS();
	serving = false;
	if (answered)
	{
		hp_publish_state();
		ConditionVariableBroadcast(&shared->cv);
	}
}

/* Is this one of the memory-context lines a heapprof request caused? */
static bool
context_line(const char *id)
{
	return strncmp(id, "level: ", 7) == 0 || strncmp(id, "Grand total: ", 13) == 0;
}

static void
log_hook(ErrorData *edata)
{
	static bool suppressing = false;

	if (shared && edata->elevel == LOG_SERVER_ONLY && edata->message_id)
	{
		if (strcmp(edata->message_id, "logging memory contexts of PID %d") == 0)
		{
			/* ours only if heapprof rang: a DBA's own call still logs */
			suppressing = rung_for_me();
			if (suppressing)
			{
				serve_requests();
				edata->output_to_server = false;
			}
		}
		else if (suppressing && context_line(edata->message_id))
		{
			edata->output_to_server = false;
			if (strncmp(edata->message_id, "Grand total: ", 13) == 0)
				suppressing = false;
		}
	}
	if (prev_emit_log_hook)
		prev_emit_log_hook(edata);
}

/*
 * The doorbell context's stats method: the context walk of the memory-context
 * logging calls it with print_to_stderr = false, even when the log message
 * itself was filtered out and log_hook never ran.
 */
static void
doorbell_stats(MemoryContext context, MemoryStatsPrintFunc printfunc, void *passthru,
			   MemoryContextCounters *totals, bool print_to_stderr)
{
	aset_stats(context, printfunc, passthru, totals, print_to_stderr);
	if (!print_to_stderr)
		serve_requests();
}

/* _PG_init, in the postmaster: shared memory, hooks and the doorbell context. */
void
hp_remote_init(void)
{
	MemoryContext doorbell;

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = request_shmem;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = startup_shmem;
	prev_emit_log_hook = emit_log_hook;
	emit_log_hook = log_hook;

	/* an AllocSet context whose method table differs only in stats */
	doorbell = AllocSetContextCreate(TopMemoryContext, "heapprof doorbell", ALLOCSET_SMALL_SIZES);
	doorbell_methods = *doorbell->methods;
	aset_stats = doorbell_methods.stats;
	doorbell_methods.stats = doorbell_stats;
	doorbell->methods = &doorbell_methods;
}

/* ---- the requester's side ---- */

/* The target's PGPROC and ProcSignal backend id; ERROR if it cannot be reached. */
static PGPROC *
find_target(int pid, BackendId *backend_id)
{
	PGPROC	   *proc = BackendPidGetProc(pid);

	*backend_id = InvalidBackendId;
	if (proc)
		*backend_id = proc->backendId;
	else
		proc = AuxiliaryPidGetProc(pid);
	if (proc == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("PID %d is not a server process heapprof can reach", pid),
				 errhint("The postmaster, the logger and background workers without a database connection have no way to be asked; heapprof_backends() lists the processes that do.")));
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

/* Count a ring of pid's doorbell, for its log_hook (see published). */
static void
ring(PGPROC *proc, int pid)
{
	if (proc->pgprocno >= shared->nprocs)
		return;
	SpinLockAcquire(&shared->mutex);
	shared->procs[proc->pgprocno].rung_pid = pid;
	shared->procs[proc->pgprocno].rings++;
	SpinLockRelease(&shared->mutex);
}

static void
require_shared(void)
{
	if (shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("profiling other processes needs heapprof in shared_preload_libraries"),
				 errhint("Add heapprof to shared_preload_libraries in postgresql.conf and restart the server.")));
}

/* The request this process is waiting for, for release_at_exit. */
static hp_slot *inflight;
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
	SpinLockAcquire(&shared->mutex);
	if (inflight->seq == inflight_seq)
	{
		if (inflight->state == SLOT_WORKING)
			inflight->state = SLOT_ABANDONED;	/* the target removes the files */
		else
		{
			if (inflight->state == SLOT_DONE && inflight->op == HP_OP_DUMP)
				memcpy(path, inflight->path, sizeof(path));
			inflight->state = SLOT_FREE;
		}
	}
	SpinLockRelease(&shared->mutex);
	if (path[0])
		hp_remove_dump_files(path);
	inflight = NULL;
}

/*
 * Ask process pid to carry out op and wait for its answer (ERROR on
 * timeout, if it exits, or if the request is cancelled).  For HP_OP_DUMP the
 * target writes path and path's identity file; the caller removes them.
 */
void
hp_remote_call(int pid, hp_op op, int arg, const char *path, hp_remote *out)
{
	BackendId	backend_id;
	PGPROC	   *volatile proc;
	hp_slot    *volatile slot = NULL;	/* read in PG_FINALLY */
	volatile uint64 seq = 0;

	static bool registered = false;

	require_shared();
	proc = find_target(pid, &backend_id);
	check_permission(pid, proc);
	if (!registered)
	{
		before_shmem_exit(release_at_exit, (Datum) 0);
		registered = true;
	}

	SpinLockAcquire(&shared->mutex);
	for (int i = 0; i < NSLOTS; i++)
		if (shared->slots[i].state == SLOT_FREE)
		{
			slot = &shared->slots[i];
			seq = ++shared->next_seq;
			slot->state = SLOT_PENDING;
			slot->target = pid;
			slot->target_role = proc->roleId;
			slot->seq = seq;
			slot->op = op;
			slot->arg = arg;
			strlcpy(slot->path, path ? path : "", sizeof(slot->path));
			break;
		}
	SpinLockRelease(&shared->mutex);
	if (slot == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_TOO_MANY_CONNECTIONS),
				 errmsg("too many heapprof requests are under way"),
				 errhint("At most %d requests can wait at once; try again.", NSLOTS)));

	inflight = slot;
	inflight_seq = seq;
	PG_TRY();
	{
		TimestampTz start = GetCurrentTimestamp();
		TimestampTz signalled = 0;

		ConditionVariablePrepareToSleep(&shared->cv);
		for (;;)
		{
			slot_state	state;
			TimestampTz now = GetCurrentTimestamp();

			SpinLockAcquire(&shared->mutex);
			state = slot->state;
			if (state == SLOT_DONE)
				*out = slot->result;
			SpinLockRelease(&shared->mutex);
			if (state == SLOT_DONE)
				break;
			if (BackendPidGetProc(pid) == NULL && AuxiliaryPidGetProc(pid) == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("process %d exited before answering", pid),
						 errhint("Nothing was left behind; choose another process from heapprof_backends().")));
			if (TimestampDifferenceExceeds(start, now, hp_request_timeout_ms))
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("process %d did not answer within heapprof.request_timeout (%d ms)",
								pid, hp_request_timeout_ms),
						 errhint("A process answers at its next interrupt check: one busy in code that does not check (the checkpointer during a spread checkpoint, a long C loop) answers later. Raise heapprof.request_timeout or try again.")));
			/* a signal can be consumed by a request served just before ours */
			if (signalled == 0 || TimestampDifferenceExceeds(signalled, now, RESIGNAL_MS))
			{
				ring(proc, pid);
				SendProcSignal(pid, PROCSIG_LOG_MEMORY_CONTEXT, backend_id);
				signalled = now;
			}
			ConditionVariableTimedSleep(&shared->cv, 100, PG_WAIT_EXTENSION);
		}
	}
	PG_FINALLY();
	{
		ConditionVariableCancelSleep();
		SpinLockAcquire(&shared->mutex);
		if (slot->seq == seq)
			slot->state = slot->state == SLOT_WORKING ? SLOT_ABANDONED : SLOT_FREE;
		SpinLockRelease(&shared->mutex);
		inflight = NULL;
	}
	PG_END_TRY();
	if (out->rc == -2)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("process %d is no longer the process that was asked", pid),
				 errhint("Its pid now belongs to a process of another role; pick the process again from heapprof_backends().")));
}

/* What pg_stat_activity calls process pid's backend_type. */
const char *
hp_backend_type_of(int pid)
{
	int			n = pgstat_fetch_stat_numbackends();

	for (int i = 1; i <= n; i++)
	{
		LocalPgBackendStatus *local = pgstat_fetch_stat_local_beentry(i);

		if (local && local->backendStatus.st_procpid == pid)
			return GetBackendTypeDesc(local->backendStatus.st_backendType);
	}
	return "unknown";
}

/* heapprof_backends(): the processes heapprof can reach, to pick a pid */
Datum
heapprof_backends(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			n = pgstat_fetch_stat_numbackends();

	InitMaterializedSRF(fcinfo, 0);
	hp_publish_state();
	for (int i = 1; i <= n; i++)
	{
		LocalPgBackendStatus *local = pgstat_fetch_stat_local_beentry(i);
		PgBackendStatus *be = local ? &local->backendStatus : NULL;
		Datum		values[7];
		bool		nulls[7] = {0};
		PGPROC	   *proc;
		char	   *user;
		const char *state;

		if (be == NULL || be->st_procpid <= 0)
			continue;
		proc = BackendPidGetProc(be->st_procpid);
		if (proc == NULL)
			proc = AuxiliaryPidGetProc(be->st_procpid);
		if (proc == NULL)
			continue;			/* no ProcSignal slot: cannot be asked */
		values[0] = Int32GetDatum(be->st_procpid);
		values[1] = CStringGetTextDatum(GetBackendTypeDesc(be->st_backendType));
		user = OidIsValid(be->st_userid) ? GetUserNameFromId(be->st_userid, true) : NULL;
		values[2] = user ? CStringGetTextDatum(user) : (Datum) 0;
		nulls[2] = user == NULL;
		values[3] = CStringGetTextDatum(be->st_appname ? be->st_appname : "");
		switch (be->st_state)
		{
			case STATE_IDLE:
				state = "idle";
				break;
			case STATE_RUNNING:
				state = "active";
				break;
			case STATE_IDLEINTRANSACTION:
				state = "idle in transaction";
				break;
			case STATE_IDLEINTRANSACTION_ABORTED:
				state = "idle in transaction (aborted)";
				break;
			case STATE_FASTPATH:
				state = "fastpath function call";
				break;
			default:
				state = NULL;
		}
		values[4] = state ? CStringGetTextDatum(state) : (Datum) 0;
		nulls[4] = state == NULL;
		nulls[5] = nulls[6] = true;
		if (shared && proc->pgprocno < shared->nprocs)
		{
			published	p;

			SpinLockAcquire(&shared->mutex);
			p = shared->procs[proc->pgprocno];
			SpinLockRelease(&shared->mutex);
			/* known only once the process took part in heapprof */
			if (p.pid == be->st_procpid)
			{
				values[5] = BoolGetDatum(p.active);
				nulls[5] = false;
				values[6] = Int64GetDatum(p.allocated);
				nulls[6] = p.allocated < 0;
			}
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
