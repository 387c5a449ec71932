/*
 * test_growth.c -- leak suspects (growth.c): a linear leak at its exact
 * rate, and within 5 % through noise; what must not be a suspect (a fill
 * that stopped, one spike, noise); processes that start mid-window or
 * reuse a pid; missing points; per process against across processes; the
 * rate cut-off, the kinds, the window, the outside flag; series too short
 * to judge; thinning; hostile values; and the time of 100 processes by
 * 50 names by 1440 ticks.
 */
#include "test.h"

#include "engine/history.h"

#include <math.h>
#include <stdint.h>
#include <time.h>

/* Sanitizers make the engine three to four times slower. */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

#define T0 INT64_C(1767225600000000)
#define MINUTE INT64_C(60000000)

static hp_arena arena;
static t_env env;

typedef enum shape
{
	LINEAR,						/* base + rate * i */
	FILL,						/* base + rate * min(i, until) */
	SPIKE,						/* base, and base + rate at tick until */
	NOISE						/* base */
} shape;

/* A series to build: one process's bytes of one name over ticks [from, to). */
typedef struct spec
{
	int32_t		pid;
	int64_t		start;
	hp_hist_kind kind;
	const char *name;
	int			from;
	int			to;
	shape		shape;
	double		base;
	double		rate;			/* bytes a tick */
	int			until;
	double		noise;			/* standard deviation, bytes */
	double		outside;		/* share of the growth outside contexts; < 0: unknown */
	int			skip;			/* no row at every skip-th tick (0: none) */
} spec;

static uint64_t rng = 88172645463325252ULL;

static double
uniform(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return ((rng >> 11) + 0.5) / 9007199254740992.0;
}

static double
gauss(void)
{
	return sqrt(-2 * log(uniform())) * cos(2 * M_PI * uniform());
}

/* Ticks 0..n-1, a minute apart, holding the specs' rows. */
static hp_hist_tick *
build(const spec *specs, size_t nspecs, int n)
{
	hp_hist_tick *ticks = hp_alloc(&arena, (size_t) n * sizeof(hp_hist_tick));

	for (int i = 0; i < n; i++)
	{
		hp_hist_tick *t = &ticks[i];

		t->time = T0 + i * MINUTE;
		t->interval = MINUTE;
		t->procs = hp_alloc(&arena, nspecs * sizeof(hp_hist_proc));
		for (size_t k = 0; k < nspecs; k++)
		{
			const spec *s = &specs[k];
			hp_hist_proc *p = NULL;
			hp_hist_row *r;
			double		v;

			if (i < s->from || i >= s->to || (s->skip && i % s->skip == 0))
				continue;
			for (size_t j = 0; j < t->nprocs; j++)
				if (t->procs[j].pid == s->pid && t->procs[j].start == s->start)
					p = &t->procs[j];
			if (p == NULL)
			{
				p = &t->procs[t->nprocs++];
				p->pid = s->pid;
				p->start = s->start;
				p->backend_type = "client backend";
				p->application = "";
				p->encoding = "UTF8";
				p->rows = hp_alloc(&arena, nspecs * sizeof(hp_hist_row));
			}
			v = s->base;
			if (s->shape == LINEAR)
				v += s->rate * (i - s->from);
			else if (s->shape == FILL)
				v += s->rate * ((i - s->from) < s->until ? (i - s->from) : s->until);
			else if (s->shape == SPIKE && i - s->from == s->until)
				v += s->rate;
			if (s->noise > 0)
				v += s->noise * gauss();
			r = &p->rows[p->nrows++];
			r->kind = s->kind;
			r->name = s->name;
			r->bytes = v < 0 ? 0 : (int64_t) llround(v);
			r->outside = s->outside < 0 ? -1 : (int64_t) llround(s->outside * (v - s->base));
			if (r->outside < 0 && s->outside >= 0)
				r->outside = 0;
		}
	}
	return ticks;
}

static const hp_growth_options all = {INT64_MIN, INT64_MAX, true, 0, 0};

static size_t
grow(const spec *specs, size_t nspecs, int n, const hp_growth_options *o, hp_suspect **out)
{
	return hp_growth(&arena, build(specs, nspecs, n), (size_t) n, o, out);
}

#define SPEC(pid, name, shape, base, rate, until, noise) \
	{pid, 1000 + pid, HP_HIST_FUNCTION, name, 0, 1 << 30, shape, base, rate, until, noise, -1, 0}

