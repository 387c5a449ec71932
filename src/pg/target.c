/*
 * target.c -- a process serving the requests addressed to it.
 *
 * jemalloc's state is per process, so another backend (or the checkpointer,
 * a walsender, ...) must act on itself.  A requester (request.c) puts a
 * request into a slot and rings PROCSIG_LOG_MEMORY_CONTEXT, which every
 * process with a ProcSignal slot serves at its next CHECK_FOR_INTERRUPTS,
 * idle or busy.  heapprof then runs here from two places reached by that
 * signal: emit_log_hook, on the "logging memory contexts" message (whose
 * memory-context lines it then keeps out of the log), and the stats method
 * of a small memory context of its own, called during the context walk even
 * when log_min_messages filters the message out.
 *
 * Everything here is plain C under HOLD_INTERRUPTS: no palloc, no ereport,
 * only mallctl and write(); the target flips its state or writes a dump file
 * and answers.  The requester parses, symbolizes and renders.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "nodes/memnodes.h"
#include "utils/memutils.h"

#include "compat.h"
#include "labels.h"
#include "myprofile.h"
#include "peak.h"
#include "recording.h"
#include "shmem.h"
#include "target.h"

static emit_log_hook_type prev_emit_log_hook;
static MemoryContextMethods doorbell_methods;
static const MemoryContextMethods *aset_methods;	/* AllocSet's own table */

/* Carry out one request on this process. */
static void
do_op(hpg_op op, int arg, const char *path, hpg_answer *answer)
{
	hpj_state	state = hpj_probe();

	answer->rc = 0;
	if (op != HPG_OP_STATUS && state != HPJ_USABLE)
		answer->rc = -1;		/* the requester reports answer->status.state */
	else if (op == HPG_OP_ENABLE || op == HPG_OP_DISABLE)
	{
		hpj_status	before;
		bool		was;

		hpj_get_status(&before);
		was = before.active;
		answer->rc = hpj_set_active(op == HPG_OP_ENABLE);
		if (answer->rc == 0)
			hpg_labels_follow(op == HPG_OP_ENABLE);
		if (answer->rc == 0 && op == HPG_OP_ENABLE && !was)
			hpg_peak_reset();
	}
	else if (op == HPG_OP_RESET)
	{
		answer->rc = hpj_reset(arg);
		if (answer->rc == 0)
			hpg_peak_reset();
	}
	else if (op == HPG_OP_DUMP)
	{
		answer->rc = hpj_dump(path);
		if (answer->rc == 0)
			answer->rc = hpg_write_identity_file(path, true);
	}
	else if (op == HPG_OP_WINDOW_START)
		answer->rc = hpg_recording_open(hpj_clock_ns() + (int64) arg * 1000000);
	else if (op == HPG_OP_WINDOW_FETCH)
	{
		answer->rc = hpg_recording_dump(path);
		if (answer->rc == 0)
			answer->rc = hpg_write_identity_file(path, false);
		if (answer->rc == 0)
			answer->rc = hpg_write_maps_file(path);
	}
	answer->clock_ns = hpj_clock_ns();
	hpg_peak_get(&answer->peak);
	hpj_get_status(&answer->status);
	strlcpy(answer->version, answer->status.version ? answer->status.version : "",
			sizeof(answer->version));
	answer->status.version = NULL;	/* a pointer into this process */
}

/* Did heapprof ring since this process last looked, or is a request waiting? */
static bool
rung_for_me(void)
{
	static uint32 seen = 0;
	bool		found = false;
	hpg_published *p;

	SpinLockAcquire(&hpg_shmem->mutex);
	for (int i = 0; i < HPG_NSLOTS && !found; i++)
		found = hpg_shmem->slots[i].state == SLOT_PENDING && hpg_shmem->slots[i].target == MyProcPid;
	p = MyProc ? hpg_published_of(hpg_procno(MyProc)) : NULL;
	if (p && p->rung_pid == MyProcPid && p->rings != seen)
	{
		found = true;
		seen = p->rings;
	}
	SpinLockRelease(&hpg_shmem->mutex);
	return found;
}

/* Serve every request addressed to this process. */
static void
serve_requests(void)
{
	static bool serving = false;
	bool		answered = false;

	if (hpg_shmem == NULL || serving)
		return;
	serving = true;
	HOLD_INTERRUPTS();
	hpg_peak_serve();
	hpg_recording_serve();
	for (int i = 0; i < HPG_NSLOTS; i++)
	{
		hpg_slot   *slot = &hpg_shmem->slots[i];
		uint64		seq = 0;
		hpg_op		op = HPG_OP_STATUS;
		int			arg = -1;
		char		path[MAXPGPATH];
		hpg_answer	answer;
		bool		mine = false;
		bool		stranger = false;

		SpinLockAcquire(&hpg_shmem->mutex);
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
		SpinLockRelease(&hpg_shmem->mutex);
		if (!mine)
			continue;

		/* the pid was reused by a process of another role: refuse */
		if (stranger)
		{
			memset(&answer, 0, sizeof(answer));
			answer.rc = -2;
		}
		else
			do_op(op, arg, path, &answer);

		SpinLockAcquire(&hpg_shmem->mutex);
		if (slot->seq == seq && slot->state == SLOT_WORKING)
		{
			slot->answer = answer;
			slot->state = SLOT_DONE;
			mine = false;
		}
		else if (slot->seq == seq && slot->state == SLOT_ABANDONED)
			slot->state = SLOT_FREE;
		SpinLockRelease(&hpg_shmem->mutex);
		if (mine && path[0])
			hpg_remove_dump_files(path);	/* nobody waits for them any more */
		answered = true;
	}
	RESUME_INTERRUPTS();
	serving = false;
	if (answered)
	{
		hpg_publish_state();
		ConditionVariableBroadcast(&hpg_shmem->cv);
	}
}

