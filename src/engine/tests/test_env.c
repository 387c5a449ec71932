/*
 * test_env.c -- the environment contract (env.c, arena.c): interrupts come
 * by work done; an interrupt or an allocation failure that longjmps out of
 * any point of an analysis leaves the arena whole, so freeing it frees
 * everything (counted here, and checked by LeakSanitizer at exit); the
 * symbolizer stays usable afterwards.  The memory budget (env->limit) is
 * never exceeded, fails with HP_EBUDGET and leaves nothing taken; a grown
 * block gives its old copy back; pprof takes no more than the text report.
 */
#include "test.h"

static hp_symbolizer *symbolizer;
static char *big;
static size_t big_len;

/* nstacks stacks over many distinct addresses; named by offset when mapped. */
static void
make_big(int nstacks, bool mapped)
{
	size_t		cap = 200 * (size_t) nstacks + 64;

	free(big);
	big = malloc(cap);
	big_len = (size_t) sprintf(big, "heap_v2/524288\n");
	for (int i = 0; i < nstacks; i++)
	{
		big_len += (size_t) sprintf(big + big_len, "@");
		for (int j = 0; j < 8; j++)
			big_len += (size_t) sprintf(big + big_len, " 0x%x", 0x400000 + ((i * 7 + j * 131) % 30000) * 16);
		big_len += (size_t) sprintf(big + big_len, "\nt*: %d: %d [0: 0]\n", i % 5 + 1, (i % 5 + 1) * 1000);
	}
	big_len += (size_t) sprintf(big + big_len, "MAPPED_LIBRARIES:\n%s", mapped ?
								"400000-800000 r-xp 00000000 08:01 1 /nonexistent/heapprof/env/lib.so\n" : "");
}

typedef struct job
{
	hp_arena   *a;
	hp_result  *r;
	hp_report_kind kind;
} job;

static void
analyze(void *arg)
{
	job		   *j = arg;
	hp_options	o = HP_OPTIONS_DEFAULT;

	hp_analyze(j->a, symbolizer, big, big_len, big, big_len, &o, j->kind, SIZE_MAX, j->r);
}

static void
fail_message(void *arg)
{
	hp_fail(arg, HP_EFORMAT, "line %d: %s", 7, "bad");
}

static void
test_work(void)
{
	t_env		t;
	long		before;

	t_env_init(&t);
	for (int i = 0; i < HP_WORK_QUANTUM - 1; i++)
		hp_work(&t.env, 1);
	before = t.interrupts;
	hp_work(&t.env, 1);
	T_CHECK("hp_work calls interrupt after a quantum of work", before == 0 && t.interrupts == 1 &&
			t.env.work == 0, "%ld then %ld", before, t.interrupts);
	hp_work(&t.env, 3 * HP_WORK_QUANTUM);
	T_CHECK("hp_work: a large amount is one check", t.interrupts == 2, "%ld", t.interrupts);
	t.env.interrupt = NULL;
	hp_work(&t.env, HP_WORK_QUANTUM);
	T_CHECK("hp_work without interrupt", t.env.work == 0, "work %zu", t.env.work);
	t_env_init(&t);
	T_CHECK("hp_fail formats its message", t_run(&t, fail_message, &t.env) == 1 &&
			t.code == HP_EFORMAT && strcmp(t.message, "line 7: bad") == 0, "\"%s\"", t.message);
}

static void
test_interrupts(void)
{
	t_env		t;
	hp_arena	a;
	hp_result	r;
	job			j = {&a, &r, HP_REPORT_PPROF};
	long		total;
	bool		clean = true;
	int			k;

	t_env_init(&t);
	hp_arena_init(&a, &t.env);
	T_CHECK("analysis polls interrupts", t_run(&t, analyze, &j) == 0 && t.interrupts >= 10,
			"%ld interrupts: %s", t.interrupts, t.message);
	total = t.interrupts;
	hp_arena_free(&a);
	/* out at every interrupt in turn */
	for (k = 1; k <= total; k++)
	{
		t_env_init(&t);
		t.jump_at_interrupt = k;
		hp_arena_init(&a, &t.env);
		clean &= t_run(&t, analyze, &j) == 2;
		hp_arena_free(&a);
		clean &= t.allocs == 0;
	}
	T_CHECK("an interrupt that jumps out leaks nothing", clean, "blocks left after interrupt %d", k);
	t_env_init(&t);
	hp_arena_init(&a, &t.env);
	T_CHECK("the symbolizer works after interrupts", t_run(&t, analyze, &j) == 0 && r.text.len > 0,
			"%s", t.message);
	hp_arena_free(&a);
}