static void
test_linear(void)
{
	spec		s[] = {SPEC(7, "leak", LINEAR, 1e6, 1000, 0, 0)};
	spec		noisy[] = {SPEC(7, "leak", LINEAR, 1e6, 100000, 0, 50000)};
	hp_suspect *x;
	size_t		n = grow(s, 1, 45, &all, &x);

	T_CHECK("linear: found at exactly its rate (1000 bytes a minute: 60000 an hour)",
			n == 1 && fabs(x[0].bytes_per_hour - 60000) < 1e-6, "%zu, %.9f", n, n ? x[0].bytes_per_hour : 0);
	T_CHECK("linear: its fields", n == 1 && x[0].kind == HP_HIST_FUNCTION && strcmp(x[0].name, "leak") == 0 &&
			x[0].pid == 7 && x[0].start == 1007 && x[0].steadiness == 1 && x[0].since == T0 &&
			x[0].bytes == 1000000 + 44 * 1000 && x[0].processes == 1 && x[0].points == 45 &&
			x[0].outside_per_hour == 0 && !x[0].outside_contexts,
			"%d %s %d %lld %g %lld %lld %d %d", x[0].kind, x[0].name, x[0].pid, (long long) x[0].start,
			x[0].steadiness, (long long) x[0].since, (long long) x[0].bytes, x[0].processes, x[0].points);
	n = grow(noisy, 1, 60, &all, &x);
	T_CHECK("linear: through noise, within 5 % of its rate",
			n == 1 && fabs(x[0].bytes_per_hour / 6e6 - 1) < 0.05 && x[0].steadiness > 0.5 && x[0].steadiness < 1,
			"%zu, %.0f, tau %.3f", n, n ? x[0].bytes_per_hour : 0, n ? x[0].steadiness : 0);
}

static void
test_not_suspects(void)
{
	/* 45 points as in research/history.md section 8 */
	spec		fill[] = {SPEC(7, "fill", FILL, 1e6, 100000, 9, 0)};
	/* a fill of k samples: the k-th is at the plateau (research counts so) */
	spec		fill14[] = {SPEC(7, "fill", FILL, 1e6, 100000, 13, 0)};
	spec		fill15[] = {SPEC(7, "fill", FILL, 1e6, 100000, 14, 0)};
	spec		spike[] = {SPEC(7, "spike", SPIKE, 1e6, 5e6, 30, 0)};
	spec		flat[] = {SPEC(7, "flat", NOISE, 1e6, 0, 0, 0)};
	spec		noise[200];
	hp_suspect *x;
	size_t		n;

	n = grow(fill, 1, 45, &all, &x);
	T_CHECK("not a suspect: a fill in the first 20 % of the window, then flat", n == 0,
			"%zu, %.0f", n, n ? x[0].bytes_per_hour : 0);
	n = grow(fill14, 1, 45, &all, &x);
	T_CHECK("not a suspect: a fill of 14 of 45 samples (31 %), then flat", n == 0, "%zu", n);
	n = grow(fill15, 1, 45, &all, &x);
	T_CHECK("a suspect: a fill of 15 of 45 samples (past Theil-Sen's breakdown, as research found)",
			n == 1, "%zu", n);
	n = grow(spike, 1, 45, &all, &x);
	T_CHECK("not a suspect: flat with one spike", n == 0, "%zu", n);
	n = grow(flat, 1, 45, &all, &x);
	T_CHECK("not a suspect: flat", n == 0, "%zu", n);
	for (int i = 0; i < 200; i++)
		noise[i] = (spec) SPEC(100 + i, "noise", NOISE, 1e7, 0, 0, 1e5);
	n = grow(noise, 1, 45, &all, &x);
	T_CHECK("not a suspect: one series of noise", n == 0, "%zu", n);
	n = grow(noise, 200, 45, &all, &x);
	/* the test is at 1 %: two of 200 are expected */
	T_CHECK("noise: at most 3 % of 200 series of noise are suspects", n <= 6, "%zu", n);
	printf("# noise: %zu of 200 series of noise are suspects (1 %% expected)\n", n);
}

