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
 *
 * Hostile objects: gen_funcs.sh assembles one with n functions (symbols,
 * FDEs, a DWARF unit per thousand) and a dump whose stacks hit each, and
 * the same 10x rule holds for it; an index build polls interrupts while it
 * runs, and one cut short by an interrupt is never trusted afterwards.  A
 * dump naming one large file in HP_MAX_MODULES spellings indexes it once.
 *
 * All of it takes a minute: it runs under make check-bounded (t_long()).
 */
#include "test.h"

#include "../recent.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MIN_NS 50000000.0		/* the small input takes at least 50 ms */
#define MAX_RATIO 15.0

typedef enum section
{
	MAPS,						/* n file lines, one stack of one frame */
	PPROF,						/* n executable mappings, n functions */
	STACKS,						/* n stacks of 8 distinct frames */
	FLAME,						/* n stacks of 7 shared frames and a leaf, as a flame graph */
	RECENT,						/* n prof_recent records */
	OBJECT						/* n functions of one object, all in stacks */
} section;

static hp_symbolizer *symbolizer;
static char tmpdir[] = "/tmp/hp_bounded_XXXXXX";

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
		if (g->p)				/* no pointer arithmetic on NULL */
		{
			va_start(ap, fmt);
			n = vsnprintf(g->p + g->len, g->cap - g->len, fmt, ap);
			va_end(ap);
			if (n >= 0 && (size_t) n < g->cap - g->len)
				break;
		}
		g->cap = g->cap ? g->cap * 2 : 1 << 20;
		if ((g->p = realloc(g->p, g->cap)) == NULL)
			t_fail("generate", "out of memory");
	}
	g->len += (size_t) n;
}

#define BASE 0x400000ULL

/* A dump of section s sized n. */
static void
read_file(const char *path, gen *g)
{
	FILE	   *f = fopen(path, "r");
	size_t		got;

	if (f == NULL)
		t_fail("generate", "cannot open %s", path);
	g->len = 0;
	do
	{
		if (g->cap - g->len < 65536)
		{
			g->cap = g->cap ? g->cap * 2 : 1 << 20;
			if ((g->p = realloc(g->p, g->cap)) == NULL)
				t_fail("generate", "out of memory");
		}
		got = fread(g->p + g->len, 1, g->cap - g->len - 1, f);
		g->len += got;
	} while (got > 0);
	g->p[g->len] = '\0';
	fclose(f);
}

/* gen_funcs.sh: an object of n functions in tmpdir, and its dump into g. */
static void
generate_object(size_t n, gen *g)
{
	char		cmd[512];
	char		path[256];

	snprintf(cmd, sizeof(cmd), "sh %s/../tests/gen_funcs.sh %zu %s", TESTDATA, n, tmpdir);
	if (system(cmd) != 0)
		t_fail("generate", "%s failed", cmd);
	snprintf(path, sizeof(path), "%s/funcs.heap", tmpdir);
	read_file(path, g);
}

