/*
 * reports.c -- heap profiles as SQL values and relations.
 *
 * SQL glue only: each function reads its arguments (args.c), gets the
 * profiles they name -- live from this process or process N (process.c), or
 * stored (snapshots.c) -- runs the engine (analysis.c) and copies the result
 * into a tuplestore or a value.  Everything is allocated in a "heapprof
 * report" memory context, during which this thread's own allocations are not
 * sampled, so heapprof does not show up in the profiles it reports.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "analysis.h"
#include "args.h"
#include "compat.h"
#include "jemalloc.h"
#include "process.h"
#include "shmem.h"
#include "sqltext.h"
#include "stored.h"
#include "engine/format.h"

PG_FUNCTION_INFO_V1(heapprof_dump_dot);
PG_FUNCTION_INFO_V1(heapprof_dump_text);
PG_FUNCTION_INFO_V1(heapprof_dump_collapsed);
PG_FUNCTION_INFO_V1(heapprof_top);
PG_FUNCTION_INFO_V1(heapprof_stacks);
PG_FUNCTION_INFO_V1(heapprof_query_bytes);
PG_FUNCTION_INFO_V1(heapprof_dump_raw);
PG_FUNCTION_INFO_V1(heapprof_dump_portable);
PG_FUNCTION_INFO_V1(heapprof_forget_symbols);
PG_FUNCTION_INFO_V1(heapprof_dump_flamegraph);
PG_FUNCTION_INFO_V1(heapprof_dump_pprof);
PG_FUNCTION_INFO_V1(heapprof_peak);
PG_FUNCTION_INFO_V1(heapprof_allocations);

typedef void (*emit_fn) (FunctionCallInfo fcinfo, const hp_result *r);

/* What a report is of, beyond what its arguments name. */
typedef enum report_of
{
	OF_ARGS,					/* the profile the arguments name */
	OF_PEAK,					/* its process's peak */
	OF_WINDOW_FREED				/* a window, joined with what it freed by its end */
} report_of;

/*
 * Say why a report came out empty, from what is known rather than a guess:
 * the filter when it left nothing of a profile that holds something, the
 * window when it recorded nothing, else the profile's own emptiness.
 */
static void
notice_if_empty(const hp_result *r, const hpg_report_args *a)
{
	const hp_graph *g = &r->graph;
	bool		filtered = a->o.focus || a->o.ignore;
	bool		active = false;
	hpj_status	st;

	if ((g->npaths > 0 && g->local_total != 0) || r->nqueries > 0)
		return;
	if (a->o.with_queryid || a->o.context)
	{
		ereport(NOTICE,
				(errmsg("no sampled allocation of the heap profile has that %s", a->o.context ? "context" : "queryid"),
				 errhint("heapprof_stacks() shows each stack's queryid and context; a queryid is recorded only with compute_query_id on (or auto with pg_stat_statements loaded) and heapprof.labels on.")));
		return;
	}
	if (filtered && g->npaths == 0 && g->total != 0)
	{
		ereport(NOTICE,
				(errmsg("focus / ignore matched no stack of the heap profile"),
				 errhint("The profile is not empty; heapprof_stacks() shows the frames the patterns are matched against (names, file:line, object+0xOFFSET).")));
		return;
	}
	if (filtered && g->npaths > 0)
	{
		ereport(NOTICE,
				(errmsg("the stacks focus / ignore kept sum to zero"),
				 a->base ?
				 errhint("Nothing changed in them between the base and the profile; without focus / ignore the report shows what changed.") :
				 errhint("Their allocations and frees balance out; without focus / ignore the report shows the rest of the profile.")));
		return;
	}
	if (a->seconds > 0)
	{
		ereport(NOTICE,
				(errmsg("process %d made no sampled allocation during the window", a->proc.pid),
				 hpg_published_active(a->proc.pid, &active) && active ?
				 errhint("The window records the allocations made during it, on average one per sampling interval: a longer window or a busier process records more.") :
				 errhint("Nothing is sampled in process %d: enable it with heapprof_enable(pid => %d) first.",
						 a->proc.pid, a->proc.pid)));
		return;
	}
	if (a->stored || a->base || !a->proc.self)
	{
		ereport(NOTICE,
				(errmsg("the heap profile is empty"),
				 a->base ? errhint("Nothing changed between the base and the profile.") :
				 a->stored ? errhint("The stored profile holds no sampled allocation.") :
				 hpg_published_active(a->proc.pid, &active) && active ?
				 errhint("Sampling is active in process %d, but no sampled allocation is live there yet: it records allocations made after heapprof_enable(pid => %d), on average one per sampling interval.",
						 a->proc.pid, a->proc.pid) :
				 errhint("Nothing is sampled in process %d: enable it with heapprof_enable(pid => %d) first.",
						 a->proc.pid, a->proc.pid)));
		return;
	}
	hpj_get_status(&st);
	ereport(NOTICE,
			(errmsg("the heap profile of this backend is empty"),
			 !st.active ?
			 errhint("Profiling is not active in this backend: run SELECT heapprof_enable(), then the workload to profile.") :
			 errhint("No sampled allocation is live yet. With sampling every %llu bytes on average, small workloads may leave none; heapprof_reset(sample_interval => 1) records every allocation.",
					 (unsigned long long) st.sample_interval)));
}

