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

#include "capture.h"
#include "compat.h"
#include "errors.h"
#include "files.h"
#include "process.h"
#include "request.h"

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
hpg_proc_status(hpg_proc p, hpj_status *st, char *version, size_t size)
{
	hpg_answer	a;

	if (p.self)
	{
		hpj_get_status(st);
		strlcpy(version, st->version ? st->version : "", size);
	}
	else
	{
		hpg_request(p.pid, HPG_OP_STATUS, -1, NULL, &a);
		*st = a.status;
		strlcpy(version, a.version, size);
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
	hpg_check_mallctl(hpj_set_active(on), what);
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
	hpg_publish_state();
	hpj_get_status(&st);
	return (int64) st.sample_interval;
}

void
hpg_proc_dump(hpg_proc p, StringInfo out, bool identity)
{
	char		path[MAXPGPATH];
	char		ids[MAXPGPATH];
	hpg_answer	a;

	if (p.self)
	{
		hpg_capture_self(out, identity);
		return;
	}
	/* the target writes both files; they are removed on every path */
	hpg_dump_path(path, sizeof(path), "remote");
	snprintf(ids, sizeof(ids), "%s.ids", path);
	PG_TRY();
	{
		hpg_request(p.pid, HPG_OP_DUMP, -1, path, &a);
		hpg_check_answer(p.pid, &a, "write the heap profile");
		if (identity)
			hpg_read_file(ids, out, false);
		hpg_read_file(path, out, false);
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
