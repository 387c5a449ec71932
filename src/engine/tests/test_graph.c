/*
 * test_graph.c -- aggregation (graph.c) on located stacks made without a
 * symbolizer (t_locate): allocator cut, folding by name and by each
 * profile's recorded starts, focus / ignore, a base, drop_negative, flat and
 * cum with recursion and inlined functions.
 */
#include "test.h"

/* functions by address (callers are listed one past, as dumped) */
static const t_name names[] = {
	{0x3100, "main", NULL},
	{0x2100, "mid", NULL},
	{0x1100, "leaf", NULL},
	{0x1200, "leaf", NULL},
	{0xa100, "je_malloc", NULL},
	{0xb100, "palloc", NULL},
	{0x4100, "rec", NULL},
	{0x5100, "other", "inl"},
	/* 0xc100 and 0xd100: nameless, labelled by address, starting there */
};

static const char profile[] =
	"%heapprof-fold c100\n"
	"heap_v2/1\n"
	"@ 0x1100 0x2101 0x3101\n"
	"t*: 1: 100 [0: 0]\n"
	"@ 0xa100 0x1201 0x2101 0x3101\n"
	"t*: 1: 50 [0: 0]\n"
	"@ 0xa100 0xc101 0xb101 0x2101 0x3101\n"
	"t*: 1: 30 [0: 0]\n"
	"@ 0x4100 0x4101 0x4101 0x3101\n"
	"t*: 2: 20 [0: 0]\n"
	"@ 0x5100 0x3101\n"
	"t*: 1: 7 [0: 0]\n"
	"@ 0xffffffff81000100 0x1101 0x2101 0x3101\n"
	"t*: 1: 1 [0: 0]\n";

/* another process: its nameless allocator function is elsewhere */
static const char base[] =
	"%heapprof-fold d100\n"
	"heap_v2/1\n"
	"@ 0xa100 0xd101 0xb101 0x2101 0x3101\n"
	"t*: 1: 10 [0: 0]\n"
	"@ 0x1100 0x2101 0x3101\n"
	"t*: 1: 200 [0: 0]\n";

static t_env env;
static hp_arena arena;

static void
build(const hp_options *o, bool with_base, hp_graph *g)
{
	hp_profile	p, b;
	hp_located	pl, bl;
	char		err[256];

	if (t_parse(&arena, profile, &p, err, sizeof(err)) != HP_OK ||
		t_parse(&arena, base, &b, err, sizeof(err)) != HP_OK)
	{
		t_fail("graph input", "%s", err);
		exit(t_exit());
	}
	t_locate(&arena, &p, names, sizeof(names) / sizeof(names[0]), &pl);
	t_locate(&arena, &b, names, sizeof(names) / sizeof(names[0]), &bl);
	hp_build_graph(&arena, &p, &pl, with_base ? &b : NULL, with_base ? &bl : NULL, o, g);
}

static const hp_func *
func(const hp_graph *g, const char *name)
{
	static const hp_func none = {.name = "(none)"};

	for (size_t f = 0; f < g->nfuncs; f++)
		if (strcmp(g->funcs[f].name, name) == 0)
			return &g->funcs[f];
	return &none;
}

static const hp_path *
path_of(const hp_graph *g, const char *leaf)
{
	for (size_t k = 0; k < g->npaths; k++)
		if (g->paths[k].nframes && strcmp(g->funcs[g->paths[k].frames[0]].name, leaf) == 0)
			return &g->paths[k];
	return NULL;
}

