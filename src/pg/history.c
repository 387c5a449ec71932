/*
 * history.c -- the heap history in SQL: heapprof_history(), heapprof_growth(),
 * heapprof_dump_timeline(), heapprof_collector() and, for monitoring,
 * heapprof_metrics_heap(), heapprof_metrics_functions() and
 * heapprof_metrics_growth().
 *
 * The collector (collector.c) keeps one file per tick; these read the ticks
 * of a window.  A process's rows are shown as pg_stat_activity shows a
 * process's details: to roles with the privileges of its role or of
 * pg_read_all_stats.  The monitoring functions (the monitor workflow) give
 * only sums over every process -- by database and backend type, by
 * function, by growing name -- never a process, a role or a statement's
 * text (the history holds only queryids), so that an exporter's role sees
 * the server's heap and no one's session.
 *
 * Growth and the timeline need a series' shape, not every tick: they read
 * at most a few hundred ticks of a window, evenly spaced, so a day of ticks
 * costs what an hour does.  A tick file that is not one (cut short, planted,
 * a FIFO) is skipped with a warning: one bad file does not hide the rest.
 */
#include "postgres.h"

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "catalog/pg_authid.h"
#include "commands/dbcommands.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "analysis.h"
#include "collector.h"
#include "files.h"
#include "shmem.h"
#include "sqltext.h"
#include "store.h"
#include "values.h"
#include "engine/history.h"

PG_FUNCTION_INFO_V1(heapprof_history);
PG_FUNCTION_INFO_V1(heapprof_growth);
PG_FUNCTION_INFO_V1(heapprof_dump_timeline);
PG_FUNCTION_INFO_V1(heapprof_collector);
PG_FUNCTION_INFO_V1(heapprof_metrics_heap);
PG_FUNCTION_INFO_V1(heapprof_metrics_functions);
PG_FUNCTION_INFO_V1(heapprof_metrics_growth);

#define MAX_TICK_BYTES (64 * 1024 * 1024)
#define GROWTH_TICKS 240		/* ticks growth reads of a window, at most */
#define TIMELINE_TICKS 480

static const char *const kind_names[HP_HIST_KINDS] = {"heap", "function", "query", "context"};

/* The Unix time (us) a tick file's name starts with, YYYYMMDDTHHMMSS.uuuuuuZ-...; -1 if none. */
static int64
name_time(const char *name)
{
	struct tm	tm = {0};
	char	   *end;
	long		us;

	end = strptime(name, "%Y%m%dT%H%M%S", &tm);
	if (end == NULL || *end != '.')
		return -1;
	us = strtol(end + 1, &end, 10);
	if (*end != 'Z' || us < 0 || us > 999999)
		return -1;
	return (int64) timegm(&tm) * USECS_PER_SEC + us;
}

/* A tick file's text into out; false, with a warning, for a file that is not a readable one. */
static bool
read_tick_file(const char *name, StringInfo out)
{
	char		path[MAXPGPATH];
	char		head[HPG_READ_HEAD];
	int			len;
	struct stat st;
	int			fd;
	ssize_t		n;

	hpg_store_path(path, HPG_HISTORY_DIR, name);
	fd = hpg_read_head(path, head, &len, &st, WARNING);
	if (fd < 0)
		return false;
	if (st.st_size > MAX_TICK_BYTES)
	{
		CloseTransientFile(fd);
		ereport(WARNING,
				(errmsg("history file \"%s\" skipped: %lld bytes, more than a tick can be",
						path, (long long) st.st_size)));
		return false;
	}
	resetStringInfo(out);
	enlargeStringInfo(out, (int) st.st_size);
	n = pread(fd, out->data, (size_t) st.st_size, 0);
	CloseTransientFile(fd);
	if (n != st.st_size)
	{
		ereport(WARNING,
				(errmsg("history file \"%s\" skipped: it changed while read", path)));
		return false;
	}
	out->len = (int) n;
	out->data[n] = '\0';
	return true;
}

/* Tick file name parsed into t (in a); false, with a warning, if it is not one. */
static bool
read_tick(hp_arena *a, const char *name, StringInfo text, hp_hist_tick *t)
{
	char		err[256];

	if (!read_tick_file(name, text))
		return false;
	hpg_report_budget_check((int64) a->env->taken + text->len, "the heap history");
	if (hp_hist_read(a, text->data, (size_t) text->len, t, err, sizeof(err)) != HP_OK)
	{
		ereport(WARNING,
				(errmsg("history file \"%s/%s%s\" skipped: %s", HPG_HISTORY_DIR, name, HPG_SUFFIX, err)));
		return false;
	}
	return true;
}

