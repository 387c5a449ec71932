/*
 * test_combine.c -- stacks combined by identity (combine.c): a diff, a merge
 * of N weighted inputs, a window joined with what it freed, empty inputs
 * and stacks, duplicates, negative sums, exact sides, bounds, interrupts
 * and allocation failures.
 */
#include "engine/combine.h"
#include "test.h"

#include <limits.h>

static t_env env;
static hp_arena arena;

/* A stack of functions by name, leaf first, added as input i. */
typedef struct stack
{
	uint32_t	input;
	const char *frames[4];		/* NULL-terminated */
	double		bytes;
	double		objs;
} stack;

static void
combine(hp_combiner *c, const double *w, uint32_t ninputs, const stack *s, size_t n, hp_graph *g)
{
	hp_combine_init(c, &arena, w, ninputs, g);
	for (size_t i = 0; i < n; i++)
	{
		uint32_t	seq[4];
		uint32_t	k = 0;

		while (k < 4 && s[i].frames[k])
		{
			seq[k] = hp_combine_func(c, s[i].frames[k], NULL);
			k++;
		}
		hp_combine_stack(c, s[i].input, k ? seq : NULL, k, 0, s[i].bytes, s[i].objs);
	}
}

/* The path whose functions are the given names, or NULL. */
static const hp_path *
find(const hp_graph *g, const char *const *names)
{
	for (size_t k = 0; k < g->npaths; k++)
	{
		const hp_path *p = &g->paths[k];
		uint32_t	j = 0;

		while (j < p->nframes && names[j] && strcmp(g->funcs[p->frames[j]].name, names[j]) == 0)
			j++;
		if (j == p->nframes && names[j] == NULL)
			return p;
	}
	return NULL;
}

static const char *const ab[] = {"a", "b", NULL};
static const char *const ba[] = {"b", "a", NULL};
static const char *const cb[] = {"c", "b", NULL};
static const char *const none[] = {NULL};

/* ---- failures, each run under t_run ---- */

static void
many_stacks(void *arg)
{
	static const double w[] = {1};
	hp_combiner c;
	hp_graph	g;
	uint32_t	seq[3];

	hp_combine_init(&c, &arena, w, 1, &g);
	seq[0] = hp_combine_func(&c, "leaf", NULL);
	seq[1] = hp_combine_func(&c, "mid", NULL);
	for (uint32_t i = 0; i < 1000; i++)
	{
		char		name[16];

		snprintf(name, sizeof(name), "f%u", i);
		hp_combine_func(&c, hp_strdup(&arena, name), NULL);
	}
	/* 1000 paths, each 200 times */
	for (uint32_t i = 0; i < 200000; i++)
	{
		seq[2] = 2 + i % 1000;
		hp_combine_stack(&c, 0, seq, 3, 0, 1, 1);
	}
	*(size_t *) arg = g.paths[999].bytes == 200 ? g.npaths : 0;
}

static void
bad_input(void *arg)
{
	static const double w[] = {1, -1};
	hp_combiner c;
	hp_graph	g;

	hp_combine_init(&c, &arena, w, 2, &g);
	hp_combine_stack(&c, 2, NULL, 0, 0, 1, 1);
}

static void
no_inputs(void *arg)
{
	hp_combiner c;
	hp_graph	g;

	hp_combine_init(&c, &arena, NULL, 0, &g);
}

static void
too_many_inputs(void *arg)
{
	double		w[HP_MAX_INPUTS + 1] = {0};
	hp_combiner c;
	hp_graph	g;

	hp_combine_init(&c, &arena, w, HP_MAX_INPUTS + 1, &g);
}