/* Is this one of the memory-context lines a heapprof request caused? */
static bool
context_line(const char *id)
{
	return strncmp(id, "level: ", 7) == 0 || strncmp(id, "Grand total: ", 13) == 0;
}

/*
 * The error-context stack hidden for the rest of a walk heapprof caused.
 *
 * errfinish() calls every callback on error_context_stack for every message,
 * before it looks at the level or calls emit_log_hook; errhidecontext() only
 * drops their text afterwards.  A walk logs one message per memory context,
 * so a backend deep in nested function calls ran (contexts x call depth)
 * callbacks per ring -- each building a CONTEXT string that every walk
 * message hides anyway -- tens of seconds at depth 1000 with jemalloc
 * sampling .  So after the header of a walk heapprof rang for, the
 * walk runs with no_context, a callback that does nothing, in place of the
 * stack, and the "Grand total" line that ends the walk puts the stack back.
 *
 * Every way out of the walk restores the stack:
 *  - the normal end: the "Grand total" message (same level and message
 *    filter as the header, so it reaches this hook too).  On 15.16+ the
 *    PG_TRY in ProcessLogMemoryContextInterrupt restores it again at
 *    PG_END_TRY;
 *  - an ERROR or FATAL mid-walk (an interrupt served by the CHECK_FOR_INTERRUPTS
 *    at the end of errfinish, out of memory): the handler it longjmps to
 *    resets the stack itself -- PG_CATCH/PG_FINALLY to the value at its
 *    PG_TRY, PostgresMain and the auxiliary processes' sigsetjmp blocks to
 *    NULL -- and proc_exit never needs it;
 * and the restore only happens while error_context_stack still is
 * &no_context, which no code outside the walk can have saved: after an
 * ERROR left hidden_stack stale, a later "Grand total" without our header
 * (or a nested walk's, before 15.16) leaves the stack alone.  A walk the log
 * filters out (log_min_messages >= fatal) never reaches errfinish: no
 * callbacks run and nothing is changed here.  A DBA's own
 * pg_log_backend_memory_contexts (no heapprof ring) runs as before.
 */
static void
no_context_callback(void *arg)
{
}

static ErrorContextCallback no_context = {NULL, no_context_callback, NULL};
static ErrorContextCallback *hidden_stack;

static void
log_hook(ErrorData *edata)
{
	static bool suppressing = false;

	if (hpg_shmem && edata->elevel == LOG_SERVER_ONLY && edata->message_id)
	{
		if (strcmp(edata->message_id, "logging memory contexts of PID %d") == 0)
		{
			/* ours only if heapprof rang: a DBA's own call still logs */
			suppressing = rung_for_me() || hpg_peak_due();
			if (suppressing)
			{
				serve_requests();
				edata->output_to_server = false;
				/* a walk nested in ours (before 15.16) keeps the outer one's */
				if (error_context_stack != &no_context)
				{
					hidden_stack = error_context_stack;
					error_context_stack = &no_context;
				}
			}
		}
		else if (suppressing && context_line(edata->message_id))
		{
			edata->output_to_server = false;
			if (strncmp(edata->message_id, "Grand total: ", 13) == 0)
				suppressing = false;
		}
		if (error_context_stack == &no_context &&
			strncmp(edata->message_id, "Grand total: ", 13) == 0)
		{
			error_context_stack = hidden_stack;
			hidden_stack = NULL;
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
	aset_methods->stats(context, printfunc, passthru, totals, print_to_stderr);
	if (!print_to_stderr)
		serve_requests();
}

/*
 * The doorbell's alloc, realloc and delete: AllocSet's, through its table as
 * it is when called -- owner.c wraps these entries while the process
 * samples, and a copy taken once would go round the wrappers.
 */
static void *
doorbell_alloc(HPG_ALLOC_PARAMS)
{
	return aset_methods->alloc(HPG_ALLOC_ARGS);
}

static void *
doorbell_realloc(HPG_REALLOC_PARAMS)
{
	return aset_methods->realloc(HPG_REALLOC_ARGS);
}

static void
doorbell_delete(MemoryContext context)
{
	aset_methods->delete_context(context);
}

void
hpg_target_init(void)
{
	MemoryContext doorbell;

	prev_emit_log_hook = emit_log_hook;
	emit_log_hook = log_hook;

	/* an AllocSet context whose method table differs only in stats */
	doorbell = AllocSetContextCreate(TopMemoryContext, "heapprof doorbell", ALLOCSET_SMALL_SIZES);
	aset_methods = doorbell->methods;
	doorbell_methods = *aset_methods;
	doorbell_methods.stats = doorbell_stats;
	doorbell_methods.alloc = doorbell_alloc;
	doorbell_methods.realloc = doorbell_realloc;
	doorbell_methods.delete_context = doorbell_delete;
	doorbell->methods = &doorbell_methods;
}