/* Is process p's history the current user's to see?  pg_stat_activity's rule. */
static bool
visible(const hp_hist_proc *p)
{
	Oid			me = GetUserId();

	return has_privs_of_role(me, ROLE_PG_READ_ALL_STATS) ||
		(p->role != InvalidOid && has_privs_of_role(me, (Oid) p->role));
}

/*
 * The names of the tick files whose names say they were kept in [from, to]
 * (a minute's slack: the name is the writer's clock before the write), at
 * most max of them evenly spaced, the last always (0: all).
 */
static char **
window_files(int64 from, int64 to, int max, int *count)
{
	int			n;
	char	  **names = hpg_store_names(HPG_HISTORY_DIR, &n);
	int			k = 0;

	for (int i = 0; i < n; i++)
	{
		int64		t = name_time(names[i]);

		if (t >= 0 && t >= from - USECS_PER_MINUTE && t <= to + USECS_PER_MINUTE)
			names[k++] = names[i];
	}
	if (max == 1 && k > 1)
	{
		names[0] = names[k - 1];
		k = 1;
	}
	else if (max > 1 && k > max)
	{
		for (int i = 0; i < max; i++)
			names[i] = names[(int) ((int64) i * (k - 1) / (max - 1))];
		k = max;
	}
	*count = k;
	return names;
}

/*
 * The ticks of [from, to] (at most max, evenly spaced), with the processes
 * the caller may see (all: every one) -- only pid's, unless 0 -- into a.
 */
static hp_hist_tick *
load(hp_arena *a, int64 from, int64 to, int max, bool all, int32 pid, size_t *count)
{
	int			n;
	char	  **names = window_files(from, to, max, &n);
	hp_hist_tick *ticks = hp_alloc(a, (n + 1) * sizeof(*ticks));
	size_t		k = 0;
	StringInfoData text;

	initStringInfo(&text);
	for (int i = 0; i < n; i++)
	{
		hp_hist_tick t;
		size_t		kept = 0;

		CHECK_FOR_INTERRUPTS();
		if (!read_tick(a, names[i], &text, &t) || t.time < from || t.time > to)
			continue;
		for (size_t j = 0; j < t.nprocs; j++)
			if ((pid == 0 || t.procs[j].pid == pid) && (all || visible(&t.procs[j])))
				t.procs[kept++] = t.procs[j];
		t.nprocs = kept;
		ticks[k++] = t;
	}
	pfree(text.data);
	*count = k;
	return ticks;
}

/* An interval argument as microseconds, positive and at most 100 years; ERROR otherwise. */
static int64
window_us(FunctionCallInfo fcinfo, int arg, const char *name)
{
	Interval   *iv;
	double		us;

	if (PG_ARGISNULL(arg))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be NULL", name),
				 errhint("Leave it out for its default, or give an interval such as '1 hour'.")));
	iv = PG_GETARG_INTERVAL_P(arg);
	/* in floating point: no field can overflow it, and infinities fall outside */
	us = (double) iv->time + (double) iv->day * USECS_PER_DAY +
		(double) iv->month * DAYS_PER_MONTH * USECS_PER_DAY;
	if (!(us >= 1 && us <= 100.0 * MONTHS_PER_YEAR * DAYS_PER_MONTH * USECS_PER_DAY))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a positive interval of at most 100 years", name),
				 errhint("For example since => '1 hour'.")));
	return (int64) us;
}

static int
int_arg(FunctionCallInfo fcinfo, int arg, const char *name, int min, int max)
{
	int			v;

	if (PG_ARGISNULL(arg))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be NULL", name),
				 errhint("Leave it out for its default.")));
	v = PG_GETARG_INT32(arg);
	if (v < min || v > max)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be between %d and %d", name, min, max),
				 errhint("Leave it out for its default.")));
	return v;
}

static int64
now_us(void)
{
	return (int64) HPG_UNIX_OF_TIMESTAMP(GetCurrentTimestamp());
}

static Datum
name_datum(const char *s, const hp_hist_proc *p)
{
	return PointerGetDatum(hpg_text_in(s, strlen(s), p ? p->encoding : NULL));
}

/*
 * heapprof_history(since): every row of every tick in the window, of the
 * processes the caller may see.
 */
