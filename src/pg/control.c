/*
 * control.c -- status and switches of jemalloc's profiler in this backend.
 *
 * Every backend is a forked process with its own profiler state: these
 * functions act on the calling backend, or with pid => N on process N
 * through remote.c.  heapprof_status() must work on
 * any server, with or without jemalloc: it is the diagnostic that tells the
 * DBA what to set.  Every other function raises a clear error when profiling
 * is not usable.
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "heapprof_pg.h"

PG_FUNCTION_INFO_V1(heapprof_status);
PG_FUNCTION_INFO_V1(heapprof_enable);
PG_FUNCTION_INFO_V1(heapprof_disable);
PG_FUNCTION_INFO_V1(heapprof_reset);

#define SETUP_HINT_TAIL \
	"in the postmaster's environment and restart the server (on Debian: /etc/postgresql/15/<cluster>/environment)."

const char *
hp_setup_hint(hpj_state state)
{
	switch (state)
	{
		case HPJ_USABLE:
			return NULL;
		case HPJ_NOT_LOADED:
			return "Set LD_PRELOAD=" HEAPPROF_JEMALLOC_SO " and MALLOC_CONF="
				HEAPPROF_MALLOC_CONF " " SETUP_HINT_TAIL;
		case HPJ_NOT_ALLOCATOR:
			return "jemalloc must replace malloc for the whole server: set LD_PRELOAD="
				HEAPPROF_JEMALLOC_SO " and MALLOC_CONF=" HEAPPROF_MALLOC_CONF " "
				SETUP_HINT_TAIL " Loading it later (dlopen, shared_preload_libraries) is not enough.";
		case HPJ_NO_PROF_BUILD:
			return "Use a jemalloc built with --enable-prof (Debian's libjemalloc2 is): set LD_PRELOAD="
				HEAPPROF_JEMALLOC_SO " and MALLOC_CONF=" HEAPPROF_MALLOC_CONF " " SETUP_HINT_TAIL;
		case HPJ_PROF_OFF:
			return "Set MALLOC_CONF=" HEAPPROF_MALLOC_CONF " (prof:true is required; other options may follow) "
				SETUP_HINT_TAIL;
	}
	return NULL;
}

static const char *
state_message(hpj_state state)
{
	switch (state)
	{
		case HPJ_USABLE:
			break;
		case HPJ_NOT_LOADED:
			return "jemalloc is not loaded in this server process";
		case HPJ_NOT_ALLOCATOR:
			return "jemalloc is loaded but is not this server process's allocator";
		case HPJ_NO_PROF_BUILD:
			return "the loaded jemalloc was built without heap profiling";
		case HPJ_PROF_OFF:
			return "jemalloc heap profiling was not enabled when the server started";
	}
	return "jemalloc heap profiling is usable";
}

/* ERROR unless jemalloc is the allocator and was started with prof:true. */
void
hp_require_profiling(void)
{
	hpj_state	state = hpj_probe();
	const char *conf;

	if (state == HPJ_USABLE)
		return;
	conf = getenv("MALLOC_CONF");
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("%s", state_message(state)),
			 state == HPJ_PROF_OFF ?
			 errdetail("MALLOC_CONF is \"%s\".", conf ? conf : "") : 0,
			 errhint("%s", hp_setup_hint(state))));
}

/* ERROR for a request another process could not carry out. */
void
hp_check_remote(int pid, const hp_remote *r, const char *what)
{
	if (r->rc < 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("in process %d: %s", pid, state_message(r->status.state)),
				 errhint("%s", hp_setup_hint(r->status.state))));
	if (r->rc > 0)
		ereport(ERROR,
				(errcode(ERRCODE_SYSTEM_ERROR),
				 errmsg("jemalloc in process %d could not %s: %s", pid, what, strerror(r->rc)),
				 errhint("Check heapprof_status(pid => %d) and the server log.", pid)));
}

/* Does argument arg name a process other than this one? (NULL: this one) */
bool
hp_is_other(FunctionCallInfo fcinfo, int arg, int *pid)
{
	if (PG_NARGS() <= arg || PG_ARGISNULL(arg))
		return false;
	*pid = PG_GETARG_INT32(arg);
	return *pid != MyProcPid;
}

/* ERROR for a failed mallctl call on a process where profiling is usable. */
void
hp_check_mallctl(int rc, const char *what)
{
	if (rc == 0)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_SYSTEM_ERROR),
			 errmsg("jemalloc could not %s: %s", what, strerror(rc)),
			 errhint("Check heapprof_status() and the server log; the server's MALLOC_CONF may restrict profiling.")));
}

