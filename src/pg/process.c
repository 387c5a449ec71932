/*
 * process.c -- "this process or process N", decided once.
 *
 * jemalloc's profiler state is per process.  For the calling backend each
 * operation calls jemalloc directly (and publishes the new state for
 * heapprof_backends()); for another process it becomes a request that the
 * target carries out on itself (request.c, target.c).
 */
#include "postgres.h"

#include <unistd.h>

#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "analysis.h"
#include "compat.h"
#include "errors.h"
#include "files.h"
#include "labels.h"
#include "myprofile.h"
#include "peak.h"
#include "process.h"
#include "request.h"
#include "store.h"
#include "stored.h"

hpg_proc
hpg_proc_of(bool isnull, int32 pid)
{
	hpg_proc	p = {true, MyProcPid};

	if (!isnull && pid != MyProcPid)
	{
		p.self = false;
		p.pid = pid;
	}
	return p;
}

void
hpg_proc_status(hpg_proc p, hpj_status *st, char *version, size_t size, hpg_peak *peak)
{
	hpg_answer	a;

	if (p.self)
	{
		hpj_get_status(st);
		strlcpy(version, st->version ? st->version : "", size);
		hpg_peak_get(peak);
	}
	else
	{
		hpg_request(p.pid, HPG_OP_STATUS, -1, NULL, &a);
		*st = a.status;
		strlcpy(version, a.version, size);
		*peak = a.peak;
	}
	st->version = version[0] ? version : NULL;
}

bool
hpg_proc_set_active(hpg_proc p, bool on)
{
	const char *what = on ? "activate profiling" : "deactivate profiling";
	hpj_status	st;
	hpg_answer	a;

	if (!p.self)
	{
		hpg_request(p.pid, on ? HPG_OP_ENABLE : HPG_OP_DISABLE, -1, NULL, &a);
		hpg_check_answer(p.pid, &a, what);
		return a.status.active;
	}
	hpg_require_profiling();
	hpj_get_status(&st);
	hpg_check_mallctl(hpj_set_active(on), what);
	hpg_labels_follow(on);
	if (on && !st.active)
		hpg_peak_reset();		/* the peak is since profiling was enabled */
	hpg_publish_state();
	hpj_get_status(&st);
	return st.active;
}

int64
hpg_proc_reset(hpg_proc p, int lg_sample)
{
	hpj_status	st;
	hpg_answer	a;

	if (!p.self)
	{
		hpg_request(p.pid, HPG_OP_RESET, lg_sample, NULL, &a);
		hpg_check_answer(p.pid, &a, "reset the heap profile");
		return (int64) a.status.sample_interval;
	}
	hpg_require_profiling();
	hpg_check_mallctl(hpj_reset(lg_sample), "reset the heap profile");
	hpg_peak_reset();
	hpg_publish_state();
	hpj_get_status(&st);
	return (int64) st.sample_interval;
}

void
hpg_proc_dump(hpg_proc p, StringInfo out, bool identity, hpg_read_check check, void *arg)
{
	char		path[MAXPGPATH];
	char		ids[MAXPGPATH];
	hpg_answer	a;

	if (p.self)
	{
		hpg_my_profile(out, identity, check, arg);
		return;
	}
	/* the target writes both files; they are removed on every path */
	hpg_dump_path(path, sizeof(path), "remote");
	snprintf(ids, sizeof(ids), "%s.ids", path);
	PG_TRY();
	{
		hpg_request(p.pid, HPG_OP_DUMP, -1, path, &a);
		hpg_check_file_answer(p.pid, &a, "the heap profile", path);
		if (identity)
			hpg_read_file(ids, out, false);
		hpg_read_file_checked(path, out, false, check, arg);
	}
	PG_FINALLY();
	{
		hpg_remove_dump_files(path);
	}
	PG_END_TRY();
}