static void
test_processes(void)
{
	spec		late[] = {
		SPEC(7, "flat", NOISE, 1e6, 0, 0, 0),
		{8, 2000, HP_HIST_FUNCTION, "leak", 30, 60, LINEAR, 5e5, 2000, 0, 0, -1, 0},
	};
	spec		reuse[] = {
		{9, 1000, HP_HIST_FUNCTION, "x", 0, 30, NOISE, 1e7, 0, 0, 0, -1, 0},
		{9, 5000, HP_HIST_FUNCTION, "x", 30, 60, LINEAR, 1e6, 1000, 0, 0, -1, 0},
	};
	spec		gaps[] = {{7, 1, HP_HIST_FUNCTION, "gaps", 0, 60, LINEAR, 1e6, 1000, 0, 0, -1, 3}};
	hp_suspect *x;
	size_t		n;

	n = grow(late, 2, 60, &all, &x);
	T_CHECK("mid-window: a process that starts halfway and leaks is found",
			n == 1 && x[0].pid == 8 && x[0].start == 2000 && fabs(x[0].bytes_per_hour - 120000) < 1e-6 &&
			x[0].points == 30 && x[0].since == T0 + 30 * MINUTE && x[0].bytes == 500000 + 29 * 2000,
			"%zu %d %.3f %d", n, n ? x[0].pid : 0, n ? x[0].bytes_per_hour : 0, n ? x[0].points : 0);
	n = grow(reuse, 2, 60, &all, &x);
	T_CHECK("pid reuse: a later process with the pid is a series of its own",
			n == 1 && x[0].pid == 9 && x[0].start == 5000 && x[0].points == 30 &&
			fabs(x[0].bytes_per_hour - 60000) < 1e-6, "%zu %lld", n, n ? (long long) x[0].start : 0);
	n = grow(gaps, 1, 60, &all, &x);
	T_CHECK("missing points: a tick without the row is no point, not a zero",
			n == 1 && x[0].points == 40 && fabs(x[0].bytes_per_hour - 60000) < 1e-6 && x[0].steadiness == 1,
			"%zu %d %.3f", n, n ? x[0].points : 0, n ? x[0].bytes_per_hour : 0);
}

static void
test_across(void)
{
	spec		s[] = {
		{1, 11, HP_HIST_FUNCTION, "f", 0, 45, LINEAR, 1e6, 1000, 0, 0, -1, 0},
		{2, 12, HP_HIST_FUNCTION, "f", 10, 45, LINEAR, 2e6, 2000, 0, 0, -1, 0},
		{3, 13, HP_HIST_FUNCTION, "f", 0, 45, LINEAR, 3e6, 3000, 0, 0, -1, 0},
		{4, 14, HP_HIST_FUNCTION, "f", 0, 45, NOISE, 9e6, 0, 0, 0, -1, 0},
		{1, 11, HP_HIST_FUNCTION, "g", 0, 45, LINEAR, 1e6, 500, 0, 0, -1, 0},
		{2, 12, HP_HIST_CONTEXT, "f", 0, 45, LINEAR, 1e6, 4000, 0, 0, -1, 0},
	};
	hp_growth_options o = all;
	hp_suspect *x;
	size_t		n;

	n = grow(s, lengthof(s), 45, &all, &x);
	T_CHECK("per process: a suspect per growing series, most growth first",
			n == 5 && x[0].kind == HP_HIST_CONTEXT && x[1].pid == 3 && x[2].pid == 2 && x[3].pid == 1 &&
			strcmp(x[3].name, "f") == 0 && strcmp(x[4].name, "g") == 0,
			"%zu", n);
	o.per_process = false;
	n = grow(s, lengthof(s), 45, &o, &x);
	T_CHECK("across: one suspect per name, its rates summed over the processes it grows in",
			n == 3 && x[0].kind == HP_HIST_FUNCTION && strcmp(x[0].name, "f") == 0 &&
			fabs(x[0].bytes_per_hour - 360000) < 1e-6 && x[0].processes == 3 && x[0].pid == 0 &&
			x[0].start == 0 && x[1].kind == HP_HIST_CONTEXT && x[1].processes == 1 &&
			strcmp(x[2].name, "g") == 0,
			"%zu %.3f %d", n, n ? x[0].bytes_per_hour : 0, n ? x[0].processes : 0);
	T_CHECK("across: since the earliest, bytes of the last points summed, points of the longest",
			n == 3 && x[0].since == T0 && x[0].points == 45 &&
			x[0].bytes == 1000000 + 44 * 1000 + 2000000 + 34 * 2000 + 3000000 + 44 * 3000 &&
			x[0].steadiness == 1, "%lld %d %lld", (long long) x[0].since, x[0].points, (long long) x[0].bytes);

	o = all;
	o.min_rate = 150000;
	n = grow(s, lengthof(s), 45, &o, &x);
	T_CHECK("min_rate: per process, series below it are left out", n == 2 && x[1].pid == 3 &&
			fabs(x[1].bytes_per_hour - 180000) < 1e-6, "%zu", n);
	o.min_rate = 180000;
	n = grow(s, lengthof(s), 45, &o, &x);
	T_CHECK("min_rate: a rate equal to it is kept", n == 2, "%zu", n);
	o.per_process = false;
	o.min_rate = 300000;
	n = grow(s, lengthof(s), 45, &o, &x);
	T_CHECK("min_rate: across, the sum is cut, not each process", n == 1 && strcmp(x[0].name, "f") == 0 &&
			x[0].kind == HP_HIST_FUNCTION, "%zu", n);
}

