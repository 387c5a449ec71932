/*
 * reports.c -- the calling backend's heap profile as SQL relations.
 *
 * Each function dumps the profile (dump.c), hands it to the engine
 * (src/engine, plain C) and copies the result into a tuplestore.  Engine
 * memory is malloc'ed in one arena and freed in PG_FINALLY, so an ERROR
 * anywhere leaks nothing.  While the engine works, this thread's allocations
 * are not sampled, so heapprof does not show up in the profiles it reports.
 * One symbolizer session lives per backend and is reused across calls.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_collation_d.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "regex/regex.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "heapprof_pg.h"
#include "engine/report.h"

PG_FUNCTION_INFO_V1(heapprof_dump_dot);
PG_FUNCTION_INFO_V1(heapprof_dump_text);
PG_FUNCTION_INFO_V1(heapprof_dump_collapsed);
PG_FUNCTION_INFO_V1(heapprof_top);
PG_FUNCTION_INFO_V1(heapprof_stacks);
PG_FUNCTION_INFO_V1(heapprof_dump_raw);
PG_FUNCTION_INFO_V1(heapprof_forget_symbols);
PG_FUNCTION_INFO_V1(heapprof_dump_flamegraph);
PG_FUNCTION_INFO_V1(heapprof_dump_pprof);

#define MAX_ROWS 1000000
#define MAX_NODES 100000

/*
 * One symbolizer per backend, kept between reports: opening ELF files and
 * building indexes is most of a cold report's time.  symbolizer_bytes is the
 * heap it holds (libdwfl's and ours), measured with jemalloc's per-thread
 * counters around each analysis; above heapprof.symbol_cache_limit it is
 * dropped after the report.
 */
static hp_symbolizer *symbolizer;
static int64 symbolizer_bytes;
int			hp_symbol_cache_limit_kb = 65536;
bool		hp_profile_self = false;

static int64
drop_symbolizer(void)
{
	int64		freed = symbolizer_bytes;
	int64		before = hpj_thread_net();

	hp_symbolizer_free(symbolizer);
	symbolizer = NULL;
	symbolizer_bytes = 0;
	/* what was really returned, when jemalloc can tell */
	return before > 0 ? before - hpj_thread_net() : freed;
}

/* ---- arguments: NULL or out-of-range values are errors naming the range ---- */

static void
null_arg(const char *name, const char *allowed)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("%s must not be NULL", name),
			 errhint("Allowed values: %s.", allowed)));
}

static bool
arg_bool(FunctionCallInfo fcinfo, int i, const char *name)
{
	if (PG_ARGISNULL(i))
		null_arg(name, "true or false");
	return PG_GETARG_BOOL(i);
}

static int
arg_int(FunctionCallInfo fcinfo, int i, const char *name, int lo, int hi)
{
	int			v;

	if (PG_ARGISNULL(i))
		null_arg(name, psprintf("%d to %d", lo, hi));
	v = PG_GETARG_INT32(i);
	if (v < lo || v > hi)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be between %d and %d, not %d", name, lo, hi, v),
				 errhint("Allowed values: %d to %d.", lo, hi)));
	return v;
}

static double
arg_fraction(FunctionCallInfo fcinfo, int i, const char *name)
{
	double		v;

	if (PG_ARGISNULL(i))
		null_arg(name, "a fraction from 0 to 1");
	v = PG_GETARG_FLOAT8(i);
	if (!(v >= 0 && v <= 1))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be between 0 and 1, not %g", name, v),
				 errhint("Allowed values: a fraction from 0 to 1, e.g. 0.005 to hide nodes below 0.5%% of the profile.")));
	return v;
}

/* fold => true: charge memory to the caller of palloc & co. (see fold.c) */
static void
arg_fold(FunctionCallInfo fcinfo, int i, hp_options *o)
{
	if (arg_bool(fcinfo, i, "fold"))
		hp_fold_postgres(o);
}

/*
 * focus / ignore are matched with PostgreSQL's regular expressions (as the ~
 * operator, in the C collation): unlike libc's, they check stack depth,
 * bound their memory and can be cancelled, so no pattern can crash or hang
 * the backend.
 */
#define REGEX_FLAGS (REG_ADVANCED | REG_NOSUB)