const char *
hpg_proc_type(hpg_proc p)
{
	int			n;

	if (p.self)
		return GetBackendTypeDesc(MyBackendType);
	n = pgstat_fetch_stat_numbackends();
	for (int i = 1; i <= n; i++)
	{
		LocalPgBackendStatus *local = hpg_local_beentry(i);

		if (local && local->backendStatus.st_procpid == p.pid)
			return GetBackendTypeDesc(local->backendStatus.st_backendType);
	}
	return "unknown";
}

/* What a process without a peak profile lacks. */
static void
no_peak(hpg_proc p, const hpg_peak *info)
{
	if (!info->available)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("process %d does not track its peak", p.pid),
				 errhint("Peak profiles need shared_preload_libraries = 'heapprof' and jemalloc 5.3 or later (see heapprof_status()).")));
	if (info->failed_errno != 0)
	{
		errno = info->failed_errno;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("process %d could not write its peak profile: %m", p.pid),
				 errhint("Check free space and permissions of the data directory's %s folder; the process tries again as its memory grows.", HPG_PEAK_DIR)));
	}
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("process %d has no peak profile yet", p.pid),
			 errhint("A peak profile is taken while sampling is active and heapprof.track_peak is on: run heapprof_enable(%s), then the workload.",
					 p.self ? "" : psprintf("pid => %d", p.pid))));
}

void
hpg_proc_peak(hpg_proc p, StringInfo out, hpg_peak *info)
{
	hpg_answer	a;

	if (p.self)
	{
		hpg_require_profiling();
		hpg_peak_get(info);
	}
	else
	{
		hpg_request(p.pid, HPG_OP_STATUS, -1, NULL, &a);
		hpg_check_answer(p.pid, &a, "report its peak");
		*info = a.peak;
	}
	if (info->taken_at == 0)
		no_peak(p, info);
	if (!hpg_stored_read_peak(p.pid, out))
		no_peak(p, info);
	if (info->failed_errno != 0)
	{
		errno = info->failed_errno;
		ereport(NOTICE,
				(errmsg("process %d could not write a later peak profile: %m", p.pid),
				 errdetail("This is the profile of an earlier, lower peak."),
				 errhint("Check free space and permissions of the data directory's %s folder.", HPG_PEAK_DIR)));
	}
}

/* Wait ms milliseconds, or less if the query is cancelled (ERROR). */
static void
sleep_interruptibly(int64 ms)
{
	TimestampTz until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), ms);

	for (;;)
	{
		long		left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), until);

		CHECK_FOR_INTERRUPTS();
		if (left <= 0)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, left, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/* How long after its window a target keeps recording, for the request that collects it. */
#define RECORD_GRACE_MS 10000

void
hpg_proc_record(hpg_proc p, double seconds, StringInfo json, StringInfo ids, StringInfo maps,
				int64 *from, int64 *to)
{
	int64		ms = (int64) (seconds * 1000);
	char		path[MAXPGPATH];
	char		file[MAXPGPATH];
	hpg_answer	a;

	Assert(!p.self);
	hpg_request(p.pid, HPG_OP_WINDOW_START, (int) (ms + RECORD_GRACE_MS), NULL, &a);
	hpg_check_answer(p.pid, &a, "record its allocations");
	if (!a.status.active)
		ereport(NOTICE,
				(errmsg("sampling is not active in process %d: the window will record nothing", p.pid),
				 errhint("Enable it first with heapprof_enable(pid => %d).", p.pid)));
	*from = a.clock_ns;
	sleep_interruptibly(ms);
	hpg_dump_path(path, sizeof(path), "records");
	PG_TRY();
	{
		hpg_request(p.pid, HPG_OP_WINDOW_FETCH, -1, path, &a);
		hpg_check_file_answer(p.pid, &a, "its record of recent allocations", path);
		*to = a.clock_ns;
		/* only reports ask for windows: the records count in their budget */
		hpg_read_file_checked(path, json, false, hpg_report_budget_read, json);
		snprintf(file, sizeof(file), "%s.ids", path);
		hpg_read_file(file, ids, false);
		snprintf(file, sizeof(file), "%s.maps", path);
		hpg_read_file(file, maps, false);
	}
	PG_FINALLY();
	{
		hpg_remove_dump_files(path);
	}
	PG_END_TRY();
}