/*
 * jemalloc records only what is allocated while sampling is active: say so
 * when the profile holds much less than its process had allocated (a
 * quarter missing, and at least PARTIAL_MIN_BYTES: more than a backend
 * usually holds before anyone enables it), so that nobody takes it for the
 * whole heap.
 */
#define PARTIAL_MIN_BYTES (32.0 * 1024 * 1024)

static void
notice_if_partial(const hp_result *r)
{
	const hp_coverage *c = &r->graph.coverage;
	double		allocated = (double) c->allocated;
	double		held = r->graph.profile_bytes;

	if (!c->known || r->graph.npaths == 0 || allocated - held < PARTIAL_MIN_BYTES ||
		held > 0.75 * allocated)
		return;
	ereport(NOTICE,
			(errmsg("the heap profile holds %.1f MB of the %.1f MB its process had allocated",
					held / 1048576.0, allocated / 1048576.0),
			 c->since ?
			 errdetail("jemalloc records only allocations made while sampling is active, here since %s.",
					   timestamptz_to_str(HPG_TIMESTAMP_OF_UNIX(c->since))) :
			 errdetail("jemalloc records only allocations made while sampling is active."),
			 errhint("To see what a process allocates from its start, set heapprof.enable_at_start = on for new sessions, or start the server with MALLOC_CONF=prof:true,prof_active:true.")));
}

/* Bytes for people: 1.5 GB, 12.0 MB, 640 kB. */
static char *
pretty_bytes(int64 bytes)
{
	return text_to_cstring(DatumGetTextPP(DirectFunctionCall1(pg_size_pretty, Int64GetDatum(bytes))));
}

/*
 * jemalloc's records of a window of allocations in process pid as two
 * profiles: every allocation made in the window, and those of them already
 * freed when it ended.
 */
static void
window_profiles(hpg_report_args *a, StringInfo made, StringInfo freed)
{
	StringInfoData json;
	StringInfoData ids;
	StringInfoData maps;
	hp_recent_stats st;
	int64		from;
	int64		to;

	initStringInfo(&json);
	initStringInfo(&ids);
	initStringInfo(&maps);
	hpg_proc_record(a->proc, a->seconds, &json, &ids, &maps, &from, &to);
	appendBinaryStringInfo(made, ids.data, ids.len);
	hpg_recent_heap(&json, from, to, HP_RECENT_ALLOCATED, made, &st);
	appendBinaryStringInfo(made, maps.data, maps.len);
	if (freed)
	{
		appendBinaryStringInfo(freed, ids.data, ids.len);
		hpg_recent_heap(&json, from, to, HP_RECENT_FREED, freed, &st);
		appendBinaryStringInfo(freed, maps.data, maps.len);
	}
	if (st.truncated)
		ereport(NOTICE,
				(errmsg("process %d made more sampled allocations in the window than it records (%lld)",
						a->proc.pid, (long long) st.max_records),
				 errdetail("The report covers the last part of the window only."),
				 errhint("Use a shorter window, or raise heapprof.recent_allocations for that process's role or database.")));
}

/*
 * The profile the arguments name, appended to dump (and, for a window, the
 * freed part to freed when not NULL); returns what it is, for titles.
 */