/* A row of another shape (the client's merged suspects): an odd size. */
typedef struct
{
	char		kind[9];
	long		rate;
	char		tag;
} other_row;

static bool
other_is_function(const void *r)
{
	return strcmp(((const other_row *) r)->kind, "function") == 0;
}

static double
other_rate(const void *r)
{
	return (double) ((const other_row *) r)->rate;
}

static bool
other_same(const void *a, const void *b)
{
	(void) a;
	(void) b;
	return true;
}

static void
test_functions_first(void)
{
	spec		s[] = {
		{1, 11, HP_HIST_QUERY, "42", 0, 45, LINEAR, 1e6, 1050, 0, 0, -1, 0},
		{1, 11, HP_HIST_CONTEXT, "c", 0, 45, LINEAR, 1e6, 1040, 0, 0, -1, 0},
		{1, 11, HP_HIST_FUNCTION, "f", 0, 45, LINEAR, 1e6, 1000, 0, 0, -1, 0},
		{2, 12, HP_HIST_QUERY, "43", 0, 45, LINEAR, 1e6, 3000, 0, 0, -1, 0},
		{2, 12, HP_HIST_FUNCTION, "g", 0, 45, LINEAR, 1e6, 2000, 0, 0, -1, 0},
	};
	static const hp_growth_reader reader = {other_is_function, other_rate, other_same};
	other_row	r[] = {{"query", 100, 'a'}, {"context", 99, 'b'}, {"function", 95, 'c'},
	{"query", 50, 'd'}, {"function", 40, 'e'}};
	hp_suspect *x;
	size_t		n;

	n = grow(s, lengthof(s), 45, &all, &x);
	T_CHECK("functions first: within a tenth of a statement's and a context's rate, the function leads",
			n == 5 && x[0].kind == HP_HIST_QUERY && x[0].pid == 2 && x[1].kind == HP_HIST_FUNCTION &&
			x[1].pid == 2 && x[2].kind == HP_HIST_FUNCTION && x[2].pid == 1 && x[3].kind == HP_HIST_QUERY &&
			x[4].kind == HP_HIST_CONTEXT, "%zu", n);
	hp_growth_functions_first(r, lengthof(r), sizeof(other_row), &reader);
	T_CHECK("functions first: rows of any shape, moved whole; a function at 80 % stays behind",
			r[0].tag == 'c' && r[1].tag == 'a' && r[2].tag == 'b' && r[3].tag == 'd' && r[4].tag == 'e' &&
			r[0].rate == 95 && strcmp(r[1].kind, "query") == 0, "%c%c%c%c%c", r[0].tag, r[1].tag, r[2].tag,
			r[3].tag, r[4].tag);
}

