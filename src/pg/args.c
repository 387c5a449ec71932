/*
 * args.c -- report arguments, described once.
 *
 * Every report function's arguments are looked up by their SQL names (the
 * extension script declares names and defaults); this table says, for each
 * name, what it sets and what values it allows.  Adding an option is one row
 * here and one argument in the script: no positions to renumber.  NULL or
 * out-of-range values are errors naming the allowed range.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_collation_d.h"
#include "catalog/pg_proc.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "regex/regex.h"
#include "utils/builtins.h"
#include "utils/syscache.h"

#include "analysis.h"
#include "args.h"
#include "fold_names.h"

#define MAX_ROWS 1000000
#define MAX_NODES 100000
#define MAX_WINDOW_SECONDS 3600

typedef enum arg_kind
{
	ARG_ROWS,					/* n: 1..MAX_ROWS, NULL = all for text */
	ARG_OBJECTS,				/* objects: bool -> measure */
	ARG_REGEX,					/* focus, ignore */
	ARG_INT,
	ARG_FRACTION,
	ARG_BOOL,
	ARG_FOLD,					/* bool -> allocator folding */
	ARG_TEXT,					/* base, stored, title: NULL = none */
	ARG_PID,
	ARG_ORDER,					/* order_by: 'flat' or 'cum' -> by_cum */
	ARG_SECONDS,				/* seconds: a window, 0 < s <= hi; NULL = none */
	ARG_GROUP,					/* group_by: 'function', 'query' or 'context' */
	ARG_QUERYID					/* queryid: bigint; NULL = any */
} arg_kind;

typedef struct arg_spec
{
	const char *name;
	arg_kind	kind;
	size_t		offset;			/* of the field in hpg_report_args */
	int			lo;
	int			hi;
} arg_spec;

#define AT(field) offsetof(hpg_report_args, field)

static const arg_spec specs[] = {
	{"n", ARG_ROWS, AT(limit), 1, MAX_ROWS},
	{"objects", ARG_OBJECTS, AT(o.measure)},
	{"focus", ARG_REGEX, AT(o.focus)},
	{"ignore", ARG_REGEX, AT(o.ignore)},
	{"nodecount", ARG_INT, AT(o.nodecount), 1, MAX_NODES},
	{"nodefraction", ARG_FRACTION, AT(o.nodefraction)},
	{"edgefraction", ARG_FRACTION, AT(o.edgefraction)},
	{"show_bytes", ARG_BOOL, AT(o.show_bytes)},
	{"fold", ARG_FOLD, AT(o.fold)},
	{"base", ARG_TEXT, AT(base)},
	{"drop_negative", ARG_BOOL, AT(o.drop_negative)},
	{"stored", ARG_TEXT, AT(stored)},
	{"dump", ARG_TEXT, AT(stored)},	/* its name in 1.0 and 1.1 */
	{"pid", ARG_PID, AT(proc)},
	{"title", ARG_TEXT, AT(title)},
	{"order_by", ARG_ORDER, AT(o.by_cum)},
	{"peak", ARG_BOOL, AT(peak)},
	{"seconds", ARG_SECONDS, AT(seconds), 0, MAX_WINDOW_SECONDS},
	{"group_by", ARG_GROUP, AT(o.group_by)},
	{"queryid", ARG_QUERYID, AT(o.queryid)},
	{"context", ARG_TEXT, AT(o.context)},
};

#define FIELD(a, spec, type) ((type *) ((char *) (a) + (spec)->offset))

static void
null_arg(const char *name, const char *allowed)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("%s must not be NULL", name),
			 errhint("Allowed values: %s.", allowed)));
}

static bool
get_bool(FunctionCallInfo fcinfo, int i, const char *name)
{
	if (PG_ARGISNULL(i))
		null_arg(name, "true or false");
	return PG_GETARG_BOOL(i);
}