int
main(void)
{
	hp_combiner c;
	hp_graph	g;
	const hp_path *p;
	int			rc;
	size_t		npaths = 0;

	t_env_init(&env);
	hp_arena_init(&arena, &env.env);

	{
		/* a diff: a minus a base, per function sequence whatever the order of stacks */
		static const double w[] = {1, -1};
		const stack s[] = {
			{0, {"a", "b"}, 100, 2}, {1, {"a", "b"}, 30, 1}, {0, {"b", "a"}, 5, 1},
			{1, {"c", "b"}, 40, 4}, {0, {"a", "b"}, 20, 1},
		};

		combine(&c, w, 2, s, lengthof(s), &g);
		p = find(&g, ab);
		T_CHECK("combine diff", g.npaths == 3 && p && p->bytes == 90 && p->objs == 2 &&
				find(&g, ba)->bytes == 5 && find(&g, cb)->bytes == -40 && find(&g, cb)->objs == -4,
				"%zu paths, a;b %g", g.npaths, p ? p->bytes : 0);
		T_CHECK("combine diff keeps each side", p && p->input[0] == 120 && p->input[1] == 3 &&
				p->input[2] == 30 && p->input[3] == 1 && find(&g, cb)->input[0] == 0 &&
				find(&g, cb)->input[2] == 40,
				"a;b sides %g %g", p ? p->input[0] : 0, p ? p->input[2] : 0);
		T_CHECK("combine diff functions once each, in order", g.nfuncs == 3 &&
				strcmp(g.funcs[0].name, "a") == 0 && strcmp(g.funcs[2].name, "c") == 0 &&
				g.paths[0].frames[0] == 0 && g.paths[0].frames[1] == 1,
				"%zu functions", g.nfuncs);
	}

	{
		/* a merge of four inputs, one weighted -1 and one 2 */
		static const double w[] = {1, 1, 2, -1};
		const stack s[] = {
			{0, {"a", "b"}, 1, 1}, {1, {"a", "b"}, 10, 1}, {2, {"a", "b"}, 100, 1},
			{3, {"a", "b"}, 1000, 1}, {2, {"c", "b"}, 7, 1}, {3, {"b", "a"}, 3, 3},
		};

		combine(&c, w, 4, s, lengthof(s), &g);
		p = find(&g, ab);
		T_CHECK("combine merge of N", g.npaths == 3 && p && p->bytes == 1 + 10 + 200 - 1000 &&
				p->objs == 1 + 1 + 2 - 1 && find(&g, cb)->bytes == 14 && find(&g, ba)->objs == -3,
				"a;b %g", p ? p->bytes : 0);
		T_CHECK("combine merge sums each input unweighted", p && p->input[0] == 1 && p->input[2] == 10 &&
				p->input[4] == 100 && p->input[6] == 1000 && p->input[7] == 1,
				"a;b inputs %g %g %g %g", p ? p->input[0] : 0, p ? p->input[2] : 0,
				p ? p->input[4] : 0, p ? p->input[6] : 0);
	}

	{
		/*
		 * A window joined with what it freed (weight 0): the window's sums
		 * are bit for bit its own, however much is joined; the freed part is
		 * its own sum, not a difference (0.1 + 0.2 - 0.2 != 0.1).
		 */
		static const double w[] = {1, 0};
		const stack s[] = {
			{0, {"a", "b"}, 0.1, 1}, {0, {"a", "b"}, 0.2, 1}, {1, {"a", "b"}, 0.2, 1},
			{1, {"c", "b"}, 5, 1}, {0, {"b", "a"}, 1e300, 1},
		};

		combine(&c, w, 2, s, lengthof(s), &g);
		p = find(&g, ab);
		T_CHECK("combine join keeps the window's values", p && p->bytes == 0.1 + 0.2 && p->objs == 2 &&
				find(&g, ba)->bytes == 1e300 && find(&g, cb)->bytes == 0 && find(&g, cb)->objs == 0,
				"a;b %.17g", p ? p->bytes : 0);
		T_CHECK("combine join sums the freed part exactly", p && p->input[2] == 0.2 && p->input[3] == 1 &&
				p->input[0] == p->bytes && find(&g, cb)->input[2] == 5,
				"a;b freed %.17g", p ? p->input[2] : 0);
	}

	{
		/* no stack at all; then a stack with no frame left (allocator frames only) */
		static const double w[] = {1, -1};
		const stack s[] = {{0, {NULL}, 4, 1}, {1, {NULL}, 6, 2}, {0, {"a", "b"}, 1, 1}};

		combine(&c, w, 2, s, 0, &g);
		T_CHECK("combine nothing", g.npaths == 0 && g.nfuncs == 0 && g.paths == NULL,
				"%zu paths", g.npaths);
		combine(&c, w, 2, s, lengthof(s), &g);
		p = find(&g, none);
		T_CHECK("combine empty stacks are one path", g.npaths == 2 && p && p->nframes == 0 &&
				p->bytes == -2 && p->objs == -1 && p->input[0] == 4 && p->input[2] == 6,
				"%zu paths", g.npaths);
	}

	{
		/* the same stack many times, the same name interned once */
		static const double w[] = {1};
		bool		added = true;
		stack		s[100];

		for (int i = 0; i < 100; i++)
			s[i] = (stack) {0, {"a", "b"}, i, 1};
		combine(&c, w, 1, s, 100, &g);
		T_CHECK("combine duplicates sum into one path", g.npaths == 1 && g.paths[0].bytes == 4950 &&
				g.paths[0].objs == 100 && g.nfuncs == 2 && g.paths[0].input == NULL,
				"%zu paths, %g", g.npaths, g.paths[0].bytes);
		T_CHECK("combine interns a name once", hp_combine_func(&c, "b", &added) == 1 && !added &&
				hp_combine_func(&c, "z", &added) == 2 && added && g.nfuncs == 3,
				"%zu functions", g.nfuncs);
	}

	{
		/* focus / ignore flags of every stack of a path add up */
		static const double w[] = {1, -1};
		uint32_t	seq[1];

		hp_combine_init(&c, &arena, w, 2, &g);
		seq[0] = hp_combine_func(&c, "a", NULL);
		hp_combine_stack(&c, 0, seq, 1, 1, 1, 1);
		hp_combine_stack(&c, 1, seq, 1, 2, 1, 1);
		T_CHECK("combine ors match flags", g.npaths == 1 && g.paths[0].match == 3 && g.paths[0].bytes == 0,
				"match %u", g.paths[0].match);
	}

	/* work is counted: 200000 stacks of 3 frames poll the interrupt */
	env.interrupts = 0;
	rc = t_run(&env, many_stacks, &npaths);
	T_CHECK("combine polls interrupts by work", rc == 0 && npaths == 1000 &&
			env.interrupts >= 200000 * 4 / HP_WORK_QUANTUM,
			"rc %d, %zu paths, %ld interrupts", rc, npaths, env.interrupts);
	env.interrupts = 0;
	env.jump_at_interrupt = 3;
	rc = t_run(&env, many_stacks, &npaths);
	env.jump_at_interrupt = 0;
	T_CHECK("combine stops at an interrupt", rc == 2 && env.interrupts == 3, "rc %d", rc);

	/* running out of memory midway is an error, and the arena frees what was taken */
	hp_arena_free(&arena);
	hp_arena_init(&arena, &env.env);
	env.nalloc = 0;
	env.fail_at = LONG_MAX;		/* counts allocations */
	t_run(&env, many_stacks, &npaths);
	hp_arena_free(&arena);
	hp_arena_init(&arena, &env.env);
	env.fail_at = env.nalloc / 2;
	env.nalloc = 0;
	rc = t_run(&env, many_stacks, &npaths);
	env.fail_at = 0;
	hp_arena_free(&arena);
	T_CHECK("combine fails through the env when memory runs out", rc == 1 && env.code == HP_ENOMEM &&
			env.allocs == 0, "rc %d code %d, %ld blocks live", rc, env.code, env.allocs);
	hp_arena_init(&arena, &env.env);

	rc = t_run(&env, bad_input, NULL);
	T_CHECK("combine refuses an input it was not given", rc == 1 && env.code == HP_ELIMIT,
			"rc %d", rc);
	rc = t_run(&env, no_inputs, NULL);
	T_CHECK("combine refuses no inputs", rc == 1 && env.code == HP_ELIMIT, "rc %d", rc);
	rc = t_run(&env, too_many_inputs, NULL);
	T_CHECK("combine refuses too many inputs", rc == 1 && env.code == HP_ELIMIT, "rc %d", rc);

	hp_arena_free(&arena);
	T_CHECK("combine frees what it took", env.allocs == 0, "%ld blocks live", env.allocs);
	return t_exit();
}
