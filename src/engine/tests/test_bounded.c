/*
 * test_bounded.c -- every reader of a dump costs O(n log n) in its input and
 * polls interrupts by the work it does.
 *
 * Each section of a dump (maps lines, stacks and frames, prof_recent
 * records, the pprof mapping table) is generated at a size whose analysis
 * takes at least MIN_NS of CPU time, then at 10 times that size: the larger
 * must cost at most 15 times as much (best of three runs each, so a loaded
 * machine does not make it flaky), and must have polled interrupts at least
 * once per HP_WORK_QUANTUM units of it.  A quadratic loop (filter_maps
 * comparing every file with every other, the pprof renderer looking up
 * every function in every mapping) costs 100 times as much.
 */
#include "test.h"

#include "../recent.h"

#include <time.h>

#define MIN_NS 50000000.0		/* the small input takes at least 50 ms */
#define MAX_RATIO 15.0

typedef enum section
{
	MAPS,						/* n file lines, one stack of one frame */
	PPROF,						/* n executable mappings, n functions */
	STACKS,						/* n stacks of 8 distinct frames */
	RECENT						/* n prof_recent records */
} section;

static hp_symbolizer *symbolizer;

typedef struct gen
{
	char	   *p;
	size_t		len;
	size_t		cap;
} gen;

static void
put(gen *g, const char *fmt,...)
{
	va_list		ap;
	int			n;

	for (;;)
	{
		va_start(ap, fmt);
		n = vsnprintf(g->p + g->len, g->cap - g->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t) n < g->cap - g->len)
			break;
		g->cap = g->cap ? g->cap * 2 : 1 << 20;
		if ((g->p = realloc(g->p, g->cap)) == NULL)
			t_fail("generate", "out of memory");
	}
	g->len += (size_t) n;
}

#define BASE 0x400000ULL

/* A dump of section s sized n. */
static void
generate(section s, size_t n, gen *g)
{
	g->len = 0;
	if (s == RECENT)
	{
		put(g, "{ \"recent_alloc\": [\n");
		for (size_t i = 0; i < n; i++)
			put(g, "%s{\"usize\": 64, \"released\": false, \"alloc_time\": %zu, "
				"\"alloc_trace\": [\"0x%zx\", \"0x%zx\"]}\n", i ? "," : "", 1000 + i,
				(size_t) (BASE + 16 * i), (size_t) (BASE + 16 * i + 8));
		put(g, "], \"recent_alloc_max\": -1, \"sample_interval\": 524288 }\n");
		return;
	}
	put(g, "heap_v2/524288\n  t*: 1: 100 [0: 0]\n");
	if (s == MAPS)
		put(g, "@ 0x%llx\n  t*: 1: 100 [0: 0]\n", BASE + 16);
	else if (s == PPROF)
	{
		/* addresses outside every mapping: functions of their own */
		for (size_t i = 0; i < n; i++)
			put(g, "@ 0x%llx\n  t*: 1: 100 [0: 0]\n", 0x100000000000ULL + 16 * i);
	}
	else
	{
		for (size_t i = 0; i < n; i++)
		{
			put(g, "@");
			for (size_t k = 0; k < 8; k++)
				put(g, " 0x%llx", 0x100000000000ULL + 16 * (8 * i + k));
			put(g, "\n  t*: 1: 100 [0: 0]\n");
		}
	}
	put(g, "\nMAPPED_LIBRARIES:\n");
	if (s == MAPS || s == PPROF)
		for (size_t i = 0; i < n; i++)
			put(g, "%llx-%llx r-xp 00000000 08:01 %zu          /nonexistent/heapprof/lib%zu.so\n",
				BASE + 4096 * i, BASE + 4096 * (i + 1), i + 1, i);
}

