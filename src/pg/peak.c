/*
 * peak.c -- the heap at its highest: the profile live when this process held the most.
 *
 * A backend's memory can spike and fall back (a hash join's table, a big
 * sort) long before anyone looks, and jemalloc keeps no profile of the past.
 * So heapprof takes one on the way up.  jemalloc calls a hook for the
 * backtrace of every sampled allocation (where labels.c also labels it);
 * there heapprof compares what this thread holds (allocated minus freed:
 * two counters) with the next threshold.  Nothing may be dumped inside
 * malloc, so passing it only asks for the process's next
 * CHECK_FOR_INTERRUPTS through the memory-context interrupt that requests from other processes use (target.c), where the
 * profile is written to $PGDATA/heapprof/peaks/PID.heap (its identity lines
 * in PID.heap.ids), replacing the previous one.
 *
 * A new profile is due when the process holds an eighth more than at the
 * last one, and at least 1 MiB more -- tcmalloc's peak heap profile waits
 * for a tenth: a dump at every new byte would cost one per allocation while
 * memory grows, this way a process growing to N bytes takes about
 * log(N) / log(9/8) of them.  So the profile is of the last threshold
 * passed, and the peak's size beside it is jemalloc's thread.peak (within
 * 100 kB).  A backend is one thread; a process whose memory other threads
 * free is measured as its main thread sees it.
 *
 * The next threshold is raised only once the profile is written: a write
 * that fails (a full disk) is tried again after another PEAK_STEP_MIN, at
 * most once a second, and its errno is kept for heapprof_peak() to report.  Only the latest profile
 * is kept.  Enabling or resetting profiling starts over; at exit the file
 * goes, unless an exit dump keeps the peak (exitdump.c); those of processes
 * that could not clean up (a crash, an auxiliary process at shutdown) go
 * when the server starts (store.c).
 */
#include "postgres.h"

#include <sys/stat.h>
#include <unistd.h>

#include "miscadmin.h"
#include "storage/ipc.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "jemalloc.h"
#include "labels.h"
#include "myprofile.h"
#include "peak.h"
#include "recording.h"
#include "store.h"
#include "engine/format.h"

#define PEAK_STEP_MIN ((int64) 1024 * 1024)
#define RETRY_NS ((int64) 1000 * 1000 * 1000)

static bool track_peak = true;
static hpj_backtrace_fn prev_backtrace;

/* Plain data the hook reads: it runs inside malloc. */
static int	owner;				/* the process due_above is for: a forked one starts over */
static int64 due_above;			/* a profile is due above this many bytes held */
static volatile sig_atomic_t due;

static int64 base_net;			/* held at the last reset: thread.peak counts from there */
static int64 taken_bytes;		/* held when the profile was taken; 0: none */
static TimestampTz taken_at;	/* 0: none */
static int	failed_errno;		/* of the last attempt, if it failed */
static int64 retry_at;			/* jemalloc's clock: not before, after a failure */
static bool exit_registered;

void
hpg_peak_path(char *path, size_t size, int pid)
{
	snprintf(path, size, "%s/%d.heap", HPG_PEAK_DIR, pid);
}

/* Ask for this process's next CHECK_FOR_INTERRUPTS (target.c serves it). */
static void
ring_self(void)
{
	InterruptPending = true;
	LogMemoryContextPending = true;
}

static void
backtrace_hook(void **vec, unsigned *len, unsigned max_len)
{
	int64		net;

	/* room at the root for the labels */
	prev_backtrace(vec, len, max_len > HP_LABEL_FRAMES ? max_len - HP_LABEL_FRAMES : max_len);
	hpg_labels_push(vec, len, max_len);
	if (!IsUnderPostmaster || due)
		return;
	net = hpj_thread_net();
	if (owner != MyProcPid)
	{
		/* what a new process holds at its first sample is no peak yet */
		owner = MyProcPid;
		due_above = net + PEAK_STEP_MIN;
	}
	if ((track_peak && net > due_above && (failed_errno == 0 || hpj_clock_ns() >= retry_at)) ||
		hpg_recording_overdue())
	{
		due = true;
		ring_self();
	}
}