static void
generate(section s, size_t n, gen *g)
{
	g->len = 0;
	if (s == OBJECT)
	{
		generate_object(n, g);
		return;
	}
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
	else if (s == FLAME)
	{
		/* one node with n children: no walk of its siblings per child */
		for (size_t i = 0; i < n; i++)
		{
			put(g, "@ 0x%llx", 0x100000000000ULL + 16 * (i + 8));
			for (size_t k = 0; k < 7; k++)
				put(g, " 0x%llx", 0x100000000000ULL + 16 * k);
			put(g, "\n  t*: 1: 100 [0: 0]\n");
		}
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
	if (s == STACKS || s == FLAME)
		/* code outside files (JIT): a name per address, by its place in the mapping */
		put(g, "100000000000-100100000000 r-xp 00000000 00:00 0\n");
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
		/* an object is indexed on every run: no cache from the last */
		if (s == OBJECT)
		{
			hp_symbolizer_free(symbolizer);
			symbolizer = hp_symbolizer_new();
		}
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
					   s == PPROF ? HP_REPORT_PPROF : s == FLAME ? HP_REPORT_FLAMEGRAPH : HP_REPORT_TEXT,
					   SIZE_MAX, &r);
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
	/*
	 * A loaded machine can slow one measurement; a super-linear reader is
	 * slow every time: measure both again, up to twice, before judging.
	 */
	for (int again = 0; again < 2 && large > MAX_RATIO * small; again++)
	{
		double		l;
		double		sm;

		generate(s, n, &g);
		sm = measure(s, &g, &polls);
		generate(s, 10 * n, &g);
		l = measure(s, &g, &polls);	/* last: polls are the large input's */
		if (l / sm < large / small)
		{
			large = l;
			small = sm;
		}
	}
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

/* ---- hostile objects ---- */

static gen object;				/* a dump of OBJECT_N functions (generate_object) */
static gen small;				/* the dump to analyze */
static long building;			/* interrupts polled while no index was complete */
static char why[1024];			/* the last analysis' error */

#define OBJECT_N 200000

static void
counting_interrupt(void *ctx)
{
	if (hp_symbolizer_memory(symbolizer) == 0)
		building++;
	t_interrupt(ctx);
}

/* Analyze small with a fresh or the kept symbolizer; its frames' names in names[]. */
static int
run_small(bool fresh, long jump_at, void (*interrupt) (void *), char names[][64], size_t *n)
{
	t_env		t;
	hp_arena	a;
	int			rc;

	if (fresh)
	{
		hp_symbolizer_free(symbolizer);
		symbolizer = hp_symbolizer_new();
	}
	t_env_init(&t);
	t.jump_at_interrupt = jump_at;
	if (interrupt)
		t.env.interrupt = interrupt;
	hp_arena_init(&a, &t.env);
	{
		hp_result	r;
		hp_options	o = HP_OPTIONS_DEFAULT;
		jmp_buf		jb;

		t.jump = &jb;
		if ((rc = setjmp(jb)) == 0)
		{
			hp_analyze(&a, symbolizer, small.p, small.len, NULL, 0, &o, HP_REPORT_TOP,
					   SIZE_MAX, &r);
			*n = r.located.npcs < 1024 ? r.located.npcs : 1024;
			for (size_t i = 0; i < *n; i++)
				snprintf(names[i], 64, "%s", r.located.syms[i].name);
		}
		t.jump = NULL;
	}
	snprintf(why, sizeof(why), "%s", t.message);
	hp_arena_free(&a);
	return rc;
}

/* small := the first stack of object and its maps, each mapping line spelled k ways. */
static void
one_stack(size_t spellings)
{
	const char *stack = strstr(object.p, "\n@");
	const char *maps = strstr(object.p, "MAPPED_LIBRARIES:\n");
	const char *path = strchr(maps, '/');
	const char *slash = strrchr(path, '/');
	size_t		len = (size_t) (strchr(stack + 1, '\n') - stack);

	small.len = 0;
	put(&small, "heap_v2/524288\n  t*: 1: 100 [0: 0]\n");
	if (spellings == 1)
		put(&small, "%.*s\n  t*: 1: 100 [0: 0]\n", (int) len - 1, stack + 1);
	else
	{
		/* one frame in each spelling, at the same place in the file */
		put(&small, "@");
		for (size_t k = 0; k < spellings; k++)
			put(&small, " 0x%llx", 0x7f0000000000ULL + ((unsigned long long) k << 32) +
				strtoull(stack + 2, NULL, 16) - 0x7f0000000000ULL);
		put(&small, "\n  t*: 1: 100 [0: 0]\n");
	}
	put(&small, "\nMAPPED_LIBRARIES:\n");
	for (size_t k = 0; k < spellings; k++)
	{
		/* dir/./././libhpfuncs.so, dir//libhpfuncs.so, ... and a symlink */
		/* libdwfl takes lines of one inode for one file's segments */
		put(&small, "%llx-%llx r-xp 00000000 08:01 %zu %.*s",
			0x7f0000000000ULL + ((unsigned long long) k << 32),
			0x7f0000000000ULL + ((unsigned long long) k << 32) + 0x10000000ULL,
			k + 1, (int) (slash - path), path);
		for (size_t j = 0; j < k % 32; j++)
			put(&small, "/.");
		for (size_t j = 0; j < k / 64; j++)
			put(&small, "/");
		put(&small, "%s\n", (k / 32) % 2 ? "/link.so" : slash);
	}
}

/*
 * An interrupt lands inside the index build of an object of OBJECT_N
 * functions (no index is complete at it), and whichever of those
 * interrupts a query is cut at, the next analysis with the same
 * symbolizer names every frame as a fresh one does.
 */
static void
interrupted_builds(void)
{
	char		want[8][64];
	char		got[8][64];
	size_t		n = 0;
	size_t		m = 0;
	long		during;
	bool		same = true;

	one_stack(1);
	run_small(true, 0, NULL, want, &n);
	T_CHECK("a fresh symbolizer names the object's frames",
			n == 8 && strncmp(want[0], "hp_fn_", 6) == 0, "%zu frames, first %s", n, n ? want[0] : "");
	building = 0;
	run_small(true, 0, counting_interrupt, got, &m);
	during = building;
	T_CHECK("interrupts are polled while the object's index is built",
			during >= (long) (OBJECT_N / HP_WORK_QUANTUM), "%ld polls during the build", during);
	for (long k = 1; k <= during && same; k++)
	{
		int			rc = run_small(true, k, NULL, got, &m);

		rc = rc == 2 ? run_small(false, 0, NULL, got, &m) : -1;
		for (size_t i = 0; i < n && rc == 0; i++)
			same &= m == n && strcmp(got[i], want[i]) == 0;
		if (rc != 0 || !same)
		{
			same = false;
			T_CHECK("an index cut short by an interrupt is built again", false,
					"cut at poll %ld: rc %d, frame 0 %s, want %s", k, rc, got[0], want[0]);
		}
	}
	if (same)
		T_CHECK("an index cut short by an interrupt is built again", true, "%ld cuts", during);
}

/*
 * The object named in HP_MAX_MODULES spellings (./, //, a symlink), a frame
 * in each: every frame is named as in the first, and the file is indexed
 * once -- the symbolizer holds at most twice the memory of one spelling
 * (each was a module with its own index: HP_MAX_MODULES times) -- and
 * opened once: with 256 descriptors (a backend has about 1,000) all are
 * named (libdwfl held one per module: three quarters were addresses).
 */
static void
many_spellings(void)
{
	static char names[1024][64];
	char		link[300];
	char		target[300];
	size_t		n = 0;
	size_t		one;
	size_t		all;
	size_t		named = 0;
	double		t0;
	struct rlimit rl;
	struct rlimit low;

	snprintf(link, sizeof(link), "%s/link.so", tmpdir);
	snprintf(target, sizeof(target), "%s/libhpfuncs.so", tmpdir);
	if (symlink(target, link) != 0)
		t_fail("symlink", "%s", link);
	one_stack(1);
	run_small(true, 0, NULL, names, &n);
	one = hp_symbolizer_memory(symbolizer);
	one_stack(HP_MAX_MODULES);
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		t_fail("getrlimit", "RLIMIT_NOFILE");
	low = rl;
	low.rlim_cur = 256;
	setrlimit(RLIMIT_NOFILE, &low);
	t0 = cpu_ns();
	if (run_small(true, 0, NULL, names, &n) != 0)
		n = 0;
	t0 = cpu_ns() - t0;
	setrlimit(RLIMIT_NOFILE, &rl);
	all = hp_symbolizer_memory(symbolizer);
	for (size_t i = 0; i < n; i++)
		named += strcmp(names[i], names[0]) == 0 && strncmp(names[0], "hp_fn_", 6) == 0;
	printf("# %d spellings: %.0f ms CPU, index %zu kB (one spelling: %zu kB)\n",
		   HP_MAX_MODULES, t0 / 1e6, all / 1024, one / 1024);
	T_CHECK("a file in HP_MAX_MODULES spellings: every frame named alike",
			n == HP_MAX_MODULES && named == n, "%zu frames, %zu named %s %s", n, named,
			n ? names[0] : "", why);
	T_CHECK("a file in HP_MAX_MODULES spellings is indexed once",
			all <= 2 * one, "index %zu bytes, one spelling %zu", all, one);
}

int
main(void)
{
	if (!t_long())
		return t_exit();
	symbolizer = hp_symbolizer_new();
	check("maps lines", MAPS, 4000);
	check("pprof mappings", PPROF, 1000);
	check("stacks and frames", STACKS, 1000);
	check("flame graph children", FLAME, 1000);
	check("prof_recent records", RECENT, 1000);
	too_many_files();
	if (mkdtemp(tmpdir) == NULL)
		t_fail("mkdtemp", "%s", tmpdir);
	check("object functions", OBJECT, 2000);
	generate_object(OBJECT_N, &object);
	interrupted_builds();
	many_spellings();
	{
		char		cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
		if (system(cmd) != 0)
			t_fail("cleanup", "%s", cmd);
	}
	free(object.p);
	free(small.p);
	hp_symbolizer_free(symbolizer);
	return t_exit();
}