static double
cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* CPU time of one analysis of g (best of three); its interrupts in *polls. */
static double
measure(section s, const gen *g, long *polls)
{
	double		best = 0;

	for (int run = 0; run < 3; run++)
	{
		t_env		t;
		hp_arena	a;
		hp_result	r;
		hp_options	o = HP_OPTIONS_DEFAULT;
		double		t0;
		char		err[256];

		t_env_init(&t);
		hp_arena_init(&a, &t.env);
		t0 = cpu_ns();
		if (s == RECENT)
		{
			hp_buf		out;
			hp_recent_stats st;

			hp_buf_init(&out, &a);
			if (hp_recent_to_heap(&a, g->p, g->len, 0, INT64_MAX, HP_RECENT_LIVE,
								  &out, &st, err, sizeof(err)) != HP_OK)
				t_fail("recent input", "%s", err);
		}
		else
			hp_analyze(&a, symbolizer, g->p, g->len, NULL, 0, &o,
					   s == PPROF ? HP_REPORT_PPROF : HP_REPORT_TEXT, SIZE_MAX, &r);
		t0 = cpu_ns() - t0;
		hp_arena_free(&a);
		if (run == 0 || t0 < best)
			best = t0;
		*polls = t.interrupts;
	}
	return best;
}

/* Work units the larger input surely does: its lines, frames or records. */
static void
check(const char *name, section s, size_t n)
{
	gen			g = {0};
	double		small;
	double		large;
	long		polls;
	char		what[128];

	/* grow the small input until it is measurable */
	for (;;)
	{
		generate(s, n, &g);
		small = measure(s, &g, &polls);
		if (small >= MIN_NS || n >= 2000000)
			break;
		n *= 2;
	}
	generate(s, 10 * n, &g);
	large = measure(s, &g, &polls);
	printf("# %s: %zu: %.0f ms, %zu: %.0f ms CPU (%.1fx)\n", name, n, small / 1e6,
		   10 * n, large / 1e6, large / small);
	snprintf(what, sizeof(what), "%s: 10x input (%zu) costs at most %.0fx the time", name,
			 10 * n, MAX_RATIO);
	T_CHECK(what, large <= MAX_RATIO * small, "%zu: %.0f ms, %zu: %.0f ms (%.1fx)",
			n, small / 1e6, 10 * n, large / 1e6, large / small);
	snprintf(what, sizeof(what), "%s: interrupts polled by work done", name);
	T_CHECK(what, polls >= (long) (10 * n / HP_WORK_QUANTUM),
			"%ld interrupts for %zu units", polls, 10 * n);
	free(g.p);
}

static gen many;

static void
analyze_many(void *arg)
{
	hp_result	r;
	hp_options	o = HP_OPTIONS_DEFAULT;

	hp_analyze(arg, symbolizer, many.p, many.len, NULL, 0, &o, HP_REPORT_TEXT, SIZE_MAX, &r);
}

/* Stacks in more mapped files than HP_MAX_MODULES: HP_ELIMIT, and why. */
static void
too_many_files(void)
{
	t_env		t;
	hp_arena	a;
	int			rc;

	put(&many, "heap_v2/524288\n  t*: 1: 100 [0: 0]\n@");
	for (size_t i = 0; i <= HP_MAX_MODULES; i++)
		put(&many, " 0x%llx", BASE + 4096 * i + 16);
	put(&many, "\n  t*: 1: 100 [0: 0]\n\nMAPPED_LIBRARIES:\n");
	for (size_t i = 0; i <= HP_MAX_MODULES; i++)
		put(&many, "%llx-%llx r-xp 00000000 08:01 %zu /nonexistent/heapprof/lib%zu.so\n",
			BASE + 4096 * i, BASE + 4096 * (i + 1), i + 1, i);
	t_env_init(&t);
	hp_arena_init(&a, &t.env);
	rc = t_run(&t, analyze_many, &a);
	hp_arena_free(&a);
	T_CHECK("stacks in more than HP_MAX_MODULES files are refused",
			rc == 1 && t.code == HP_ELIMIT && strstr(t.message, "mapped files"),
			"returned %d: %s", rc, t.message);
	free(many.p);
}

int
main(void)
{
	symbolizer = hp_symbolizer_new();
	check("maps lines", MAPS, 4000);
	check("pprof mappings", PPROF, 1000);
	check("stacks and frames", STACKS, 1000);
	check("prof_recent records", RECENT, 1000);
	too_many_files();
	hp_symbolizer_free(symbolizer);
	return t_exit();
}
