/*
 * merge.c -- --merge: the chosen processes' stacks, as each server named
 * them (heapprof_stacks), summed with the engine's per-stack arithmetic
 * (hp_graph_from_stacks) into one report, the --base-type processes
 * subtracted; and with --list, each process's share of that sum.  With
 * --growth, each server's leak suspects (heapprof_growth) summed by kind
 * and name, as the server sums a name's over its processes.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_engine.h"
#include "engine/history.h"
#include "engine/render.h"
#include "pg_heapprof.h"

static void
env_error(void *ctx, hp_status code, const char *message)
{
	(void) ctx;
	(void) code;
	fail("merge: %s", message);
}

/*
 * Every chosen process's stacks as named stacks, their frames pointing into
 * the results; totals[k] is the k-th chosen process's own total, unsigned.
 * Returns the number of stacks.
 */
static size_t
collect(const fleet *f, bool objects, hp_named_stack **out, const char ***frames, double **totals)
{
	size_t		rows = 0;
	size_t		n = 0;
	size_t		nf = 0;
	size_t		nt = 0;

	for (int i = 0; i < f->n; i++)
		for (int j = 0; j < f->sv[i].nt; j++)
		{
			rows += f->sv[i].t[j].res ? (size_t) PQntuples(f->sv[i].t[j].res) : 0;
			nt++;
		}
	*out = xcalloc(rows, sizeof(hp_named_stack));
	*frames = xcalloc(rows, sizeof(char *));
	*totals = xcalloc(nt, sizeof(double));
	nt = 0;
	for (int i = 0; i < f->n; i++)
		for (int j = 0; j < f->sv[i].nt; j++, nt++)
		{
			PGresult   *res = f->sv[i].t[j].res;
			const char *last = NULL;

			hp_named_stack *st = NULL;

			for (int r = 0; res && r < PQntuples(res); r++)
			{
				if (last == NULL || strcmp(last, cell(res, r, 0)) != 0)
				{
					last = cell(res, r, 0);
					st = &(*out)[n++];
					st->frames = &(*frames)[nf];
					st->base = f->sv[i].t[j].base;
					st->bytes = strtod(cell(res, r, 1), NULL);
					st->objs = strtod(cell(res, r, 2), NULL);
					(*totals)[nt] += objects ? st->objs : st->bytes;
				}
				if (!PQgetisnull(res, r, 3))
				{
					(*frames)[nf++] = cell(res, r, 3);
					st->nframes++;
				}
			}
		}
	return n;
}

/* Each chosen process's total, unsigned (malloc'ed); *sum: theirs, the base's subtracted. */
double *
merge_totals(const fleet *f, double *sum)
{
	hp_named_stack *st;
	const char **frames;
	double	   *totals;
	size_t		k = 0;

	collect(f, f->sv[0].o->objects, &st, &frames, &totals);
	*sum = 0;
	for (int i = 0; i < f->n; i++)
		for (int j = 0; j < f->sv[i].nt; j++, k++)
			*sum += f->sv[i].t[j].base ? -totals[k] : totals[k];
	free(st);
	free(frames);
	return totals;
}

