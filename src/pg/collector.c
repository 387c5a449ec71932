/*
 * collector.c -- the heap history: a background worker that keeps, every
 * heapprof.history_interval, what each sampling process holds.
 *
 * A leak that grows for days across many backends is found only if someone
 * asks the right backend at the right time; the history asks for them.  At
 * each tick the worker asks every process that samples for its heap
 * profile -- the request heapprof_top(pid => N) makes, so a process pays
 * what such a request costs it, the dump of its samples -- analyses it here
 * (symbolized, folded, labelled) and keeps a few rows of it (the top
 * functions, statements and memory contexts, engine/summary.c) in one file
 * per tick, $PGDATA/heapprof/history/TIME.heap, written as every stored file
 * is (a draft, then one rename: a tick cut short by a crash is never read).
 * The folder is the server's, bounded by heapprof.history_size: the oldest
 * ticks go first.  A process that exits keeps its rows in the ticks it was
 * in.  Files are not WAL: a standby's collector keeps its own processes'
 * history, readable there.
 *
 * The worker starts with the server wherever heapprof is preloaded, and
 * sleeps while heapprof.history_interval is 0; a reload switches it.  It
 * is connected to no database, as the bootstrap superuser: its requests
 * are a superuser's, and requesters see it alive in the proc array.  A tick
 * that cannot be kept (a full disk, a folder that is not one) is reported
 * in the log and by heapprof_collector(), never fatal.
 */
#include "postgres.h"

#include <time.h>

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/backend_status.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "analysis.h"
#include "collector.h"
#include "compat.h"
#include "fold_names.h"
#include "process.h"
#include "shmem.h"
#include "store.h"
#include "engine/history.h"

int			hpg_history_interval = 0;	/* seconds; 0: off */
int			hpg_history_size_mb = 256;
static int	history_top = 20;