static bool
pg_match(void *pattern, const char *s)
{
	return RE_compile_and_execute((text *) pattern, unconstify(char *, s), (int) strlen(s),
								  REGEX_FLAGS, C_COLLATION_OID, 0, NULL);
}

static void
pg_interrupt(void)
{
	CHECK_FOR_INTERRUPTS();
}

/* A regular expression argument, compiled now so errors come early; NULL = none. */
static text *
arg_regex(FunctionCallInfo fcinfo, int i, const char *name, hp_options *o)
{
	text	   *pattern;
	MemoryContext cxt = CurrentMemoryContext;

	if (PG_ARGISNULL(i))
		return NULL;
	pattern = PG_GETARG_TEXT_P_COPY(i);
	PG_TRY();
	{
		RE_compile_and_cache(pattern, REGEX_FLAGS, C_COLLATION_OID);
	}
	PG_CATCH();
	{
		ErrorData  *e;

		MemoryContextSwitchTo(cxt);
		e = CopyErrorData();
		if (e->sqlerrcode != ERRCODE_INVALID_REGULAR_EXPRESSION)
			PG_RE_THROW();
		FlushErrorState();
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_REGULAR_EXPRESSION),
				 errmsg("invalid %s pattern: %s", name, e->message),
				 errhint("%s takes a regular expression as the ~ operator does, matched against function names, source file:line and 16-digit addresses.", name)));
	}
	PG_END_TRY();
	o->match = pg_match;
	return pattern;
}

/* objects, focus, ignore: the options every report shares, at args 0..2 */
static void
common_options(FunctionCallInfo fcinfo, int first, hp_options *o)
{
	o->measure = arg_bool(fcinfo, first, "objects") ? HP_INUSE_OBJECTS : HP_INUSE_SPACE;
	o->focus = arg_regex(fcinfo, first + 1, "focus", o);
	o->ignore = arg_regex(fcinfo, first + 2, "ignore", o);
	o->interrupt = pg_interrupt;
	o->program = psprintf("postgres (pid %d)", MyProcPid);
}

/* ---- running the engine ---- */

typedef void (*emit_fn) (FunctionCallInfo fcinfo, const hp_result *r, const hp_options *o);

static void
report_engine_error(hp_status rc, const char *err)
{
	switch (rc)
	{
		case HP_ENOMEM:
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("%s", err)));
			break;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("could not analyse the heap profile: %s", err),
					 errhint("Save it with heapprof_dump_raw() and report it to heapprof's developers.")));
	}
}

/* Where a report's profiles come from: live, or stored (store.c). */
typedef struct sources
{
	const char *dump;			/* stored profile to report on, or NULL */
	const char *base;			/* stored profile to subtract, or NULL */
	bool		other;			/* without dump: process pid, not this one */
	int			pid;
} sources;

/* base, drop_negative, dump, pid: the arguments naming profiles, at args first.. */
static void
source_args(FunctionCallInfo fcinfo, int first, hp_options *o, sources *src)
{
	src->base = PG_ARGISNULL(first) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(first));
	o->drop_negative = arg_bool(fcinfo, first + 1, "drop_negative");
	src->dump = PG_ARGISNULL(first + 2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(first + 2));
	src->other = hp_is_other(fcinfo, first + 3, &src->pid);
	if (src->dump && src->other)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("dump and pid cannot both be given"),
				 errhint("dump names a stored profile; pid names a live process.")));
	if (src->other)
		o->program = psprintf("postgres (pid %d)", src->pid);
}

static void
notice_if_empty(const hp_result *r, const sources *src)
{
	hpj_status	st;

	if (r->graph.npaths > 0 && r->graph.local_total != 0)
		return;
	if (src->dump || src->base || src->other)
	{
		ereport(NOTICE,
				(errmsg("the heap profile is empty"),
				 errhint(src->base ? "Nothing changed between the base and the profile, or focus / ignore left no stack." :
						 src->other ? "Nothing is sampled in that process: enable it with heapprof_enable(pid => N) first." :
						 "The stored profile holds no sampled allocation.")));
		return;
	}
	hpj_get_status(&st);
	ereport(NOTICE,
			(errmsg("the heap profile of this backend is empty"),
			 !st.active ?
			 errhint("Profiling is not active in this backend: run SELECT heapprof_enable(), then the workload to profile.") :
			 r->graph.npaths > 0 ?
			 errhint("focus or ignore left no stack.") :
			 errhint("No sampled allocation is live yet. With sampling every %llu bytes on average, small workloads may leave none; heapprof_reset(sample_interval => 1) records every allocation.",
					 (unsigned long long) st.sample_interval)));
}