/* --merge --report: one report of the sum of every chosen process's stacks. */
bool
write_merged(const fleet *f)
{
	const cli_opts *cfg = f->sv[0].o;
	const char *format = cfg->format;
	hp_env		env = {.alloc = hp_malloc, .free = hp_free, .error = env_error};
	hp_options	o = HP_OPTIONS_DEFAULT;
	hp_named_stack *st;
	const char **frames;
	double	   *totals;
	size_t		n = collect(f, cfg->objects, &st, &frames, &totals);
	hp_arena	a;
	hp_graph	g;
	hp_buf		b;
	bool		ok;
	char		program[64];

	env.ctx = &env;
	o.measure = cfg->objects ? HP_INUSE_OBJECTS : HP_INUSE_SPACE;
	o.drop_negative = cfg->drop_negative;
	snprintf(program, sizeof(program), "merged%s%s%s%s", cfg->peak ? " peaks" : "",
			 cfg->window ? " allocations in " : "", cfg->window ? cfg->window : "",
			 cfg->window ? " s" : "");
	if (cfg->base_type)
		strncat(program, ", minus base", sizeof(program) - strlen(program) - 1);
	o.program = program;
	hp_arena_init(&a, &env);
	hp_graph_from_stacks(&a, st, n, &o, &g);
	hp_buf_init(&b, &a);
	if (strcmp(format, "text") == 0)
		hp_render_text(&a, &g, &o, SIZE_MAX, &b);
	else if (strcmp(format, "dot") == 0 || (strcmp(format, "svg") == 0 && cfg->svg_dot))
		hp_render_dot(&a, &g, &o, &b);
	else if (strcmp(format, "collapsed") == 0)
		hp_render_collapsed(&a, &g, &b);
	else if (strcmp(format, "flamegraph") == 0 || strcmp(format, "svg") == 0)
		hp_render_flamegraph(&a, &g, &o, o.program, cfg->base_type != NULL, &b);
	else if (strcmp(format, "pprof") == 0)
	{
		/* no addresses or mappings: the servers named every frame */
		hp_profile	p = {0};
		hp_located	l = {0};

		hp_render_pprof(&a, &p, &l, &g, &o, &b);
	}
	else
	{
		hp_row	   *rows;
		size_t		nrows = hp_top(&a, &g, 30, false, &rows);

		hp_buf_printf(&b, TOP_LINE, "rank", "flat", "flat%", "cum", "cum%", "function");
		for (size_t i = 0; i < nrows; i++)
		{
			char		r[24], f[24], fp[16], c[24], cp[16];

			snprintf(r, sizeof(r), "%zu", i + 1);
			snprintf(f, sizeof(f), "%lld", hp_whole(rows[i].flat));
			snprintf(c, sizeof(c), "%lld", hp_whole(rows[i].cum));
			hp_percent(rows[i].flat, g.local_total, fp, sizeof(fp));
			hp_percent(rows[i].cum, g.local_total, cp, sizeof(cp));
			hp_buf_printf(&b, TOP_LINE, r, f, fp, c, cp, hp_cli_shown(rows[i].func->name, false));
		}
	}
	ok = put(cfg, b.data ? b.data : "", b.len, cfg->output);
	hp_arena_free(&a);
	free(st);
	free(frames);
	free(totals);
	return ok;
}

/* a + b, at the bounds of long long rather than past them */
static long long
add_sat(long long a, long long b)
{
	long long	r;

	if (!__builtin_add_overflow(a, b, &r))
		return r;
	return b > 0 ? LLONG_MAX : LLONG_MIN;
}

static int
by_name(const void *x, const void *y)
{
	const suspect *a = x;
	const suspect *b = y;
	int			c = strcmp(a->kind, b->kind);

	return c ? c : strcmp(a->name, b->name);
}

/* The server's order of kinds (its ties go to the first); another after them. */
static int
kind_rank(const char *kind)
{
	static const char *const kinds[] = {"heap", "function", "query", "context"};
	int			i;

	for (i = 0; i < (int) (sizeof(kinds) / sizeof(kinds[0])); i++)
		if (strcmp(kind, kinds[i]) == 0)
			break;
	return i;
}

/* Fastest first; at the same rate as the server orders its rows (then functions first, as the server). */
static int
by_rate(const void *x, const void *y)
{
	const suspect *a = x;
	const suspect *b = y;

	if (a->rate != b->rate)
		return a->rate > b->rate ? -1 : 1;
	if (kind_rank(a->kind) != kind_rank(b->kind))
		return kind_rank(a->kind) < kind_rank(b->kind) ? -1 : 1;
	return by_name(x, y);
}