static void
test_kinds_window(void)
{
	spec		s[] = {
		{1, 11, HP_HIST_TOTAL, "heap", 0, 45, LINEAR, 1e7, 9000, 0, 0, -1, 0},
		{1, 11, HP_HIST_FUNCTION, "f", 0, 45, LINEAR, 1e6, 1000, 0, 0, -1, 0},
		{1, 11, HP_HIST_QUERY, "42", 0, 45, LINEAR, 1e6, 2000, 0, 0, -1, 0},
		{1, 11, HP_HIST_CONTEXT, "c", 0, 45, LINEAR, 1e6, 3000, 0, 0, -1, 0},
		{1, 11, HP_HIST_CONTEXT, HP_HIST_REST, 0, 45, LINEAR, 1e6, 500, 0, 0, -1, 0},
	};
	hp_growth_options o = all;
	hp_suspect *x;
	size_t		n;
	bool		total = false;

	n = grow(s, lengthof(s), 45, &all, &x);
	for (size_t i = 0; i < n; i++)
		total |= x[i].kind == HP_HIST_TOTAL;
	T_CHECK("kinds: 0 is every kind but the total; the rest is a name like another",
			n == 4 && !total && strcmp(x[3].name, HP_HIST_REST) == 0, "%zu", n);
	o.kinds = 1 << HP_HIST_CONTEXT;
	n = grow(s, lengthof(s), 45, &o, &x);
	T_CHECK("kinds: contexts only", n == 2 && x[0].kind == HP_HIST_CONTEXT && x[1].kind == HP_HIST_CONTEXT,
			"%zu", n);
	o.kinds = 1 << HP_HIST_TOTAL | 1 << HP_HIST_QUERY;
	n = grow(s, lengthof(s), 45, &o, &x);
	T_CHECK("kinds: the total and queries", n == 2 && x[0].kind == HP_HIST_TOTAL &&
			strcmp(x[0].name, "heap") == 0 && x[1].kind == HP_HIST_QUERY && strcmp(x[1].name, "42") == 0,
			"%zu", n);

	/* the window: ticks 10..19 only */
	o = all;
	o.from = T0 + 10 * MINUTE;
	o.to = T0 + 19 * MINUTE;
	n = grow(s, lengthof(s), 45, &o, &x);
	T_CHECK("window: only its ticks count, both ends in", n == 4 && x[0].points == 10 &&
			x[0].since == o.from && x[0].bytes == 1000000 + 19 * 3000, "%zu %d", n, n ? x[0].points : 0);
	o.to = T0 + 14 * MINUTE;
	n = grow(s, lengthof(s), 45, &o, &x);
	T_CHECK("window: fewer than 6 points are not judged", n == 0, "%zu", n);
	o.to = T0 + 15 * MINUTE;
	n = grow(s, lengthof(s), 45, &o, &x);
	T_CHECK("window: 6 points are", n == 4, "%zu", n);
	o.from = 1;
	o.to = 0;
	n = grow(s, lengthof(s), 45, &o, &x);
	T_CHECK("window: an empty one", n == 0 && x == NULL, "%zu", n);
}

static void
test_span(void)
{
	spec		s[] = {SPEC(7, "leak", LINEAR, 1e6, 1000, 0, 0)};
	hp_hist_tick *t = build(s, 1, 8);
	hp_suspect *x;
	size_t		n;

	/* 8 points within 2.8 intervals: not judged */
	for (int i = 0; i < 8; i++)
		t[i].time = T0 + i * MINUTE * 4 / 10;
	n = hp_growth(&arena, t, 8, &all, &x);
	T_CHECK("span: points within less than 3 intervals are not judged", n == 0, "%zu", n);
	for (int i = 0; i < 8; i++)
		t[i].time = T0 + i * MINUTE * 3 / 7;
	n = hp_growth(&arena, t, 8, &all, &x);
	T_CHECK("span: 3 intervals are", n == 1, "%zu", n);
}

static void
test_outside(void)
{
	spec		s[] = {
		{1, 11, HP_HIST_FUNCTION, "malloc", 0, 45, LINEAR, 1e6, 1000, 0, 0, 0.9, 0},
		{1, 11, HP_HIST_FUNCTION, "half", 0, 45, LINEAR, 1e6, 1000, 0, 0, 0.5, 0},
		{1, 11, HP_HIST_FUNCTION, "palloc", 0, 45, LINEAR, 1e6, 1000, 0, 0, 0.25, 0},
		{1, 11, HP_HIST_FUNCTION, "unknown", 0, 45, LINEAR, 1e6, 1000, 0, 0, -1, 0},
	};
	hp_suspect *x;
	size_t		n = grow(s, lengthof(s), 45, &all, &x);
	bool		ok = n == 4;

	for (size_t i = 0; ok && i < n; i++)
	{
		const char *m = x[i].name;
		double		want = strcmp(m, "malloc") == 0 ? 54000 : strcmp(m, "half") == 0 ? 30000 :
			strcmp(m, "palloc") == 0 ? 15000 : 0;

		ok = fabs(x[i].outside_per_hour - want) < 1e-6 &&
			x[i].outside_contexts == (want >= 30000);
	}
	T_CHECK("outside: its rate, and the flag when it is half the growth or more", ok, "%zu", n);
	/* names at one rate sort by name */
	T_CHECK("sort: equal rates by name", n == 4 && strcmp(x[0].name, "half") == 0 &&
			strcmp(x[1].name, "malloc") == 0 && strcmp(x[3].name, "unknown") == 0, "%s", n ? x[0].name : "");
}

