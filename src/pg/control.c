/*
 * control.c -- status and switches of jemalloc's profiler, and the processes to pick from.
 *
 * Every backend is a forked process with its own profiler state: these
 * functions act on the calling backend, or with pid => N on process N
 * (process.c decides which).  heapprof_status() works on any server, with
 * or without jemalloc; every other function raises a clear error when
 * profiling is not usable.
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "catalog/pg_authid_d.h"
#include "miscadmin.h"
#include "storage/procarray.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "errors.h"
#include "objects.h"
#include "process.h"
#include "request.h"
#include "shmem.h"
#include "sqltext.h"
#include "symindex.h"

PG_FUNCTION_INFO_V1(heapprof_status);
PG_FUNCTION_INFO_V1(heapprof_status_1_1);
PG_FUNCTION_INFO_V1(heapprof_status_1_2);
PG_FUNCTION_INFO_V1(heapprof_enable);
PG_FUNCTION_INFO_V1(heapprof_disable);
PG_FUNCTION_INFO_V1(heapprof_reset);
PG_FUNCTION_INFO_V1(heapprof_backends);
PG_FUNCTION_INFO_V1(heapprof_requests);

#define PROC_ARG(i) hpg_proc_of(PG_ARGISNULL(i), PG_GETARG_INT32(i))

/*
 * heapprof_status(pid integer DEFAULT NULL): this process's, or pid's.
 * Version 1.0 of the SQL has one hint that also carries the debug-info
 * advice; 1.1 keeps hint for what profiling still needs (NULL when usable
 * with heapprof preloaded) and gives that advice in names_hint.  Each SQL
 * version has its own entry point: a database not yet updated keeps the
 * 1.0 definition when the library is new.  1.2 adds the shared symbol
 * indexes: the bytes of their folder, and this backend's modules named
 * from one (hits) or indexed on its own (misses); NULL for another pid.
 */
static Datum
status_row(FunctionCallInfo fcinfo, int sql_version)
{
	bool		names_column = sql_version >= 1;
	int			natts = sql_version >= 2 ? 18 : names_column ? 15 : 14;
	TupleDesc	tupdesc;
	hpj_status	st;
	char		version[64];
	Datum		values[18];
	bool		nulls[18] = {0};
	hpg_peak	peak;
	const char *hint;
	const char *debug_hint;
	hpg_proc	p = PROC_ARG(0);

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE ||
		tupdesc->natts != natts)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("heapprof_status() does not match its SQL definition"),
				 errhint("ALTER EXTENSION heapprof UPDATE brings the SQL definitions to this library's version.")));
	tupdesc = BlessTupleDesc(tupdesc);

	hpg_proc_status(p, &st, version, sizeof(version), &peak);
	hint = hpg_setup_hint(st.state);
	if (hint == NULL && hpg_shmem == NULL)
		hint = "Add heapprof to shared_preload_libraries and restart to profile other processes by pid and to use exit dumps.";
	values[12] = hpg_missing_debug_info(&debug_hint);
	if (names_column)
	{
		if (debug_hint)
			values[14] = HpgTextDatum(debug_hint);
		else
			nulls[14] = true;
	}
	/* 1.0: what to install for names matters once profiling works */
	else if (debug_hint && st.state == HPJ_USABLE)
		hint = hint ? psprintf("%s %s", hint, debug_hint) : debug_hint;

	values[0] = Int32GetDatum(p.pid);
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
	values[9] = TimestampTzGetDatum(HPG_TIMESTAMP_OF_UNIX(st.sampling_since));
	nulls[9] = st.sampling_since == 0;
	values[10] = Int64GetDatum(peak.bytes);
	values[11] = TimestampTzGetDatum(peak.taken_at);
	nulls[10] = nulls[11] = peak.taken_at == 0;
	if (hint)
		values[13] = HpgTextDatum(hint);
	else
		nulls[13] = true;
	if (sql_version >= 2)
	{
		hp_index_counts c;

		hp_symbolizer_counts(&c);
		values[15] = Int64GetDatum(hpg_symindex_bytes());
		values[16] = Int64GetDatum((int64) c.hits);
		values[17] = Int64GetDatum((int64) c.misses);
		nulls[16] = nulls[17] = !p.self;
	}

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

Datum
heapprof_status(PG_FUNCTION_ARGS)
{
	return status_row(fcinfo, 0);
}

Datum
heapprof_status_1_1(PG_FUNCTION_ARGS)
{
	return status_row(fcinfo, 1);
}

Datum
heapprof_status_1_2(PG_FUNCTION_ARGS)
{
	return status_row(fcinfo, 2);
}

/* heapprof_enable(pid integer DEFAULT NULL) */
Datum
heapprof_enable(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(hpg_proc_set_active(PROC_ARG(0), true));
}