/* A merged suspect as hp_growth_functions_first reads it: every process of every server is one series. */
static bool
merged_is_function(const void *row)
{
	return strcmp(((const suspect *) row)->kind, "function") == 0;
}

static double
merged_rate(const void *row)
{
	return (double) ((const suspect *) row)->rate;
}

static bool
merged_same_series(const void *a, const void *b)
{
	(void) a;
	(void) b;
	return true;
}

static const hp_growth_reader merged_reader = {merged_is_function, merged_rate, merged_same_series};

/*
 * --growth --merge: one suspect per (kind, name) over every server that
 * answered, fastest first (a function ahead of rates within a tenth of its
 * own, as the server orders them): rates, bytes and processes summed, growing since
 * the earliest, outside memory contexts when the summed outside rate is at
 * least half the summed rate, steadiness the mean of the servers' weighted
 * by their rates (as the server sums a name over its processes); servers,
 * how many it grows on.  Returns their number; *out is malloc'ed.
 */
size_t
merge_growth(const fleet *f, suspect **out)
{
	size_t		rows = 0;
	size_t		n = 0;
	size_t		k = 0;
	suspect    *v;
	double	   *plain;			/* a name's steadiness summed unweighted, for rates of 0 */

	for (int i = 0; i < f->n; i++)
		rows += f->sv[i].procs ? (size_t) PQntuples(f->sv[i].procs) : 0;
	v = xcalloc(rows, sizeof(suspect));
	plain = xcalloc(rows, sizeof(double));
	for (int i = 0; i < f->n; i++)
	{
		const PGresult *res = f->sv[i].procs;

		for (int r = 0; res && r < PQntuples(res); r++)
		{
			suspect    *x = &v[n++];

			x->kind = cell(res, r, G_KIND);
			x->name = cell(res, r, G_NAME);
			x->rate = strtoll(cell(res, r, G_RATE), NULL, 10);
			x->outside_rate = strtoll(cell(res, r, G_OUTSIDE_RATE), NULL, 10);
			x->steadiness = strtod(cell(res, r, G_STEADINESS), NULL);
			x->since = PQgetisnull(res, r, G_SINCE) ? NAN : strtod(cell(res, r, G_SINCE), NULL);
			x->bytes = strtoll(cell(res, r, G_BYTES), NULL, 10);
			x->processes = strtoll(cell(res, r, G_PROCESSES), NULL, 10);
			x->servers = 1;
			if (!isfinite(x->steadiness))
				x->steadiness = 0;
		}
	}
	qsort(v, n, sizeof(suspect), by_name);
	for (size_t i = 0; i < n; i++)
	{
		const suspect x = v[i];
		suspect    *into;

		if (i == 0 || by_name(&v[k - 1], &x) != 0)
		{
			into = &v[k++];
			*into = x;
			plain[k - 1] = x.steadiness;
			/* the weighted sum, divided once every server's is in */
			into->steadiness = x.steadiness * (double) x.rate;
			continue;
		}
		into = &v[k - 1];
		plain[k - 1] += x.steadiness;
		into->steadiness += x.steadiness * (double) x.rate;
		into->rate = add_sat(into->rate, x.rate);
		into->outside_rate = add_sat(into->outside_rate, x.outside_rate);
		into->bytes = add_sat(into->bytes, x.bytes);
		into->processes = add_sat(into->processes, x.processes);
		if (isnan(into->since) || x.since < into->since)
			into->since = x.since;
		into->servers++;
	}
	for (size_t i = 0; i < k; i++)
	{
		suspect    *x = &v[i];

		x->steadiness = x->rate > 0 ? x->steadiness / (double) x->rate : plain[i] / x->servers;
		x->outside = (double) x->outside_rate >= 0.5 * (double) x->rate;
	}
	free(plain);
	qsort(v, k, sizeof(suspect), by_rate);
	hp_growth_functions_first(v, k, sizeof(suspect), &merged_reader);
	*out = v;
	return k;
}