static void
test_thinning(void)
{
	spec		s[] = {SPEC(7, "leak", LINEAR, 1e6, 1000, 0, 0)};
	spec		fill[] = {SPEC(7, "fill", FILL, 1e6, 1000, 100, 0)};
	hp_suspect *x;
	size_t		n = grow(s, 1, 500, &all, &x);

	T_CHECK("thinning: 500 points, the exact rate, all counted",
			n == 1 && fabs(x[0].bytes_per_hour - 60000) < 1e-6 && x[0].points == 500 &&
			x[0].bytes == 1000000 + 499 * 1000 && x[0].steadiness == 1, "%zu", n);
	n = grow(fill, 1, 500, &all, &x);
	T_CHECK("thinning: a fill in the first 20 % of 500 points is still no suspect", n == 0, "%zu", n);
}

/* Odd values must not crash or trip UBSan, and nothing may be NaN. */
static void
test_hostile(void)
{
	hp_hist_row rows[8][4];
	hp_hist_proc procs[8][2];
	hp_hist_tick t[8];
	hp_suspect *x;
	size_t		n;
	bool		ok = true;
	hp_growth_options o = all;

	for (int i = 0; i < 8; i++)
	{
		rows[i][0] = (hp_hist_row) {HP_HIST_FUNCTION, "max", i < 7 ? INT64_MAX / 8 * (i + 1) : INT64_MAX, INT64_MAX};
		rows[i][1] = (hp_hist_row) {(hp_hist_kind) 77, "bad kind", i, i};
		rows[i][2] = (hp_hist_row) {HP_HIST_FUNCTION, NULL, i, -5};
		rows[i][3] = (hp_hist_row) {HP_HIST_FUNCTION, "max", 0, 0};	/* twice in a process */
		procs[i][0] = (hp_hist_proc) {.pid = i % 2 ? INT32_MIN : INT32_MAX, .start = INT64_MIN, .rows = rows[i], .nrows = 4};
		procs[i][1] = procs[i][0];	/* twice in a tick */
		t[i] = (hp_hist_tick) {i < 4 ? INT64_MIN + i : INT64_MAX - 8 + i, i % 3 ? INT64_MIN : INT64_MAX, procs[i], 2};
	}
	o.per_process = false;
	o.kinds = -1;
	n = hp_growth(&arena, t, 8, &o, &x);
	for (size_t i = 0; i < n; i++)
		ok &= x[i].bytes_per_hour == x[i].bytes_per_hour && x[i].steadiness >= 0 && x[i].steadiness <= 1 &&
			x[i].outside_per_hour == x[i].outside_per_hour && x[i].bytes >= 0;
	o.per_process = true;
	n = hp_growth(&arena, t, 8, &o, &x);
	for (size_t i = 0; i < n; i++)
		ok &= x[i].bytes_per_hour == x[i].bytes_per_hour;
	/* all ticks at one time: no pair has a slope */
	for (int i = 0; i < 8; i++)
		t[i].time = 5;
	n = hp_growth(&arena, t, 8, &o, &x);
	T_CHECK("hostile: extreme values, bad kinds, NULL names, duplicates: no crash, no NaN",
			ok && n == 0, "%zu", n);
	n = hp_growth(&arena, NULL, 0, &o, &x);
	T_CHECK("hostile: no ticks", n == 0 && x == NULL, "%zu", n);
}

static double
cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * nprocs processes by nnames names by nticks ticks, each tick's names in
 * strings of its own (as hp_hist_read gives them); one name in ten leaks in
 * every process.  Prints the time of hp_growth.
 */