/* heapprof_disable(pid integer DEFAULT NULL) */
Datum
heapprof_disable(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(hpg_proc_set_active(PROC_ARG(0), false));
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
	hpg_proc	p = PROC_ARG(1);

	if (p.self)
		hpg_require_profiling();
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
	PG_RETURN_INT64(hpg_proc_reset(p, lg));
}

static const char *
state_name(BackendState state)
{
	switch (state)
	{
		case STATE_IDLE:
			return "idle";
		case STATE_RUNNING:
			return "active";
		case STATE_IDLEINTRANSACTION:
			return "idle in transaction";
		case STATE_IDLEINTRANSACTION_ABORTED:
			return "idle in transaction (aborted)";
		case STATE_FASTPATH:
			return "fastpath function call";
		default:
			return NULL;
	}
}

/*
 * heapprof_backends(): the processes heapprof can reach, to pick a pid.
 * Everyone sees what pg_stat_activity shows everyone (pid, type, role,
 * application); a process's state and what it published to heapprof only
 * a role that pg_stat_activity shows its state to: one with the privileges
 * of its role, or of pg_read_all_stats.
 */
Datum
heapprof_backends(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			n = pgstat_fetch_stat_numbackends();
	bool		all_stats = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);

	InitMaterializedSRF(fcinfo, 0);
	hpg_publish_state();
	for (int i = 1; i <= n; i++)
	{
		LocalPgBackendStatus *local = hpg_local_beentry(i);
		PgBackendStatus *be = local ? &local->backendStatus : NULL;
		Datum		values[8];
		bool		nulls[8] = {0};
		PGPROC	   *proc;
		char	   *user;
		const char *state;
		hpg_published *pub;

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
		nulls[4] = nulls[5] = nulls[6] = nulls[7] = true;
		if (!all_stats && !has_privs_of_role(GetUserId(), be->st_userid))
		{
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
			continue;
		}
		state = state_name(be->st_state);
		values[4] = state ? CStringGetTextDatum(state) : (Datum) 0;
		nulls[4] = state == NULL;
		if (hpg_shmem)
		{
			hpg_published p = {0};

			SpinLockAcquire(&hpg_shmem->mutex);
			pub = hpg_published_of(hpg_procno(proc));
			if (pub)
				p = *pub;
			SpinLockRelease(&hpg_shmem->mutex);
			/* known only once the process took part in heapprof */
			if (p.pid == be->st_procpid)
			{
				values[5] = BoolGetDatum(p.active);
				nulls[5] = false;
				values[6] = Int64GetDatum(p.allocated);
				nulls[6] = p.allocated < 0;
				values[7] = TimestampTzGetDatum(HPG_TIMESTAMP_OF_UNIX(p.sampling_since));
				nulls[7] = p.sampling_since == 0;
			}
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * heapprof_requests(): the requests under way, to see who holds the slots
 * (too many heapprof requests, 53300).  Slots of requests whose target or
 * requester is gone are freed first.
 */
Datum
heapprof_requests(PG_FUNCTION_ARGS)
{
	static const char *const ops[] = {"status", "enable", "disable", "reset", "dump", "window start", "window fetch"};
	static const char *const states[] = {"free", "pending", "working", "done", "abandoned"};
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	hpg_slot	copy[HPG_NSLOTS];

	StaticAssertDecl(lengthof(ops) == HPG_OP_COUNT, "a name for every hpg_op");
	StaticAssertDecl(lengthof(states) == SLOT_STATE_COUNT, "a name for every hpg_slot_state");
	InitMaterializedSRF(fcinfo, 0);
	if (hpg_shmem == NULL)
		return (Datum) 0;
	hpg_reclaim_slots();
	SpinLockAcquire(&hpg_shmem->mutex);
	memcpy(copy, hpg_shmem->slots, sizeof(copy));
	SpinLockRelease(&hpg_shmem->mutex);
	for (int i = 0; i < HPG_NSLOTS; i++)
	{
		const hpg_slot *s = &copy[i];
		Datum		values[6];
		bool		nulls[6] = {0};
		char	   *role;

		if (s->state == SLOT_FREE)
			continue;
		values[0] = Int32GetDatum(s->requester);
		role = GetUserNameFromId(s->requester_role, true);
		values[1] = role ? CStringGetTextDatum(role) : (Datum) 0;
		nulls[1] = role == NULL;
		values[2] = Int32GetDatum(s->target);
		values[3] = CStringGetTextDatum((unsigned) s->op < HPG_OP_COUNT ? ops[s->op] : "?");
		values[4] = CStringGetTextDatum((unsigned) s->state < SLOT_STATE_COUNT ? states[s->state] : "?");
		values[5] = TimestampTzGetDatum(s->since);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