Datum
heapprof_history(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int64		to = now_us();
	int64		from = to - window_us(fcinfo, 0, "since");
	int			n;
	char	  **names;
	StringInfoData text;

	InitMaterializedSRF(fcinfo, 0);
	names = window_files(from, to, 0, &n);
	initStringInfo(&text);
	/* a tick at a time: the history may be far larger than a report's memory */
	for (int i = 0; i < n; i++)
	{
		hp_arena   *a = hpg_engine_begin(true);
		hp_hist_tick t;

		CHECK_FOR_INTERRUPTS();
		if (read_tick(a, names[i], &text, &t) && t.time >= from && t.time <= to)
			for (size_t j = 0; j < t.nprocs; j++)
			{
				const hp_hist_proc *p = &t.procs[j];
				char	   *db;
				char	   *role;

				if (!visible(p))
					continue;
				db = p->database != InvalidOid ? get_database_name((Oid) p->database) : NULL;
				role = p->role != InvalidOid ? GetUserNameFromId((Oid) p->role, true) : NULL;
				for (size_t r = 0; r < p->nrows; r++)
				{
					const hp_hist_row *row = &p->rows[r];
					Datum		values[11];
					bool		nulls[11] = {0};

					values[0] = TimestampTzGetDatum(HPG_TIMESTAMP_OF_UNIX(t.time));
					values[1] = Int32GetDatum(p->pid);
					values[2] = TimestampTzGetDatum(HPG_TIMESTAMP_OF_UNIX(p->start));
					values[3] = name_datum(p->backend_type, NULL);
					values[4] = db ? DirectFunctionCall1(namein, CStringGetDatum(db)) : (Datum) 0;
					nulls[4] = db == NULL;
					values[5] = role ? DirectFunctionCall1(namein, CStringGetDatum(role)) : (Datum) 0;
					nulls[5] = role == NULL;
					values[6] = name_datum(p->application, NULL);
					values[7] = CStringGetTextDatum(kind_names[row->kind]);
					values[8] = name_datum(row->name, p);
					values[9] = Int64GetDatum(row->bytes);
					values[10] = Int64GetDatum(row->outside);
					nulls[10] = row->outside < 0;
					tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
				}
			}
		hpg_engine_end(a);
	}
	pfree(text.data);
	return (Datum) 0;
}

/* The kinds argument: NULL or 'all' for every kind but the heap's total. */
static int
kinds_arg(FunctionCallInfo fcinfo, int arg)
{
	const char *s;

	if (PG_ARGISNULL(arg))
		return 0;
	s = text_to_cstring(PG_GETARG_TEXT_PP(arg));
	if (strcmp(s, "all") == 0)
		return 0;
	for (int k = 0; k < HP_HIST_KINDS; k++)
		if (strcmp(s, kind_names[k]) == 0)
			return 1 << k;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown kind \"%s\"", s),
			 errhint("The kinds are function, query, context and heap (the whole sampled heap), or all.")));
	return 0;
}

/* The suspects of o's window among the processes the caller may see (all: every one). */
static size_t
suspects(hp_arena *a, const hp_growth_options *o, bool all, hp_suspect **rows)
{
	size_t		n;
	hp_hist_tick *ticks = load(a, o->from, o->to, GROWTH_TICKS, all, 0, &n);
	return hp_growth(a, ticks, n, o, rows);
}

static void
put_suspect(ReturnSetInfo *rsinfo, const hp_suspect *s, bool per_process)
{
	Datum		values[11];
	bool		nulls[11] = {0};

	values[0] = CStringGetTextDatum(kind_names[s->kind]);
	values[1] = name_datum(s->name, NULL);
	values[2] = Int64GetDatum((int64) s->bytes_per_hour);
	values[3] = BoolGetDatum(s->outside_contexts);
	values[4] = Int64GetDatum((int64) s->outside_per_hour);
	values[5] = Float8GetDatum(s->steadiness);
	values[6] = TimestampTzGetDatum(HPG_TIMESTAMP_OF_UNIX(s->since));
	values[7] = Int64GetDatum(s->bytes);
	values[8] = Int32GetDatum(s->processes);
	values[9] = Int32GetDatum(s->pid);
	values[10] = TimestampTzGetDatum(HPG_TIMESTAMP_OF_UNIX(s->start));
	nulls[9] = nulls[10] = !per_process;
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * heapprof_growth(since, per_process, min_rate, kinds): the leak suspects of
 * the window among the processes the caller may see, most growth first.
 */
Datum
heapprof_growth(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	hp_growth_options o = {0};
	hp_arena   *a;
	hp_suspect *rows;
	size_t		nrows;

	o.to = now_us();
	o.from = o.to - window_us(fcinfo, 0, "since");
	o.per_process = !PG_ARGISNULL(1) && PG_GETARG_BOOL(1);
	if (PG_ARGISNULL(2) || PG_GETARG_INT64(2) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("min_rate must be a number of bytes per hour, 0 or more"),
				 errhint("For example min_rate => 1048576 (1 MB an hour, the default); 0 shows every growing name.")));
	o.min_rate = (double) PG_GETARG_INT64(2);
	o.kinds = kinds_arg(fcinfo, 3);
	InitMaterializedSRF(fcinfo, 0);
	a = hpg_engine_begin(true);
	nrows = suspects(a, &o, false, &rows);
	for (size_t i = 0; i < nrows; i++)
		put_suspect(rsinfo, &rows[i], o.per_process);
	hpg_engine_end(a);
	return (Datum) 0;
}