static char *
get_profile(hpg_report_args *a, StringInfo dump, StringInfo freed)
{
	hpg_peak	peak;
	hp_capture *c;

	if (a->seconds > 0)
	{
		window_profiles(a, dump, freed);
		return psprintf("allocations of process %d during %g s", a->proc.pid, a->seconds);
	}
	if (a->peak)
	{
		hpg_proc_peak(a->proc, dump, &peak);
		return psprintf("peak of process %d: %s at %s (profile taken at %s)", a->proc.pid,
						pretty_bytes(peak.bytes), timestamptz_to_str(peak.taken_at),
						pretty_bytes(peak.profile_bytes));
	}
	if (a->stored)
	{
		hpg_stored_read(a->stored, dump, 0);
		c = palloc(sizeof(hp_capture));
		if (hp_read_capture(dump->data, dump->len, c))
			return c->queryid ?
				psprintf("%s: statement capture of query %lld, %s left behind", a->stored, c->queryid,
						 pretty_bytes(c->growth)) :
				psprintf("%s: statement capture, %s left behind", a->stored, pretty_bytes(c->growth));
		return pstrdup(a->stored);
	}
	hpg_proc_dump(a->proc, dump, true, hpg_report_budget_read, dump);
	return psprintf("live heap of process %d", a->proc.pid);
}

/*
 * Run the engine on the profile the arguments name and hand the result to
 * emit, which fills the function's tuplestore; without emit, the report's
 * text is returned as one value (a varlena: text or bytea) instead.  A base
 * is subtracted; a window's freed part, with OF_WINDOW_FREED, joined.
 */
static struct varlena *
run_report(FunctionCallInfo fcinfo, hp_report_kind kind, emit_fn emit, report_of of)
{
	hpg_report_args a;
	struct varlena *value = NULL;
	MemoryContext cxt;
	MemoryContext old;
	StringInfoData dump;
	StringInfoData base;
	hp_result  *r;
	char	   *what;

	hpg_report_args_get(fcinfo, kind, &a);
	a.peak = a.peak || of == OF_PEAK;
	a.o.join_base = of == OF_WINDOW_FREED;
	a.o.home_object = "postgres";
	if (emit)
		InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	cxt = AllocSetContextCreate(CurrentMemoryContext, "heapprof report", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	hpg_unsampled_while_context();
	initStringInfo(&dump);
	initStringInfo(&base);
	what = get_profile(&a, &dump, a.o.join_base ? &base : NULL);
	if (a.peak || a.seconds > 0)
		a.o.program = psprintf("postgres, %s", what);
	if (kind == HP_REPORT_FLAMEGRAPH)
		a.o.program = a.title ? a.title :
			psprintf("heapprof: %s%s%s", what, a.base ? " minus " : "", a.base ? a.base : "");
	if (a.base)
		(void) hpg_stored_read(a.base, &base, dump.len);
	r = hpg_analyze(&dump, a.base || a.o.join_base ? &base : NULL, &a.o, kind, a.limit);
	notice_if_empty(r, &a);
	if (!a.peak && a.seconds == 0)
		notice_if_partial(r);
	if (emit)
		emit(fcinfo, r);
	else
	{
		value = MemoryContextAlloc(old, VARHDRSZ + r->text.len);
		SET_VARSIZE(value, VARHDRSZ + r->text.len);
		if (r->text.len)
			memcpy(VARDATA(value), r->text.data, r->text.len);
	}
	hpg_analysis_end(r);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	return value;
}


static void
emit_lines(FunctionCallInfo fcinfo, const hp_result *r)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const char *p = r->text.data;
	const char *end = p + r->text.len;

	while (p && p < end)
	{
		const char *nl = memchr(p, '\n', end - p);
		size_t		len = nl ? (size_t) (nl - p) : (size_t) (end - p);
		Datum		value = PointerGetDatum(hpg_text(p, len));
		bool		isnull = false;

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &value, &isnull);
		p += len + 1;
	}
}

static Datum
pct_datum(double v, double total, bool *isnull)
{
	double		pct = v * 100.0 / total;

	/* an empty or diffed profile has no meaningful share */
	*isnull = total == 0 || !isfinite(pct);
	return Float8GetDatum(*isnull ? 0 : round(pct * 10) / 10);
}