/*
 * Run the engine on the profile src names and hand the result to emit, which
 * fills the function's tuplestore; without emit, the report's text is
 * returned as one value (a varlena: text or bytea) instead.
 */
static struct varlena *
run_report(FunctionCallInfo fcinfo, const hp_options *o, const sources *src,
		   hp_report_kind kind, size_t limit, emit_fn emit)
{
	struct varlena *volatile value = NULL;
	StringInfoData dump;
	StringInfoData base;
	/* behind a pointer that PG_TRY does not change: its contents survive a longjmp */
	hp_arena   *arena = palloc(sizeof(hp_arena));
	bool		was_active = true;
	bool		switched;

	if (src->dump == NULL && !src->other)
		hp_require_profiling();
	/* keep heapprof's own work, the symbolizer's caches above all, out of the profile */
	switched = !hp_profile_self && hpj_thread_active(false, &was_active) == 0;
	hp_arena_init(arena);
	PG_TRY();
	{
		hp_result	r;
		char		err[512];
		hp_status	rc;
		int64		before;

		initStringInfo(&dump);
		initStringInfo(&base);
		if (src->dump)
			hp_store_read(src->dump, &dump);
		else if (src->other)
			hp_take_remote_dump(src->pid, &dump);
		else
			hp_take_dump(&dump, true);
		if (src->base)
			hp_store_read(src->base, &base);
		if (emit)
			InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);

		before = hpj_thread_net();
		if (symbolizer == NULL && (symbolizer = hp_symbolizer_new()) == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("could not start the elfutils symbolizer")));
		rc = hp_analyze(arena, symbolizer, dump.data, dump.len,
						src->base ? base.data : NULL, base.len,
						o, kind, limit, &r, err, sizeof(err));
		/* what the analysis left allocated, but for its arena, is the symbolizer's */
		symbolizer_bytes += hpj_thread_net() - before - (int64) arena->total;
		if (rc != HP_OK)
			report_engine_error(rc, err);
		notice_if_empty(&r, src);
		if (emit)
			emit(fcinfo, &r, o);
		else
		{
			value = palloc(VARHDRSZ + r.text.len);
			SET_VARSIZE(value, VARHDRSZ + r.text.len);
			if (r.text.len)
				memcpy(VARDATA(value), r.text.data, r.text.len);
		}
	}
	PG_FINALLY();
	{
		hp_arena_free(arena);
		if (switched)
			hpj_thread_active(was_active, NULL);
	}
	PG_END_TRY();
	pfree(arena);

	if (symbolizer_bytes > (int64) hp_symbol_cache_limit_kb * 1024)
		drop_symbolizer();
	return value;
}

/* ---- emitting rows ---- */

/*
 * Text from ELF and DWARF (names, file names) in the database encoding:
 * bytes that do not form a valid character become '?'.
 */
static text *
safe_text(const char *s, size_t len)
{
	char	   *copy;
	size_t		i = 0;

	if (pg_verifymbstr(s, (int) len, true))
		return cstring_to_text_with_len(s, (int) len);
	copy = palloc(len + 1);
	while (i < len)
	{
		int			n = pg_encoding_verifymbchar(GetDatabaseEncoding(), s + i, (int) (len - i));

		if (n <= 0)
		{
			copy[i++] = '?';
			continue;
		}
		memcpy(copy + i, s + i, n);
		i += n;
	}
	return cstring_to_text_with_len(copy, (int) len);
}

#define SafeTextDatum(s) PointerGetDatum(safe_text((s), strlen(s)))