/* heapprof_dump_timeline(since, pid, kind, series): the top growers over time, an SVG. */
Datum
heapprof_dump_timeline(PG_FUNCTION_ARGS)
{
	hp_timeline_options o = {0};
	hp_arena   *a;
	hp_hist_tick *ticks;
	size_t		n;
	hp_buf		out;
	char		title[128];
	int			kinds;
	text	   *result;

	o.to = now_us();
	o.from = o.to - window_us(fcinfo, 0, "since");
	o.pid = PG_ARGISNULL(1) ? 0 : PG_GETARG_INT32(1);
	kinds = kinds_arg(fcinfo, 2);
	if (kinds == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the timeline draws one kind at a time"),
				 errhint("kind => 'function', 'query', 'context' or 'heap'.")));
	o.kind = (hp_hist_kind) (ffs(kinds) - 1);
	o.series = (size_t) int_arg(fcinfo, 3, "series", 1, 50);
	if (o.pid)
		snprintf(title, sizeof(title), "Heap history of process %d, by %s", o.pid, kind_names[o.kind]);
	else
		snprintf(title, sizeof(title), "Heap history of every process, by %s", kind_names[o.kind]);
	o.title = title;
	a = hpg_engine_begin(true);
	ticks = load(a, o.from, o.to, TIMELINE_TICKS, false, o.pid, &n);
	hp_buf_init(&out, a);
	hp_render_timeline(a, ticks, n, &o, &out);
	result = hpg_text(out.data, out.len);
	hpg_engine_end(a);
	PG_RETURN_TEXT_P(result);
}