static void
emit_top(FunctionCallInfo fcinfo, const hp_result *r)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	double		total = r->graph.local_total;

	for (size_t i = 0; i < r->nrows; i++)
	{
		const hp_row *row = &r->rows[i];
		Datum		values[8];
		bool		nulls[8] = {0};

		values[0] = Int32GetDatum((int32) (i + 1));
		values[1] = Int64GetDatum(row->whole_flat);
		values[2] = pct_datum(row->flat, total, &nulls[2]);
		values[3] = pct_datum(row->running, total, &nulls[3]);
		values[4] = Int64GetDatum(hp_whole_cum(row));
		values[5] = pct_datum(row->cum, total, &nulls[5]);
		values[6] = HpgTextDatum(row->func->name);
		if (row->func->location)
			values[7] = HpgTextDatum(row->func->location);
		else
			nulls[7] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/*
 * A row per stack, frames[1] = leaf: its bytes and objects and, for a window
 * joined with what it freed (heapprof_allocations), how much of it was
 * freed again by the window's end ("temporary": input 1's bytes).
 */
static void
emit_paths(FunctionCallInfo fcinfo, const hp_result *r, bool temporary)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const hp_graph *g = &r->graph;
	hp_wholes	bytes = {0};
	hp_wholes	objs = {0};

	for (size_t k = 0; k < g->npaths; k++)
	{
		const hp_path *path = &g->paths[k];
		Datum	   *frames = palloc(sizeof(Datum) * (path->nframes + 1));
		const char *ctx = hp_labels_context(&r->profile, path);
		Datum		values[7];
		bool		nulls[7] = {0};
		int			n = 0;

		CHECK_FOR_INTERRUPTS();
		for (uint32 j = 0; j < path->nframes; j++)
			frames[j] = HpgTextDatum(g->funcs[path->frames[j]].name);
		/* the rows add up to the Total of the text report */
		values[n++] = Int64GetDatum(hp_whole_next(&bytes, path->bytes));
		values[n++] = Int64GetDatum(hp_whole_next(&objs, path->objs));
		if (temporary)
		{
			/* each part is unsampled on its own: a share cannot exceed the whole */
			double		temp = Min(path->input[2], path->bytes);

			values[n++] = Int64GetDatum((int64) llround(temp));
			values[n] = pct_datum(temp, path->bytes, &nulls[n]);
			n++;
		}
		values[n++] = PointerGetDatum(construct_array(frames, (int) path->nframes, TEXTOID, -1, false, TYPALIGN_INT));
		if (!temporary)
		{
			/* the statement (as pg_stat_statements has it) and the memory context; 1.1 has no such columns */
			values[n] = Int64GetDatum((int64) path->queryid);
			nulls[n++] = !(path->labels & HP_HAS_QUERY);
			values[n] = ctx ? HpgTextDatum(ctx) : (Datum) 0;
			nulls[n++] = ctx == NULL;
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		pfree(frames);
	}
}

static void
emit_stacks(FunctionCallInfo fcinfo, const hp_result *r)
{
	emit_paths(fcinfo, r, false);
}

static void
emit_allocations(FunctionCallInfo fcinfo, const hp_result *r)
{
	emit_paths(fcinfo, r, true);
}

/* A row per queryid: what each statement's allocations hold, and its text as the process saw it. */
static void
emit_queries(FunctionCallInfo fcinfo, const hp_result *r)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	hp_wholes	bytes = {0};
	hp_wholes	objs = {0};

	for (size_t k = 0; k < r->nqueries; k++)
	{
		const hp_query_row *q = &r->queries[k];
		Datum		values[4];
		bool		nulls[4] = {0};

		CHECK_FOR_INTERRUPTS();
		values[0] = Int64GetDatum((int64) q->queryid);
		nulls[0] = !q->has_queryid;
		values[1] = q->text ? PointerGetDatum(hpg_text_in(q->text, strlen(q->text), r->profile.encoding)) : (Datum) 0;
		nulls[1] = q->text == NULL;
		values[2] = Int64GetDatum(hp_whole_next(&bytes, q->bytes));
		values[3] = Int64GetDatum(hp_whole_next(&objs, q->objs));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/* ---- SQL functions: their arguments are in heapprof--1.0.sql and args.c ---- */

Datum
heapprof_dump_dot(PG_FUNCTION_ARGS)
{
	run_report(fcinfo, HP_REPORT_DOT, emit_lines, OF_ARGS);
	return (Datum) 0;
}

Datum
heapprof_dump_text(PG_FUNCTION_ARGS)
{
	run_report(fcinfo, HP_REPORT_TEXT, emit_lines, OF_ARGS);
	return (Datum) 0;
}

Datum
heapprof_dump_collapsed(PG_FUNCTION_ARGS)
{
	run_report(fcinfo, HP_REPORT_COLLAPSED, emit_lines, OF_ARGS);
	return (Datum) 0;
}

Datum
heapprof_top(PG_FUNCTION_ARGS)
{
	run_report(fcinfo, HP_REPORT_TOP, emit_top, OF_ARGS);
	return (Datum) 0;
}

/* a row per stack, frames[1] = leaf */
Datum
heapprof_stacks(PG_FUNCTION_ARGS)
{
	run_report(fcinfo, HP_REPORT_STACKS, emit_stacks, OF_ARGS);
	return (Datum) 0;
}

/* a row per queryid (heapprof_queries joins pg_stat_statements) */
Datum
heapprof_query_bytes(PG_FUNCTION_ARGS)
{
	run_report(fcinfo, HP_REPORT_QUERIES, emit_queries, OF_ARGS);
	return (Datum) 0;
}

/* heapprof_top's rows for the profile at the process's highest memory use */
Datum
heapprof_peak(PG_FUNCTION_ARGS)
{
	run_report(fcinfo, HP_REPORT_TOP, emit_top, OF_PEAK);
	return (Datum) 0;
}

/*
 * heapprof_allocations(seconds, pid, ...): per stack, what process pid
 * allocated during the window and how much of it it had freed again by the
 * window's end ("temporary").
 */
Datum
heapprof_allocations(PG_FUNCTION_ARGS)
{
	run_report(fcinfo, HP_REPORT_STACKS, emit_allocations, OF_WINDOW_FREED);
	return (Datum) 0;
}

/* one self-contained interactive SVG */
Datum
heapprof_dump_flamegraph(PG_FUNCTION_ARGS)
{
	text	   *svg = (text *) run_report(fcinfo, HP_REPORT_FLAMEGRAPH, NULL, OF_ARGS);

	PG_RETURN_TEXT_P(hpg_text(VARDATA(svg), VARSIZE(svg) - VARHDRSZ));
}

/* a gzip-compressed pprof profile */
Datum
heapprof_dump_pprof(PG_FUNCTION_ARGS)
{
	PG_RETURN_BYTEA_P((bytea *) run_report(fcinfo, HP_REPORT_PPROF, NULL, OF_ARGS));
}

/* The dump of process pid (argument 0) as text, after heapprof's "%" lines or without them. */
static text *
dump_as_text(FunctionCallInfo fcinfo, bool identity)
{
	StringInfoData dump;
	size_t		skip;

	/* no report budget: this is the way out of it (heapprof-report off the server) */
	initStringInfo(&dump);
	hpg_proc_dump(hpg_proc_of(PG_ARGISNULL(0), PG_GETARG_INT32(0)), &dump, identity, NULL, NULL);
	skip = identity ? 0 : hp_header_length(dump.data, dump.len);
	/* paths in the maps section must be valid in the database encoding */
	pg_verifymbstr(dump.data + skip, dump.len - (int) skip, false);
	return hpg_text(dump.data + skip, dump.len - (int) skip);
}

/* heapprof_dump_raw(pid): the jemalloc dump verbatim, for jeprof or heapprof-report */
Datum
heapprof_dump_raw(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(dump_as_text(fcinfo, false));
}

/*
 * heapprof_dump_portable(pid): the raw dump after heapprof's "%" lines (the
 * build-ids of the loaded objects, where jemalloc is, what the profile
 * covers), so that heapprof-report can name it on another machine; jeprof
 * takes them as comments.
 */
Datum
heapprof_dump_portable(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(dump_as_text(fcinfo, true));
}

/* heapprof_forget_symbols(): drop this backend's symbol caches; returns bytes freed */
Datum
heapprof_forget_symbols(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(hpg_forget_symbols());
}