int
main(void)
{
	hp_options	o = HP_OPTIONS_DEFAULT;
	static const char *const fold_names[] = {"palloc", NULL};
	hp_graph	g;
	const hp_path *path;

	t_env_init(&env);
	hp_arena_init(&arena, &env.env);

	build(&o, false, &g);
	T_CHECK("graph total", g.total == 208 && g.local_total == 208, "total %g local %g", g.total, g.local_total);
	T_CHECK("graph cuts the allocator's frames and merges the paths", func(&g, "leaf")->flat == 151 &&
			func(&g, "je_malloc")->cum == 0 && !func(&g, "je_malloc")->seen,
			"leaf flat %g", func(&g, "leaf")->flat);
	T_CHECK("graph skips kernel addresses", g.npaths == 4, "%zu paths", g.npaths);
	T_CHECK("graph without folding", func(&g, "0xc100")->flat == 30 && func(&g, "palloc")->cum == 30 &&
			func(&g, "mid")->cum == 181 && func(&g, "main")->cum == 208 && func(&g, "main")->flat == 0,
			"0xc100 flat %g, mid cum %g", func(&g, "0xc100")->flat, func(&g, "mid")->cum);
	T_CHECK("graph recursion counts once in cum", func(&g, "rec")->flat == 20 && func(&g, "rec")->cum == 20,
			"rec cum %g", func(&g, "rec")->cum);
	path = path_of(&g, "inl (inline)");
	T_CHECK("graph inlined functions come first", path && path->nframes == 3 &&
			strcmp(g.funcs[path->frames[1]].name, "other") == 0 && func(&g, "other")->cum == 7,
			"no inline path");
	T_CHECK("graph measures objects", (o.measure = HP_INUSE_OBJECTS, build(&o, false, &g), g.total == 7),
			"total %g", g.total);
	o.measure = HP_INUSE_SPACE;

	o.fold_names = fold_names;
	build(&o, false, &g);
	T_CHECK("graph fold false ignores the names", func(&g, "palloc")->cum == 30, "palloc cum %g",
			func(&g, "palloc")->cum);
	o.fold = true;
	build(&o, false, &g);
	T_CHECK("graph folds by name", !func(&g, "palloc")->seen && func(&g, "mid")->flat == 30 &&
			g.total == 208, "mid flat %g", func(&g, "mid")->flat);
	o.fold_names = NULL;
	build(&o, false, &g);
	T_CHECK("graph folds by the recorded start", !func(&g, "0xc100")->seen &&
			func(&g, "palloc")->flat == 30, "palloc flat %g", func(&g, "palloc")->flat);
	/* B5: the base folds with its own starts, so its palloc path subtracts */
	build(&o, true, &g);
	T_CHECK("graph folds a base with its own recorded starts", func(&g, "palloc")->flat == 20 &&
			!func(&g, "0xd100")->seen, "palloc flat %g", func(&g, "palloc")->flat);
	path = path_of(&g, "leaf");
	T_CHECK("graph subtracts a base per path", path && path->bytes == -49 && path->current == 151,
			"leaf path %g", path ? path->bytes : 0);
	o.drop_negative = true;
	build(&o, true, &g);
	path = path_of(&g, "leaf");
	T_CHECK("graph drop_negative", path && path->value == 0 && g.total == 20 + 20 + 7,
			"total %g", g.total);
	o = (hp_options) HP_OPTIONS_DEFAULT;

	o.focus = "rec";
	build(&o, false, &g);
	T_CHECK("graph focus", g.total == 208 && g.local_total == 20 && g.npaths == 1,
			"local %g, %zu paths", g.local_total, g.npaths);
	o.focus = NULL;
	o.ignore = "rec";
	build(&o, false, &g);
	T_CHECK("graph ignore", g.total == 208 && g.local_total == 188, "local %g", g.local_total);
	o.ignore = NULL;
	o.focus = "prog+0x4100";
	build(&o, false, &g);
	T_CHECK("graph focus matches object+offset", g.local_total == 7, "local %g", g.local_total);
	/* run-time addresses would give the layout away one hex digit at a time */
	o.focus = "0000000000005100";
	build(&o, false, &g);
	T_CHECK("graph focus never matches run-time addresses", g.local_total == 0,
			"local %g", g.local_total);
	o.focus = "5100";
	build(&o, false, &g);
	T_CHECK("graph focus never matches a run-time address's digits", g.local_total == 0,
			"local %g", g.local_total);
	o.focus = "inl";
	build(&o, false, &g);
	T_CHECK("graph focus matches inlined names", g.local_total == 7, "local %g", g.local_total);

	{
		/* a joined base (a window and what it freed) leaves the profile's graph as it is */
		hp_graph	alone;

		o = (hp_options) HP_OPTIONS_DEFAULT;
		o.fold = true;
		build(&o, false, &alone);
		o.join_base = true;
		build(&o, true, &g);
		path = path_of(&g, "leaf");
		T_CHECK("graph joined base keeps the profile's values", g.npaths == alone.npaths &&
				g.total == alone.total && g.local_total == alone.local_total && path &&
				path->bytes == path_of(&alone, "leaf")->bytes && path->current == 151 &&
				func(&g, "mid")->cum == func(&alone, "mid")->cum,
				"%zu paths, total %g", g.npaths, g.total);
		T_CHECK("graph joined base sums each path's base part", path && path->input[0] == 151 &&
				path->input[2] == 200 && path->input[3] == 1 && path_of(&g, "palloc") &&
				path_of(&g, "palloc")->bytes == 30 && path_of(&g, "palloc")->input[2] == 10,
				"leaf's base part %g", path ? path->input[2] : 0);
	}

	{
		/* two processes merged, one subtracted: the sums of pg_heapprof --merge */
		static const char *const f1[] = {"leaf", "mid", "main"};
		static const char *const f2[] = {"rec", "main"};
		const hp_named_stack s[] = {
			{f1, 3, false, 100, 1}, {f2, 2, false, 20, 2}, {f1, 3, false, 50, 1}, {f1, 3, true, 30, 1},
			{f2, 2, true, 25, 1}, {NULL, 0, false, 4, 1},
		};

		o = (hp_options) HP_OPTIONS_DEFAULT;
		hp_graph_from_stacks(&arena, s, 6, &o, &g);
		path = path_of(&g, "leaf");
		T_CHECK("graph from named stacks sums and subtracts per path", g.npaths == 3 && path &&
				path->bytes == 120 && path->current == 150 && g.total == 120 - 5 + 4 &&
				func(&g, "main")->cum == 115 && func(&g, "rec")->flat == -5,
				"%zu paths, total %g", g.npaths, g.total);
		o.drop_negative = true;
		hp_graph_from_stacks(&arena, s, 6, &o, &g);
		T_CHECK("graph from named stacks drop_negative", g.total == 124 && func(&g, "rec")->flat == 0,
				"total %g", g.total);
	}

	hp_arena_free(&arena);
	T_CHECK("graph frees what it took", env.allocs == 0, "%ld blocks live", env.allocs);
	return t_exit();
}