static void
emit_lines(FunctionCallInfo fcinfo, const hp_result *r, const hp_options *o)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const char *p = r->text.data;
	const char *end = p + r->text.len;

	while (p && p < end)
	{
		const char *nl = memchr(p, '\n', end - p);
		size_t		len = nl ? (size_t) (nl - p) : (size_t) (end - p);
		Datum		value = PointerGetDatum(safe_text(p, len));
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
emit_top(FunctionCallInfo fcinfo, const hp_result *r, const hp_options *o)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	double		total = r->graph.local_total;

	for (size_t i = 0; i < r->nrows; i++)
	{
		const hp_row *row = &r->rows[i];
		Datum		values[8];
		bool		nulls[8] = {0};

		values[0] = Int32GetDatum((int32) (i + 1));
		values[1] = Int64GetDatum(hp_whole(row->flat));
		values[2] = pct_datum(row->flat, total, &nulls[2]);
		values[3] = pct_datum(row->running, total, &nulls[3]);
		values[4] = Int64GetDatum(hp_whole(row->cum));
		values[5] = pct_datum(row->cum, total, &nulls[5]);
		values[6] = SafeTextDatum(row->func->name);
		if (row->func->location)
			values[7] = SafeTextDatum(row->func->location);
		else
			nulls[7] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

static void
emit_stacks(FunctionCallInfo fcinfo, const hp_result *r, const hp_options *o)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const hp_graph *g = &r->graph;

	for (size_t k = 0; k < g->npaths; k++)
	{
		const hp_path *path = &g->paths[k];
		Datum	   *frames = palloc(sizeof(Datum) * (path->nframes + 1));
		Datum		values[3];
		bool		nulls[3] = {0};

		for (uint32 j = 0; j < path->nframes; j++)
			frames[j] = SafeTextDatum(g->funcs[path->frames[j]].name);
		values[0] = Int64GetDatum(hp_whole(path->bytes));
		values[1] = Int64GetDatum(hp_whole(path->objs));
		values[2] = PointerGetDatum(construct_array(frames, (int) path->nframes, TEXTOID, -1, false, TYPALIGN_INT));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		pfree(frames);
	}
}

/* ---- SQL functions ---- */

/* heapprof_dump_dot(objects, focus, ignore, nodecount, nodefraction, edgefraction, show_bytes, fold, base, drop_negative, dump, pid) */
Datum
heapprof_dump_dot(PG_FUNCTION_ARGS)
{
	hp_options	o = HP_OPTIONS_DEFAULT;
	sources		src;

	common_options(fcinfo, 0, &o);
	o.nodecount = arg_int(fcinfo, 3, "nodecount", 1, MAX_NODES);
	o.nodefraction = arg_fraction(fcinfo, 4, "nodefraction");
	o.edgefraction = arg_fraction(fcinfo, 5, "edgefraction");
	o.show_bytes = arg_bool(fcinfo, 6, "show_bytes");
	arg_fold(fcinfo, 7, &o);
	source_args(fcinfo, 8, &o, &src);
	run_report(fcinfo, &o, &src, HP_REPORT_DOT, SIZE_MAX, emit_lines);
	return (Datum) 0;
}

/* heapprof_dump_text(n, objects, focus, ignore, show_bytes, fold, base, drop_negative, dump, pid); n NULL = every row */
Datum
heapprof_dump_text(PG_FUNCTION_ARGS)
{
	hp_options	o = HP_OPTIONS_DEFAULT;
	sources		src;
	size_t		n = PG_ARGISNULL(0) ? SIZE_MAX : (size_t) arg_int(fcinfo, 0, "n", 1, MAX_ROWS);

	common_options(fcinfo, 1, &o);
	o.show_bytes = arg_bool(fcinfo, 4, "show_bytes");
	arg_fold(fcinfo, 5, &o);
	source_args(fcinfo, 6, &o, &src);
	run_report(fcinfo, &o, &src, HP_REPORT_TEXT, n, emit_lines);
	return (Datum) 0;
}

/* heapprof_dump_collapsed(objects, focus, ignore, fold, base, drop_negative, dump, pid) */
Datum
heapprof_dump_collapsed(PG_FUNCTION_ARGS)
{
	hp_options	o = HP_OPTIONS_DEFAULT;
	sources		src;

	common_options(fcinfo, 0, &o);
	arg_fold(fcinfo, 3, &o);
	source_args(fcinfo, 4, &o, &src);
	run_report(fcinfo, &o, &src, HP_REPORT_COLLAPSED, SIZE_MAX, emit_lines);
	return (Datum) 0;
}

/* heapprof_top(n, objects, focus, ignore, fold, base, drop_negative, dump, pid) */
Datum
heapprof_top(PG_FUNCTION_ARGS)
{
	hp_options	o = HP_OPTIONS_DEFAULT;
	sources		src;
	int			n = arg_int(fcinfo, 0, "n", 1, MAX_ROWS);

	common_options(fcinfo, 1, &o);
	arg_fold(fcinfo, 4, &o);
	source_args(fcinfo, 5, &o, &src);
	run_report(fcinfo, &o, &src, HP_REPORT_TOP, (size_t) n, emit_top);
	return (Datum) 0;
}

/* heapprof_stacks(focus, ignore, fold, base, drop_negative, dump, pid): a row per stack, frames[1] = leaf */
Datum
heapprof_stacks(PG_FUNCTION_ARGS)
{
	hp_options	o = HP_OPTIONS_DEFAULT;
	sources		src;

	o.focus = arg_regex(fcinfo, 0, "focus", &o);
	o.ignore = arg_regex(fcinfo, 1, "ignore", &o);
	o.interrupt = pg_interrupt;
	arg_fold(fcinfo, 2, &o);
	source_args(fcinfo, 3, &o, &src);
	run_report(fcinfo, &o, &src, HP_REPORT_STACKS, SIZE_MAX, emit_stacks);
	return (Datum) 0;
}

/*
 * heapprof_dump_flamegraph(objects, focus, ignore, fold, base, drop_negative,
 * dump, pid, title): one self-contained interactive SVG
 */
Datum
heapprof_dump_flamegraph(PG_FUNCTION_ARGS)
{
	hp_options	o = HP_OPTIONS_DEFAULT;
	sources		src;
	text	   *svg;

	common_options(fcinfo, 0, &o);
	arg_fold(fcinfo, 3, &o);
	source_args(fcinfo, 4, &o, &src);
	if (!PG_ARGISNULL(8))
		o.program = text_to_cstring(PG_GETARG_TEXT_PP(8));
	else
		o.program = psprintf("heapprof: %s%s%s", src.dump ? src.dump : o.program,
							 src.base ? " minus " : "", src.base ? src.base : "");
	svg = (text *) run_report(fcinfo, &o, &src, HP_REPORT_FLAMEGRAPH, SIZE_MAX, NULL);
	PG_RETURN_TEXT_P(safe_text(VARDATA(svg), VARSIZE(svg) - VARHDRSZ));
}

/*
 * heapprof_dump_pprof(objects, focus, ignore, fold, base, drop_negative,
 * dump, pid): a gzip-compressed pprof profile
 */
Datum
heapprof_dump_pprof(PG_FUNCTION_ARGS)
{
	hp_options	o = HP_OPTIONS_DEFAULT;
	sources		src;

	common_options(fcinfo, 0, &o);
	arg_fold(fcinfo, 3, &o);
	source_args(fcinfo, 4, &o, &src);
	PG_RETURN_BYTEA_P((bytea *) run_report(fcinfo, &o, &src, HP_REPORT_PPROF, SIZE_MAX, NULL));
}

/* Leave out the "%" lines heapprof adds before jemalloc's own text. */
static const char *
jemalloc_text(const char *s, int *len)
{
	const char *p = s;

	while (p < s + *len && *p == '%')
	{
		const char *nl = memchr(p, '\n', s + *len - p);

		p = nl ? nl + 1 : s + *len;
	}
	*len -= (int) (p - s);
	return p;
}

/* heapprof_dump_raw(pid): the jemalloc dump verbatim, for jeprof or heapprof-report */
Datum
heapprof_dump_raw(PG_FUNCTION_ARGS)
{
	StringInfoData dump;
	const char *body;
	int			len;
	int			pid;

	initStringInfo(&dump);
	if (hp_is_other(fcinfo, 0, &pid))
		hp_take_remote_dump(pid, &dump);
	else
		hp_take_dump(&dump, false);
	len = dump.len;
	body = jemalloc_text(dump.data, &len);
	/* paths in the maps section must be valid in the database encoding */
	pg_verifymbstr(body, len, false);
	PG_RETURN_TEXT_P(cstring_to_text_with_len(body, len));
}

/* heapprof_forget_symbols(): drop this backend's symbol caches; returns bytes freed */
Datum
heapprof_forget_symbols(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(symbolizer ? drop_symbolizer() : 0);
}