/* heapprof_collector(): what the history's collector is doing, and what its folder holds. */
Datum
heapprof_collector(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[11];
	bool		nulls[11] = {0};
	hpg_collector_state c = {0};
	int64		files = 0;
	int64		bytes = 0;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (hpg_shmem)
	{
		SpinLockAcquire(&hpg_shmem->mutex);
		c = hpg_shmem->collector;
		SpinLockRelease(&hpg_shmem->mutex);
	}
	hpg_store_usage(HPG_HISTORY_DIR, &files, &bytes);
	values[0] = Int32GetDatum(c.pid);
	nulls[0] = c.pid == 0;
	values[1] = Int32GetDatum(hpg_history_interval);
	values[2] = TimestampTzGetDatum(c.last_tick);
	nulls[2] = c.last_tick == 0;
	values[3] = Int32GetDatum(c.processes);
	values[4] = Int32GetDatum(c.answered);
	values[5] = Int64GetDatum(c.tick_bytes);
	values[6] = Int64GetDatum(c.ticks);
	values[7] = Int64GetDatum(files);
	values[8] = Int64GetDatum(bytes);
	values[9] = c.error_at ? PointerGetDatum(hpg_text(c.error, strlen(c.error))) : (Datum) 0;
	nulls[9] = c.error_at == 0;
	values[10] = TimestampTzGetDatum(c.error_at);
	nulls[10] = c.error_at == 0;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

/* ---- monitoring: sums over every process, for the monitor workflow ---- */

/* The newest tick, if the collector kept it recently (a stopped history exports nothing). */
static hp_hist_tick *
latest(hp_arena *a)
{
	int64		to = now_us();
	size_t		n;
	hp_hist_tick *t = load(a, to - 7 * USECS_PER_DAY, to, 1, true, 0, &n);

	if (n == 0 || t[0].time < to - 3 * Max(t[0].interval, USECS_PER_SEC) - 10 * USECS_PER_SEC)
		return NULL;
	return t;
}

/* heapprof_metrics_heap(): per database and backend type, the sampled heap inside and outside memory contexts. */
Datum
heapprof_metrics_heap(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	hp_arena   *a;
	hp_hist_tick *t;
	bool	   *done;

	InitMaterializedSRF(fcinfo, 0);
	a = hpg_engine_begin(true);
	t = latest(a);
	done = t ? hp_alloc(a, (t->nprocs + 1) * sizeof(*done)) : NULL;
	for (size_t i = 0; t && i < t->nprocs; i++)
	{
		const hp_hist_proc *p = &t->procs[i];
		int64		inside = 0;
		int64		outside = 0;
		int			count = 0;
		char	   *db;
		Datum		values[5];
		bool		nulls[5] = {0};

		if (done[i])
			continue;
		for (size_t j = i; j < t->nprocs; j++)
		{
			const hp_hist_proc *q = &t->procs[j];

			if (done[j] || q->database != p->database || strcmp(q->backend_type, p->backend_type) != 0)
				continue;
			done[j] = true;
			count++;
			for (size_t r = 0; r < q->nrows; r++)
				if (q->rows[r].kind == HP_HIST_TOTAL)
				{
					int64		out = Max(q->rows[r].outside, 0);

					inside += q->rows[r].bytes - out;
					outside += out;
				}
		}
		db = p->database != InvalidOid ? get_database_name((Oid) p->database) : NULL;
		values[0] = db ? DirectFunctionCall1(namein, CStringGetDatum(db)) : (Datum) 0;
		nulls[0] = db == NULL;
		values[1] = name_datum(p->backend_type, NULL);
		values[2] = Int64GetDatum(inside);
		values[3] = Int64GetDatum(outside);
		values[4] = Int32GetDatum(count);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	hpg_engine_end(a);
	return (Datum) 0;
}

/* heapprof_metrics_functions(top): the functions holding the most over every process. */
Datum
heapprof_metrics_functions(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			top = int_arg(fcinfo, 0, "top", 1, 1000);
	hp_arena   *a;
	hp_hist_tick *t;
	hp_hist_proc all = {0};
	size_t		cap = 0;

	InitMaterializedSRF(fcinfo, 0);
	a = hpg_engine_begin(true);
	t = latest(a);
	/* every process's function rows as one process's: summed by name */
	for (size_t i = 0; t && i < t->nprocs; i++)
		for (size_t r = 0; r < t->procs[i].nrows; r++)
		{
			const hp_hist_row *row = &t->procs[i].rows[r];
			size_t		k;

			if (row->kind != HP_HIST_FUNCTION)
				continue;
			for (k = 0; k < all.nrows; k++)
				if (strcmp(all.rows[k].name, row->name) == 0)
					break;
			if (k == all.nrows)
			{
				HP_RESERVE(a, all.rows, cap, all.nrows);
				all.rows[all.nrows++] = (hp_hist_row) {.kind = HP_HIST_FUNCTION,.name = row->name};
			}
			all.rows[k].bytes += row->bytes;
			all.rows[k].outside += Max(row->outside, 0);
		}
	for (int k = 0; k < top && all.nrows > 0; k++)
	{
		size_t		best = 0;
		Datum		values[3];
		bool		nulls[3] = {0};

		for (size_t j = 1; j < all.nrows; j++)
			if (all.rows[j].bytes > all.rows[best].bytes)
				best = j;
		if (all.rows[best].bytes < 0)
			break;
		values[0] = name_datum(all.rows[best].name, NULL);
		values[1] = Int64GetDatum(all.rows[best].bytes);
		values[2] = Int64GetDatum(all.rows[best].outside);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		all.rows[best].bytes = -1;
	}
	hpg_engine_end(a);
	return (Datum) 0;
}

/* heapprof_metrics_growth(since, top): the suspects across every process. */
Datum
heapprof_metrics_growth(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	hp_growth_options o = {0};
	int			top;
	hp_arena   *a;
	hp_suspect *rows;
	size_t		nrows;

	o.to = now_us();
	o.from = o.to - window_us(fcinfo, 0, "since");
	top = int_arg(fcinfo, 1, "top", 1, 1000);
	o.min_rate = HPG_GROWTH_MIN_RATE;
	InitMaterializedSRF(fcinfo, 0);
	a = hpg_engine_begin(true);
	nrows = suspects(a, &o, true, &rows);
	for (size_t i = 0; i < nrows && i < (size_t) top; i++)
	{
		Datum		values[4];
		bool		nulls[4] = {0};

		values[0] = CStringGetTextDatum(kind_names[rows[i].kind]);
		values[1] = name_datum(rows[i].name, NULL);
		values[2] = BoolGetDatum(rows[i].outside_contexts);
		values[3] = Float8GetDatum(rows[i].bytes_per_hour);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	hpg_engine_end(a);
	return (Datum) 0;
}