void
hpg_collector_init(void)
{
	BackgroundWorker w;

	DefineCustomIntVariable("heapprof.history_interval",
							"How often the server keeps what each sampling process holds (0: never).",
							"The heap history read by heapprof_history() and heapprof_growth(). "
							"Needs shared_preload_libraries = 'heapprof'.",
							&hpg_history_interval,
							0, 0, 86400,
							PGC_SIGHUP, GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomIntVariable("heapprof.history_size",
							"Most disk the heap history may take; the oldest ticks go first.",
							NULL,
							&hpg_history_size_mb,
							256, 1, INT_MAX / 2,
							PGC_SIGHUP, GUC_UNIT_MB,
							NULL, NULL, NULL);
	DefineCustomIntVariable("heapprof.history_top",
							"Functions, statements and memory contexts kept per process and tick, each kind's rest in one row.",
							NULL,
							&history_top,
							20, 1, 1000,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);
	if (!process_shared_preload_libraries_in_progress)
		return;
	memset(&w, 0, sizeof(w));
	/* a connection to no database: in the proc array, a superuser's requests */
	w.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	/* a hot standby's processes have a history too */
	w.bgw_start_time = BgWorkerStart_ConsistentState;
	w.bgw_restart_time = 10;
	strlcpy(w.bgw_library_name, "heapprof", sizeof(w.bgw_library_name));
	strlcpy(w.bgw_function_name, "hpg_collector_main", sizeof(w.bgw_function_name));
	strlcpy(w.bgw_name, "heapprof history", sizeof(w.bgw_name));
	strlcpy(w.bgw_type, "heapprof history", sizeof(w.bgw_type));
	RegisterBackgroundWorker(&w);
}

static int64
unix_us(TimestampTz t)
{
	return (int64) t + (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;
}

/* Keep what went wrong for heapprof_collector(), and say it in the log. */
static void
report(const char *fmt,...) __attribute__((format(printf, 1, 2)));

static void
report(const char *fmt,...)
{
	char		msg[256];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ereport(LOG, (errmsg("heapprof history: %s", msg)));
	SpinLockAcquire(&hpg_shmem->mutex);
	hpg_shmem->collector.error_at = GetCurrentTimestamp();
	strlcpy(hpg_shmem->collector.error, msg, sizeof(hpg_shmem->collector.error));
	SpinLockRelease(&hpg_shmem->mutex);
}

/* A process to ask at this tick. */
typedef struct target
{
	int			pid;
	hp_hist_proc proc;
} target;

/* The sampling processes, as pg_stat_activity shows them now (strings in a). */
static target *
targets(hp_arena *a, int *count)
{
	int			n;
	target	   *v;
	int			k = 0;

	pgstat_clear_backend_activity_snapshot();
	n = pgstat_fetch_stat_numbackends();
	v = hp_alloc(a, (n + 1) * sizeof(*v));
	for (int i = 1; i <= n; i++)
	{
		LocalPgBackendStatus *local = hpg_local_beentry(i);
		PgBackendStatus *be = local ? &local->backendStatus : NULL;
		bool		active = false;

		if (be == NULL || be->st_procpid <= 0 || be->st_procpid == MyProcPid ||
			!hpg_published_active(be->st_procpid, &active) || !active)
			continue;
		v[k].pid = be->st_procpid;
		v[k].proc.pid = be->st_procpid;
		v[k].proc.start = unix_us(be->st_proc_start_timestamp);
		v[k].proc.role = be->st_userid;
		v[k].proc.database = be->st_databaseid;
		v[k].proc.backend_type = hp_strdup(a, GetBackendTypeDesc(be->st_backendType));
		v[k].proc.application = hp_strdup(a, be->st_appname ? be->st_appname : "");
		v[k].proc.encoding = "";
		k++;
	}
	*count = k;
	return v;
}

/*
 * Ask one process for its profile and summarise it into t->proc (rows in
 * a); false if it could not be asked (it exited, did not answer in time):
 * left out of this tick.  Each process in a subtransaction of its own, so
 * that what a failed one held (files, its request's slot) is released and
 * the tick goes on.
 */
static bool
ask(hp_arena *a, target *t)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile bool ok = true;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		StringInfoData dump;
		hp_options	o = HP_OPTIONS_DEFAULT;
		hp_result  *r;

		hp_arena   *scratch;
		hp_hist_proc rows;

		initStringInfo(&dump);
		hpg_proc_dump((hpg_proc) {.self = false,.pid = t->pid}, &dump, true,
					  hpg_report_budget_read, &dump);
		o.fold = true;
		o.fold_names = hp_postgres_allocator;
		r = hpg_analyze(&dump, NULL, &o, HP_REPORT_STACKS, 0);
		/* each process within the report's memory limit: the tick keeps only its rows */
		scratch = hpg_engine_begin(true);
		hp_hist_summarize(scratch, &r->profile, &r->graph, (size_t) history_top, &rows);
		hp_hist_copy_rows(a, &rows, &t->proc);
		t->proc.encoding = hp_strdup(a, r->profile.encoding);
		hpg_engine_end(scratch);
		hpg_analysis_end(r);
		pfree(dump.data);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		ErrorData  *e;

		MemoryContextSwitchTo(cxt);
		e = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		/* a process that exits between the list and the request is no failure */
		if (e->sqlerrcode != ERRCODE_UNDEFINED_OBJECT &&
			!(e->sqlerrcode == ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE && kill(t->pid, 0) != 0))
			report("process %d left out of a tick: %s", t->pid, e->message);
		FreeErrorData(e);
		ok = false;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	return ok;
}

/* Write the tick as one file of the history folder. */
static void
keep(hp_arena *a, const hp_hist_tick *tick, int asked)
{
	hp_buf		out;
	/* a file takes a filesystem block at least: so many files fill the size too */
	hpg_quota	q = {.max_count = (int) Min((int64) hpg_history_size_mb * (1024 / 4), INT_MAX),
	.max_bytes = (int64) hpg_history_size_mb * 1024 * 1024};
	hpg_draft	d;
	char		name[HPG_MAX_NAME + 1];
	int			rc;

	hp_buf_init(&out, a);
	hp_hist_write(&out, tick);
	if ((rc = hpg_store_dir_ready(HPG_HISTORY_DIR)) != 0)
	{
		report("could not use folder \"%s\": %s", HPG_HISTORY_DIR, strerror(rc));
		return;
	}
	if (hpg_store_room(HPG_HISTORY_DIR, &q, HPG_SHARED, true, 1, (int64) out.len, true, NULL) != 0)
	{
		report("a tick of %zu bytes does not fit heapprof.history_size (%d MB)", out.len, hpg_history_size_mb);
		return;
	}
	hpg_store_time_name(name, sizeof(name), "history");
	if ((rc = hpg_draft_open(&d, HPG_HISTORY_DIR)) != 0 ||
		(rc = hpg_draft_write(&d, out.data, out.len)) != 0 ||
		(rc = hpg_draft_publish(&d, name, false)) != 0)
	{
		report("could not keep a tick in \"%s\": %s", HPG_HISTORY_DIR, strerror(rc));
		return;
	}
	SpinLockAcquire(&hpg_shmem->mutex);
	hpg_shmem->collector.last_tick = GetCurrentTimestamp();
	hpg_shmem->collector.processes = asked;
	hpg_shmem->collector.answered = (int) tick->nprocs;
	hpg_shmem->collector.tick_bytes = (int64) out.len;
	hpg_shmem->collector.ticks++;
	SpinLockRelease(&hpg_shmem->mutex);
}

/*
 * One tick, in a transaction (try_tick): asking another process checks its
 * role in the catalog, and what an error leaves is the transaction's (its
 * memory included).  The tick's rows are bounded by heapprof.history_top
 * per process, each process's analysis by heapprof.report_memory_limit.
 */
static void
tick(void)
{
	hp_arena   *a;
	hp_hist_tick t = {0};
	target	   *v;
	int			n;

	MemoryContextSwitchTo(TopTransactionContext);
	a = hpg_engine_begin(false);

	t.time = unix_us(GetCurrentTimestamp());
	t.interval = (int64) hpg_history_interval * USECS_PER_SEC;
	v = targets(a, &n);
	t.procs = hp_alloc(a, (n + 1) * sizeof(*t.procs));
	for (int i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		if (ask(a, &v[i]))
			t.procs[t.nprocs++] = v[i].proc;
	}
	keep(a, &t, n);
}

/*
 * A tick that failed is reported and lost, never the worker: the next one
 * tries again.  The tick is a subtransaction of the transaction it runs
 * in, rolled back on an error, as each process's request is one of the tick.
 */
static void
try_tick(void)
{
	ResourceOwner owner;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	owner = CurrentResourceOwner;
	BeginInternalSubTransaction(NULL);
	PG_TRY();
	{
		tick();
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		ErrorData  *e;

		MemoryContextSwitchTo(TopTransactionContext);
		e = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		report("a tick was lost: %s", e->message);
		FreeErrorData(e);
	}
	PG_END_TRY();
	CurrentResourceOwner = owner;
	CommitTransactionCommand();
}

PGDLLEXPORT void hpg_collector_main(Datum arg);

void
hpg_collector_main(Datum arg)
{
	TimestampTz next = 0;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	/* a restarted worker keeps its predecessor's last error: why it ended may be there */
	SpinLockAcquire(&hpg_shmem->mutex);
	hpg_shmem->collector.pid = MyProcPid;
	hpg_shmem->collector.ticks = 0;
	SpinLockRelease(&hpg_shmem->mutex);

	for (;;)
	{
		long		wait_ms = -1;
		int			events = WL_LATCH_SET | WL_EXIT_ON_PM_DEATH;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			next = 0;
		}
		if (hpg_history_interval > 0)
		{
			TimestampTz now = GetCurrentTimestamp();

			if (next == 0)
				next = now;
			if (now >= next)
			{
				try_tick();
				/* the next tick on the interval's grid; a late one does not queue more */
				next += (int64) hpg_history_interval * USECS_PER_SEC;
				now = GetCurrentTimestamp();
				if (next <= now)
					next = now + (int64) hpg_history_interval * USECS_PER_SEC;
			}
			wait_ms = (long) Max(1, (next - now + 999) / 1000);
			events |= WL_TIMEOUT;
		}
		(void) WaitLatch(MyLatch, events, wait_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