static void
test_alloc_failures(void)
{
	t_env		t;
	hp_arena	a;
	hp_result	r;
	job			j = {&a, &r, HP_REPORT_TEXT};
	bool		clean = true;
	long		n;

	for (n = 1; n < 100000; n++)
	{
		int			rc;

		t_env_init(&t);
		t.fail_at = n;
		hp_arena_init(&a, &t.env);
		rc = t_run(&t, analyze, &j);
		hp_arena_free(&a);
		clean &= t.allocs == 0 && (rc == 0 || (rc == 1 && t.code == HP_ENOMEM));
		if (rc == 0)
			break;
	}
	T_CHECK("allocation failures at every point leak nothing", clean && n > 10,
			"after %ld allocations", n);
}

/* Peak of env->taken, and requests that would have gone above env->limit. */
static size_t peak;
static long over;

static void *
budget_alloc(void *ctx, size_t size)
{
	t_env	   *t = ctx;

	if (t->env.limit && t->env.taken + size > t->env.limit)
		over++;
	if (t->env.taken + size > peak)
		peak = t->env.taken + size;
	return t_alloc(ctx, size);
}

/* Peak bytes of one analysis of kind under limit; its status in *rc. */
static size_t
run_budget(hp_report_kind kind, size_t limit, int *rc, t_env *t)
{
	hp_arena	a;
	hp_result	r;
	job			j = {&a, &r, kind};

	t_env_init(t);
	t->env.alloc = budget_alloc;
	t->env.limit = limit;
	peak = 0;
	hp_arena_init(&a, &t->env);
	*rc = t_run(t, analyze, &j);
	hp_arena_free(&a);
	return peak;
}

static void
test_budget(void)
{
	t_env		t;
	int			rc;
	size_t		text = run_budget(HP_REPORT_TEXT, 0, &rc, &t);
	size_t		pprof = run_budget(HP_REPORT_PPROF, 0, &rc, &t);
	bool		clean = true;
	hp_arena	a;
	char	   *v = NULL;
	size_t		cap = 0;

	T_CHECK("pprof takes no more than 1.5x the text report", rc == 0 && pprof <= text * 3 / 2,
			"text %zu, pprof %zu bytes", text, pprof);
	over = 0;
	for (int k = 1; k <= 16; k++)
	{
		size_t		limit = text * k / 16;

		run_budget(HP_REPORT_TEXT, limit, &rc, &t);
		clean &= t.allocs == 0 && t.env.taken == 0 &&
			(rc == 0 || (rc == 1 && t.code == HP_EBUDGET && strstr(t.message, "memory budget")));
		if (k < 12)
			clean &= rc == 1;
	}
	T_CHECK("a budget fails with HP_EBUDGET before it is exceeded, freeing everything",
			clean && over == 0, "%ld requests above the limit; last: %s", over, t.message);
	run_budget(HP_REPORT_TEXT, text, &rc, &t);
	T_CHECK("a budget of the peak is enough", rc == 0 && over == 0, "%s", t.message);

	/* 1 MB doubled to 64 MB: the last copy and at most one other held */
	t_env_init(&t);
	hp_arena_init(&a, &t.env);
	for (size_t n = 1 << 20; n <= 64 << 20; n *= 2)
		HP_RESERVE(&a, v, cap, n - 1);
	T_CHECK("hp_grow gives back the block it replaced", a.total < 65 << 20 && t.env.taken == a.total,
			"%zu bytes held for %zu", a.total, cap);
	hp_arena_free(&a);
	T_CHECK("hp_arena_free gives back what grew", t.allocs == 0 && t.env.taken == 0,
			"%ld blocks, %zu bytes", t.allocs, t.env.taken);
}

static void
test_summarize(void)
{
	t_env		t;
	double		bytes, objs;
	size_t		stacks;
	char		err[256];
	hp_status	rc;

	t_env_init(&t);
	rc = hp_summarize(&t.env, big, big_len, &bytes, &objs, &stacks, err, sizeof(err));
	T_CHECK("summarize totals", rc == HP_OK && stacks == 20000 && bytes > 60000000 && objs > 60000 &&
			t.allocs == 0, "status %d, %zu stacks, %ld blocks", rc, stacks, t.allocs);
	rc = hp_summarize(&t.env, "heap_v2/1\n@ 0xq\n", 16, &bytes, &objs, &stacks, err, sizeof(err));
	T_CHECK("summarize a malformed dump", rc == HP_EFORMAT && stacks == 0 && t.allocs == 0 &&
			strcmp(err, "malformed stack addresses on line 2") == 0, "status %d: %s", rc, err);
}

int
main(void)
{
	symbolizer = hp_symbolizer_new();
	test_work();
	make_big(1000, false);
	test_interrupts();
	make_big(2000, true);
	test_budget();
	make_big(300, false);
	test_alloc_failures();
	make_big(20000, false);
	test_summarize();
	hp_symbolizer_free(symbolizer);
	free(big);
	return t_exit();
}