static void
remove_files(int pid)
{
	char		path[MAXPGPATH];

	hpg_peak_path(path, sizeof(path), pid);
	unlink(path);
}

static void
peak_exit(int code, Datum arg)
{
	remove_files(MyProcPid);
}

void
hpg_peak_register(void)
{
	if (!exit_registered)
		on_proc_exit(peak_exit, (Datum) 0);
	exit_registered = true;
}

void
hpg_peak_init(void)
{
	DefineCustomBoolVariable("heapprof.track_peak",
							 "Keep the heap profile of each process's highest memory use while sampling is active.",
							 "heapprof_peak() reports it. Needs shared_preload_libraries = 'heapprof'.",
							 &track_peak,
							 true,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);
	if (!process_shared_preload_libraries_in_progress || hpj_probe() != HPJ_USABLE)
		return;
	(void) hpj_thread_net();	/* find the counters and the clock now: the hook cannot ask */
	(void) hpj_clock_ns();
	if (hpj_hook_backtrace(backtrace_hook, &prev_backtrace) != 0 || prev_backtrace == NULL)
	{
		prev_backtrace = NULL;
		ereport(LOG,
				(errmsg("heapprof: this jemalloc has no prof_backtrace hook; heapprof_peak() is not available"),
				 errhint("Peak profiles need jemalloc 5.3 or later.")));
	}
	else
		hpg_labels_hooked();
}

bool
hpg_peak_due(void)
{
	return due;
}

void
hpg_peak_reset(void)
{
	remove_files(MyProcPid);
	taken_bytes = 0;
	taken_at = 0;
	failed_errno = 0;
	base_net = hpj_thread_net();
	owner = MyProcPid;
	due_above = base_net + PEAK_STEP_MIN;
	(void) hpj_thread_peak_reset();
}

void
hpg_peak_get(hpg_peak *p)
{
	uint64_t	growth = 0;

	memset(p, 0, sizeof(*p));
	p->available = prev_backtrace != NULL;
	p->profile_bytes = taken_bytes;
	p->taken_at = taken_at;
	p->failed_errno = failed_errno;
	if (taken_at != 0 && hpj_thread_peak(&growth) == 0)
		p->bytes = Max(base_net + (int64) growth, taken_bytes);
	else
		p->bytes = taken_bytes;
}

/*
 * Take the profile if one is due: from target.c, at a CHECK_FOR_INTERRUPTS,
 * under HOLD_INTERRUPTS.  Plain C.
 */
void
hpg_peak_serve(void)
{
	static char ids[HP_IDENTITY_MAX];
	char		name[16];
	hpg_draft	raw;
	hpg_draft	out;
	int64		net;
	int			rc;

	if (!due)
		return;
	due = false;
	net = hpj_thread_net();
	if (!track_peak || net <= due_above)
		return;					/* memory fell back before this point, or tracking is off */
	/* jemalloc writes to a path: a draft's, created here, so never a planted link or FIFO */
	if ((rc = hpg_store_dir_ready(HPG_PEAK_DIR)) == 0 &&
		(rc = hpg_draft_open(&raw, HPG_PEAK_DIR)) == 0 && (rc = hpg_draft_close(&raw)) == 0)
	{
		if ((rc = hpj_dump(raw.path)) == 0 &&
			(rc = hpg_draft_open(&out, HPG_PEAK_DIR)) == 0 &&
			(rc = hpg_draft_write(&out, ids, hpg_identity_text(ids, sizeof(ids), true))) == 0 &&
			(rc = hpg_draft_append_file(&out, raw.path)) == 0)
		{
			snprintf(name, sizeof(name), "%d", MyProcPid);
			rc = hpg_draft_publish(&out, name, true);
		}
		hpg_draft_discard(&raw);
	}
	failed_errno = rc;
	if (rc != 0)
	{
		/* try again a little higher, at most once a second */
		due_above = net + PEAK_STEP_MIN;
		retry_at = hpj_clock_ns() + RETRY_NS;
		return;
	}
	due_above = Max(net + net / 8, net + PEAK_STEP_MIN);
	hpg_peak_register();
	taken_bytes = net;
	taken_at = GetCurrentTimestamp();
}