/* heapprof_status(pid integer DEFAULT NULL): this process's, or pid's */
Datum
heapprof_status(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	hpj_status	st;
	Datum		values[10];
	bool		nulls[10] = {0};
	const char *hint;
	int			pid = MyProcPid;
	hp_remote	r;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);

	if (hp_is_other(fcinfo, 0, &pid))
	{
		hp_remote_call(pid, HP_OP_STATUS, -1, NULL, &r);
		st = r.status;
		st.version = r.version[0] ? r.version : NULL;
	}
	else
		hpj_get_status(&st);
	hint = hp_setup_hint(st.state);
	if (hint == NULL && !hp_remote_available())
		hint = "Add heapprof to shared_preload_libraries and restart to profile other processes by pid and to use exit dumps.";

	values[0] = Int32GetDatum(pid);
	values[1] = BoolGetDatum(st.state != HPJ_NOT_LOADED && st.state != HPJ_NOT_ALLOCATOR);
	if (st.version)
		values[2] = CStringGetTextDatum(st.version);
	else
		nulls[2] = true;
	values[3] = BoolGetDatum(st.prof_enabled);
	values[4] = BoolGetDatum(st.active);
	values[5] = Int64GetDatum((int64) st.sample_interval);
	nulls[5] = !st.have_sample;
	values[6] = Int64GetDatum((int64) st.allocated);
	values[7] = Int64GetDatum((int64) st.active_bytes);
	values[8] = Int64GetDatum((int64) st.resident);
	nulls[6] = nulls[7] = nulls[8] = !st.have_stats;
	if (hint)
		values[9] = CStringGetTextDatum(hint);
	else
		nulls[9] = true;

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

static bool
set_active(FunctionCallInfo fcinfo, bool on)
{
	hpj_status	st;
	hp_remote	r;
	int			pid;
	const char *what = on ? "activate profiling" : "deactivate profiling";

	if (hp_is_other(fcinfo, 0, &pid))
	{
		hp_remote_call(pid, on ? HP_OP_ENABLE : HP_OP_DISABLE, -1, NULL, &r);
		hp_check_remote(pid, &r, what);
		return r.status.active;
	}
	hp_require_profiling();
	hp_check_mallctl(hpj_set_active(on), what);
	hp_publish_state();
	hpj_get_status(&st);
	return st.active;
}

/* heapprof_enable(pid integer DEFAULT NULL) */
Datum
heapprof_enable(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(set_active(fcinfo, true));
}

/* heapprof_disable(pid integer DEFAULT NULL) */
Datum
heapprof_disable(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(set_active(fcinfo, false));
}

/*
 * heapprof_reset(sample_interval bigint DEFAULT NULL, pid integer DEFAULT
 * NULL): forget every sample taken so far; with an interval, also sample
 * every that-many bytes on average from now on.  Returns the interval in
 * force after the call.
 */
Datum
heapprof_reset(PG_FUNCTION_ARGS)
{
	int			lg = -1;
	hpj_status	st;
	hp_remote	r;
	int			pid;
	bool		other = hp_is_other(fcinfo, 1, &pid);

	if (!other)
		hp_require_profiling();
	if (!PG_ARGISNULL(0))
	{
		int64		interval = PG_GETARG_INT64(0);

		if (interval < 1 || interval > (INT64CONST(1) << HPJ_MAX_LG_SAMPLE) ||
			(interval & (interval - 1)) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("sample_interval must be a power of two between 1 and %lld bytes, not %lld",
							(long long) (INT64CONST(1) << HPJ_MAX_LG_SAMPLE), (long long) interval),
					 errhint("Use 524288 (jemalloc's default), a smaller power of two such as 65536 for more detail, or 1 to record every allocation.")));
		for (lg = 0; (INT64CONST(1) << lg) < interval; lg++)
			;
	}
	if (other)
	{
		hp_remote_call(pid, HP_OP_RESET, lg, NULL, &r);
		hp_check_remote(pid, &r, "reset the heap profile");
		PG_RETURN_INT64((int64) r.status.sample_interval);
	}
	hp_check_mallctl(hpj_reset(lg), "reset the heap profile");
	hp_publish_state();
	hpj_get_status(&st);
	PG_RETURN_INT64((int64) st.sample_interval);
}