/* jeprof's --text orders: flat, or cum with --cum */
static bool
get_order(FunctionCallInfo fcinfo, int i, const char *name)
{
	char	   *v;

	if (PG_ARGISNULL(i))
		null_arg(name, "'flat', 'cum'");
	v = text_to_cstring(PG_GETARG_TEXT_PP(i));
	if (strcmp(v, "flat") != 0 && strcmp(v, "cum") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be 'flat' or 'cum', not \"%s\"", name, v),
				 errhint("Allowed values: 'flat', 'cum'.")));
	return strcmp(v, "cum") == 0;
}

/* What a report puts at the root of each stack (labels: queryid, memory context). */
static hp_group
get_group(FunctionCallInfo fcinfo, int i, const char *name)
{
	char	   *v;

	if (PG_ARGISNULL(i))
		null_arg(name, "'function', 'query', 'context'");
	v = text_to_cstring(PG_GETARG_TEXT_PP(i));
	if (strcmp(v, "function") == 0)
		return HP_GROUP_FUNCTION;
	if (strcmp(v, "query") == 0)
		return HP_GROUP_QUERY;
	if (strcmp(v, "context") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be 'function', 'query' or 'context', not \"%s\"", name, v),
				 errhint("'query' puts each statement's stacks under a root \"query QUERYID\", 'context' under the memory context they were allocated in.")));
	return HP_GROUP_CONTEXT;
}

static int
get_int(FunctionCallInfo fcinfo, int i, const arg_spec *spec)
{
	int			v;

	if (PG_ARGISNULL(i))
		null_arg(spec->name, psprintf("%d to %d", spec->lo, spec->hi));
	v = PG_GETARG_INT32(i);
	if (v < spec->lo || v > spec->hi)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be between %d and %d, not %d", spec->name, spec->lo, spec->hi, v),
				 errhint("Allowed values: %d to %d.", spec->lo, spec->hi)));
	return v;
}

static double
get_fraction(FunctionCallInfo fcinfo, int i, const char *name)
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

/* A regular expression, compiled now so that errors come early; NULL = none. */
static text *
get_regex(FunctionCallInfo fcinfo, int i, const char *name)
{
	text	   *pattern;
	MemoryContext cxt = CurrentMemoryContext;

	if (PG_ARGISNULL(i))
		return NULL;
	pattern = PG_GETARG_TEXT_P_COPY(i);
	PG_TRY();
	{
		RE_compile_and_cache(pattern, HPG_REGEX_FLAGS, C_COLLATION_OID);
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
				 errhint("%s takes a regular expression as the ~ operator does, matched against function names, source file:line and object+0xOFFSET (never run-time addresses).", name)));
	}
	PG_END_TRY();
	return pattern;
}

static void
apply(FunctionCallInfo fcinfo, int i, const arg_spec *spec, hp_report_kind kind, hpg_report_args *a)
{
	switch (spec->kind)
	{
		case ARG_ROWS:
			if (PG_ARGISNULL(i) && kind == HP_REPORT_TEXT)
				break;			/* every row */
			*FIELD(a, spec, size_t) = (size_t) get_int(fcinfo, i, spec);
			break;
		case ARG_OBJECTS:
			*FIELD(a, spec, hp_measure) =
				get_bool(fcinfo, i, spec->name) ? HP_INUSE_OBJECTS : HP_INUSE_SPACE;
			break;
		case ARG_REGEX:
			*FIELD(a, spec, void *) = get_regex(fcinfo, i, spec->name);
			break;
		case ARG_INT:
			*FIELD(a, spec, int) = get_int(fcinfo, i, spec);
			break;
		case ARG_FRACTION:
			*FIELD(a, spec, double) = get_fraction(fcinfo, i, spec->name);
			break;
		case ARG_BOOL:
			*FIELD(a, spec, bool) = get_bool(fcinfo, i, spec->name);
			break;
		case ARG_FOLD:
			/* charge memory to the caller of palloc & co. (see fold.c) */
			a->o.fold = get_bool(fcinfo, i, spec->name);
			a->o.fold_names = a->o.fold ? hp_postgres_allocator : NULL;
			break;
		case ARG_TEXT:
			*FIELD(a, spec, const char *) =
				PG_ARGISNULL(i) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(i));
			if (spec->offset == AT(stored))
				a->stored_arg = spec->name;
			break;
		case ARG_PID:
			*FIELD(a, spec, hpg_proc) = hpg_proc_of(PG_ARGISNULL(i), PG_GETARG_INT32(i));
			break;
		case ARG_ORDER:
			*FIELD(a, spec, bool) = get_order(fcinfo, i, spec->name);
			break;
		case ARG_GROUP:
			*FIELD(a, spec, hp_group) = get_group(fcinfo, i, spec->name);
			break;
		case ARG_QUERYID:
			/* pg_stat_statements' signed form */
			a->o.with_queryid = !PG_ARGISNULL(i);
			if (a->o.with_queryid)
				*FIELD(a, spec, uint64_t) = (uint64_t) PG_GETARG_INT64(i);
			break;
		case ARG_SECONDS:
			if (!PG_ARGISNULL(i))
			{
				double		v = PG_GETARG_FLOAT8(i);

				if (!(v > spec->lo && v <= spec->hi))
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("%s must be more than %d and at most %d, not %g", spec->name, spec->lo, spec->hi, v),
							 errhint("A window of allocations lasts from a fraction of a second to an hour.")));
				*FIELD(a, spec, double) = v;
			}
			break;
	}
}