static void
test_speed(const char *name, int nprocs, int nnames, int nticks, double limit)
{
	hp_arena	a;
	hp_hist_tick *t;
	hp_suspect *x;
	size_t		n;
	double		t0;
	double		secs;
	hp_growth_options o = all;
	long		polls;

	hp_arena_init(&a, &env.env);
	t = hp_alloc(&a, (size_t) nticks * sizeof(hp_hist_tick));
	for (int i = 0; i < nticks; i++)
	{
		const char **names = hp_alloc(&a, (size_t) nnames * sizeof(char *));

		for (int k = 0; k < nnames; k++)
		{
			char		buf[64];

			snprintf(buf, sizeof(buf), "SomeFunctionName_%d", k);
			names[k] = hp_strdup(&a, buf);
		}
		t[i].time = T0 + i * MINUTE;
		t[i].interval = MINUTE;
		t[i].nprocs = (size_t) nprocs;
		t[i].procs = hp_alloc(&a, (size_t) nprocs * sizeof(hp_hist_proc));
		for (int j = 0; j < nprocs; j++)
		{
			hp_hist_proc *p = &t[i].procs[j];

			p->pid = 1000 + j;
			p->start = j;
			p->nrows = (size_t) nnames;
			p->rows = hp_alloc(&a, (size_t) nnames * sizeof(hp_hist_row));
			for (int k = 0; k < nnames; k++)
			{
				p->rows[k].kind = HP_HIST_FUNCTION;
				p->rows[k].name = names[k];
				p->rows[k].bytes = 1000000 + (k % 10 == 0 ? (int64_t) i * 100 : 0) +
					(int64_t) (uniform() * 50000);
				p->rows[k].outside = p->rows[k].bytes / 2;
			}
		}
	}
	polls = env.interrupts;
	t0 = cpu_s();
	n = hp_growth(&a, t, (size_t) nticks, &o, &x);
	secs = cpu_s() - t0;
	polls = env.interrupts - polls;
	if (SANITIZED)
		limit *= 4;
	printf("# growth over %d processes by %d names by %d ticks: %.3f s CPU%s, %zu suspects\n",
		   nprocs, nnames, nticks, secs, SANITIZED ? " (with sanitizers)" : "", n);
	T_CHECK(name, n >= (size_t) (nprocs * nnames / 10) && n <= (size_t) (nprocs * nnames / 10) + 2 * nprocs &&
			secs < limit && polls >= 2L * nprocs * nnames * nticks / HP_WORK_QUANTUM,
			"%zu suspects, %.3f s, %ld interrupt checks", n, secs, polls);
	hp_arena_free(&a);
}

static void
test_env(void)
{
	spec		s[] = {SPEC(7, "leak", LINEAR, 1e6, 1000, 0, 0), SPEC(8, "leak", LINEAR, 1e6, 1000, 0, 0)};
	hp_hist_tick *t = build(s, 2, 1000);
	t_env		e;
	hp_arena	a;
	hp_suspect *x;
	jmp_buf		jb;
	volatile int jumped;

	t_env_init(&e);
	e.jump_at_interrupt = 1;
	e.env.work = HP_WORK_QUANTUM - 1;
	hp_arena_init(&a, &e.env);
	e.jump = &jb;
	jumped = setjmp(jb);
	if (jumped == 0)
		hp_growth(&a, t, 1000, &all, &x);
	e.jump = NULL;
	hp_arena_free(&a);
	T_CHECK("env: growth counts work, an interrupt jumps out, nothing leaks", jumped == 2 && e.allocs == 0,
			"jumped %d, %ld live", jumped, e.allocs);
	t_env_init(&e);
	e.fail_at = 2;
	hp_arena_init(&a, &e.env);
	e.jump = &jb;
	jumped = setjmp(jb);
	if (jumped == 0)
		hp_growth(&a, t, 1000, &all, &x);
	e.jump = NULL;
	hp_arena_free(&a);
	T_CHECK("env: out of memory is raised, nothing leaks", jumped == 1 && e.code == HP_ENOMEM && e.allocs == 0,
			"jumped %d, %ld live", jumped, e.allocs);
}

int
main(void)
{
	t_env_init(&env);
	hp_arena_init(&arena, &env.env);
	test_linear();
	test_not_suspects();
	test_processes();
	test_across();
	test_functions_first();
	test_kinds_window();
	test_span();
	test_outside();
	test_thinning();
	test_hostile();
	test_env();
	test_speed("speed: 20 processes by 10 names by 1440 ticks", 20, 10, 1440, 0.1);
	if (t_long())
		test_speed("speed: 100 processes by 50 names by 1440 ticks, under a second (4 with sanitizers)",
				   100, 50, 1440, 1);
	hp_arena_free(&arena);
	T_CHECK("growth frees what it took", env.allocs == 0, "%ld blocks live", env.allocs);
	return t_exit();
}