/* For each argument of the function, its spec (index into specs); cached per call site. */
static const int16 *
arg_map(FunctionCallInfo fcinfo)
{
	FmgrInfo   *flinfo = fcinfo->flinfo;
	HeapTuple	tup;
	Oid		   *types;
	char	  **names;
	char	   *modes;
	int			n;
	int16	   *map;

	if (flinfo->fn_extra)
		return flinfo->fn_extra;
	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(flinfo->fn_oid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for function %u", flinfo->fn_oid);
	n = get_func_arg_info(tup, &types, &names, &modes);
	ReleaseSysCache(tup);
	map = MemoryContextAlloc(flinfo->fn_mcxt, sizeof(int16) * Max(n, 1));
	for (int i = 0, j = 0; i < n; i++)
	{
		if (modes && modes[i] != PROARGMODE_IN)
			continue;			/* an output column */
		map[j] = -1;
		for (int k = 0; k < (int) lengthof(specs); k++)
			if (names && strcmp(names[i], specs[k].name) == 0)
				map[j] = (int16) k;
		if (map[j] < 0)
			elog(ERROR, "heapprof report argument \"%s\" is unknown", names ? names[i] : "?");
		j++;
	}
	flinfo->fn_extra = map;
	return map;
}

void
hpg_report_args_get(FunctionCallInfo fcinfo, hp_report_kind kind, hpg_report_args *a)
{
	const int16 *map = arg_map(fcinfo);
	hp_options	defaults = HP_OPTIONS_DEFAULT;

	memset(a, 0, sizeof(*a));
	a->o = defaults;
	a->limit = SIZE_MAX;
	a->proc = hpg_proc_of(true, 0);
	for (int i = 0; i < PG_NARGS(); i++)
		apply(fcinfo, i, &specs[map[i]], kind, a);
	if (a->stored && !a->proc.self)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s and pid cannot both be given", a->stored_arg),
				 errhint("%s names a stored profile; pid names a live process.", a->stored_arg)));
	if (a->peak && a->stored)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("peak and %s cannot both be given", a->stored_arg),
				 errhint("The peak of a process that left an exit dump is an exit dump of its own, NAME-peak: read it with %s => 'NAME-peak'.", a->stored_arg)));
	if (a->seconds > 0 && (a->stored || a->base || a->peak))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("seconds cannot be combined with %s, base or peak", a->stored ? a->stored_arg : "stored"),
				 errhint("seconds reports what process pid allocates during a window; %s, base and peak report a heap.", a->stored ? a->stored_arg : "stored")));
	if (a->seconds > 0 && a->proc.self)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a window of allocations needs pid => N"),
				 errhint("This session would only wait during the window. Name the process to watch; heapprof_backends() lists them.")));
	a->o.program = psprintf("postgres (pid %d)", a->proc.pid);
}
