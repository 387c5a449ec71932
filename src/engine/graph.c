/*
 * graph.c -- from located stacks to functions and paths (see graph.h).
 *
 * Each profile (the current one, and a base to subtract) comes with its own
 * located addresses; its stacks lose the allocator's frames (jemalloc's, and
 * folded ones, by name or by the profile's recorded fold starts), become
 * paths of function names and are added with sign +1 or -1.  Then the total
 * is taken, focus / ignore applied, and every path reduced to flat (its leaf
 * function) and cum (each function on it once).
 */
#include "graph.h"

#include <stdio.h>
#include <string.h>

/* Work units of one pattern match: a regular expression over a name. */
#define MATCH_WORK 64

/* State shared by the profiles that make one graph. */
typedef struct builder
{
	hp_arena   *a;
	hp_env	   *env;
	hp_graph   *g;
	const hp_options *o;
	hp_map		funcs;			/* name -> function index */
	size_t		funcs_cap;
	hp_map		paths;			/* function sequence -> path index */
	size_t		paths_cap;
} builder;

/* What one profile's located addresses are in the graph. */
typedef struct pc_table
{
	const hp_located *l;
	uint32_t   *first;			/* functions of pc i: funcs[first[i] .. first[i + 1]) */
	uint32_t   *funcs;
	bool	   *cut;			/* allocator or folded frame */
	uint8_t    *match;			/* 1: matches focus; 2: matches ignore */
} pc_table;

/* Function index of name (level k of sym), added (with a location) when new. */
static uint32_t
intern_func(builder *b, const char *name, const hp_symbol *sym, uint32_t k)
{
	hp_graph   *g = b->g;
	bool		added;
	size_t		f = hp_map_put(&b->funcs, name, strlen(name), &added);
	int			line;
	const char *file = hp_symbol_location(sym, k, &line);

	if (added)
	{
		HP_RESERVE(b->a, g->funcs, b->funcs_cap, f);
		g->funcs[f].name = name;
		g->funcs[f].object = sym->object;
		g->nfuncs = f + 1;
	}
	if (g->funcs[f].location == NULL && file)
	{
		char		buf[4096];

		snprintf(buf, sizeof(buf), "%s:%d", file, line);
		g->funcs[f].location = hp_strdup(b->a, buf);
	}
	return (uint32_t) f;
}

static bool
folded(const hp_options *o, const hp_profile *p, const hp_symbol *sym)
{
	size_t		lo = 0;
	size_t		hi = p->nfold_starts;

	if (!o->fold)
		return false;
	if (o->fold_names)
		for (const char *const *n = o->fold_names; *n; n++)
			if (strcmp(*n, sym->name) == 0)
				return true;
	while (sym->start && lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (p->fold_starts[mid] == sym->start)
			return true;
		if (p->fold_starts[mid] < sym->start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

static bool
match(builder *b, void *pattern, const char *s)
{
	hp_work(b->env, MATCH_WORK);
	return b->env->match(b->env->ctx, pattern, s);
}

/*
 * Does any identity of this frame match: its names, its file:line, or
 * "object+0xOFFSET", its place in its object?  Not its run-time address, as
 * jeprof's pc: a pattern answers whether some frame matches, so a role
 * allowed only reports would learn where the server's code is loaded
 * (ASLR) by extending a hex prefix one digit at a time.
 */
static bool
frame_matches(builder *b, void *pattern, const hp_symbol *sym)
{
	char		buf[4096];

	if (match(b, pattern, sym->name))
		return true;
	for (uint32_t k = 0; k < sym->ninlines; k++)
		if (match(b, pattern, sym->inlines[k]))
			return true;
	if (sym->object)
	{
		snprintf(buf, sizeof(buf), "%s+0x%llx", sym->object, (unsigned long long) sym->offset);
		if (match(b, pattern, buf))
			return true;
	}
	if (sym->file)
	{
		snprintf(buf, sizeof(buf), "%s:%d", sym->file, sym->line);
		return match(b, pattern, buf);
	}
	return false;
}

/* The functions, cut and match flags of every located address of p. */
static void
classify_pcs(builder *b, const hp_profile *p, const hp_located *l, pc_table *t)
{
	hp_arena   *a = b->a;
	const hp_options *o = b->o;
	bool		can_match = b->env->match != NULL;
	size_t		n = l->npcs;
	size_t		nout = 0;
	size_t		outcap = 0;

	t->l = l;
	t->funcs = NULL;
	t->first = hp_alloc(a, (n + 1) * sizeof(uint32_t));
	t->cut = hp_alloc(a, (n ? n : 1) * sizeof(bool));
	t->match = hp_alloc(a, (n ? n : 1) * sizeof(uint8_t));
	for (size_t i = 0; i < n; i++)
	{
		const hp_symbol *sym = &l->syms[i];

		hp_work(b->env, sym->ninlines + 1);
		t->first[i] = (uint32_t) nout;
		for (uint32_t k = 0; k <= sym->ninlines; k++)
		{
			const char *name = sym->name;

			if (k < sym->ninlines)
			{
				size_t		len = strlen(sym->inlines[k]);
				char	   *nm = hp_alloc(a, len + sizeof(HP_INLINE_SUFFIX));

				memcpy(nm, sym->inlines[k], len);
				memcpy(nm + len, HP_INLINE_SUFFIX, sizeof(HP_INLINE_SUFFIX));
				name = nm;
			}
			HP_RESERVE(a, t->funcs, outcap, nout);
			t->funcs[nout++] = intern_func(b, name, sym, k);
		}
		t->cut[i] = sym->allocator || folded(o, p, sym);
		if (o->focus && can_match && frame_matches(b, o->focus, sym))
			t->match[i] |= 1;
		if (o->ignore && can_match && frame_matches(b, o->ignore, sym))
			t->match[i] |= 2;
	}
	t->first[n] = (uint32_t) nout;
	/* without a source line, a function is located by its object */
	for (size_t i = 0; i < n; i++)
		for (uint32_t u = t->first[i]; u < t->first[i + 1]; u++)
			if (b->g->funcs[t->funcs[u]].location == NULL)
				b->g->funcs[t->funcs[u]].location = l->syms[i].object;
}

/* Index of a frame of p in its located table; p was located from these very stacks. */
static size_t
pc_index(builder *b, const pc_table *t, uint64_t pc)
{
	size_t		i = hp_located_index(t->l, pc);

	if (i == SIZE_MAX)
		hp_fail(b->env, HP_EFORMAT, "an address of the heap profile was not located");
	return i;
}

/*
 * Add p's stacks with the given sign: cut everything leafward of the
 * rootmost allocator or folded frame, expand the rest into functions and
 * sum by function sequence.
 */
static void
add_stacks(builder *b, const hp_profile *p, const pc_table *t, double sign)
{
	hp_arena   *a = b->a;
	hp_graph   *g = b->g;
	uint32_t   *seq = NULL;
	size_t		cap = 0;
	size_t	   *idx = NULL;
	size_t		idx_cap = 0;

	for (size_t i = 0; i < p->nsamples; i++)
	{
		const hp_sample *smp = &p->samples[i];
		size_t		keep = 0;
		size_t		n = 0;
		uint8_t		m = 0;
		size_t		k;
		bool		added;

		hp_work(b->env, smp->npcs + 1);
		if (smp->npcs > 0)
			HP_RESERVE(a, idx, idx_cap, smp->npcs - 1);
		for (uint32_t j = 0; j < smp->npcs; j++)
		{
			idx[j] = pc_index(b, t, smp->pcs[j]);
			if (t->cut[idx[j]])
				keep = j + 1;
		}
		for (uint32_t j = (uint32_t) keep; j < smp->npcs; j++)
		{
			size_t		pi = idx[j];

			m |= t->match[pi];
			if (HP_KERNEL_PC(smp->pcs[j]))
				continue;
			for (uint32_t u = t->first[pi]; u < t->first[pi + 1]; u++)
			{
				HP_RESERVE(a, seq, cap, n);
				seq[n++] = t->funcs[u];
			}
		}
		if (n > UINT32_MAX)
			hp_fail(b->env, HP_ELIMIT, "a stack of the heap profile has too many frames");
		k = hp_map_put(&b->paths, seq, n * sizeof(uint32_t), &added);
		if (added)
		{
			HP_RESERVE(a, g->paths, b->paths_cap, k);
			/* the map's copy of the key: never written, and one less per path */
			g->paths[k].frames = (uint32_t *) b->paths.keys[k].key;
			g->paths[k].nframes = (uint32_t) n;
			g->npaths = k + 1;
		}
		g->paths[k].match |= m;
		g->paths[k].bytes += sign * smp->bytes;
		g->paths[k].objs += sign * smp->objs;
		if (sign > 0)
			g->paths[k].current += b->o->measure == HP_INUSE_OBJECTS ? smp->objs : smp->bytes;
	}
}

/* flat to the leaf function, cum once to every function on the path */
static void
reduce(hp_arena *a, hp_graph *g)
{
	uint32_t   *stamp = hp_alloc(a, (g->nfuncs ? g->nfuncs : 1) * sizeof(uint32_t));

	g->local_total = 0;
	for (size_t k = 0; k < g->npaths; k++)
	{
		const hp_path *path = &g->paths[k];

		hp_work(a->env, path->nframes + 1);
		for (uint32_t j = 0; j < path->nframes; j++)
		{
			uint32_t	f = path->frames[j];

			if (stamp[f] == k + 1)
				continue;
			stamp[f] = (uint32_t) (k + 1);
			if (j == 0)
			{
				g->funcs[f].flat += path->value;
				g->local_total += path->value;
			}
			g->funcs[f].cum += path->value;
			g->funcs[f].seen = true;
		}
	}
}

/* With every stack added: drop_negative, the total, focus / ignore, flat and cum. */
static void
finish(hp_arena *a, const hp_options *o, hp_graph *g)
{
	size_t		kept = 0;

	for (size_t k = 0; k < g->npaths; k++)
	{
		hp_path    *path = &g->paths[k];

		hp_work(a->env, 1);
		if (o->drop_negative && path->bytes < 0)
			path->bytes = 0;
		if (o->drop_negative && path->objs < 0)
			path->objs = 0;
		path->value = o->measure == HP_INUSE_OBJECTS ? path->objs : path->bytes;
		g->total += path->value;
	}
	for (size_t k = 0; k < g->npaths; k++)
	{
		const hp_path *path = &g->paths[k];

		if ((o->focus && !(path->match & 1)) || (o->ignore && (path->match & 2)))
			continue;
		g->paths[kept++] = *path;
	}
	g->npaths = kept;
	reduce(a, g);
}

void
hp_build_graph(hp_arena *a, const hp_profile *p, const hp_located *pl,
			   const hp_profile *base, const hp_located *bl,
			   const hp_options *o, hp_graph *g)
{
	builder		b;
	pc_table	cur;
	pc_table	old;

	memset(g, 0, sizeof(*g));
	memset(&b, 0, sizeof(b));
	b.a = a;
	b.env = a->env;
	b.g = g;
	b.o = o;
	if (p->nsamples > UINT32_MAX - 1 || (base && base->nsamples > UINT32_MAX - 1))
		hp_fail(a->env, HP_ELIMIT, "too many stacks in the heap profile");
	hp_map_init(&b.funcs, a);
	hp_map_init(&b.paths, a);

	/* the current profile first: its functions and paths come first */
	classify_pcs(&b, p, pl, &cur);
	add_stacks(&b, p, &cur, 1);
	g->pc_first = cur.first;
	g->pc_funcs = cur.funcs;
	if (base)
	{
		classify_pcs(&b, base, bl, &old);
		add_stacks(&b, base, &old, -1);
	}

	finish(a, o, g);
}

void
hp_graph_from_stacks(hp_arena *a, const hp_named_stack *s, size_t n,
					 const hp_options *o, hp_graph *g)
{
	builder		b;
	hp_symbol	nosym;
	uint32_t   *seq = NULL;
	size_t		cap = 0;

	memset(g, 0, sizeof(*g));
	memset(&b, 0, sizeof(b));
	memset(&nosym, 0, sizeof(nosym));
	b.a = a;
	b.env = a->env;
	b.g = g;
	b.o = o;
	if (n > UINT32_MAX - 1)
		hp_fail(a->env, HP_ELIMIT, "too many stacks to merge");
	hp_map_init(&b.funcs, a);
	hp_map_init(&b.paths, a);
	for (size_t i = 0; i < n; i++)
	{
		double		sign = s[i].base ? -1 : 1;
		bool		added;
		size_t		k;

		hp_work(a->env, s[i].nframes + 1);
		if (s[i].nframes)
			HP_RESERVE(a, seq, cap, s[i].nframes - 1);
		for (uint32_t j = 0; j < s[i].nframes; j++)
			seq[j] = intern_func(&b, s[i].frames[j], &nosym, 0);
		k = hp_map_put(&b.paths, seq, s[i].nframes * sizeof(uint32_t), &added);
		if (added)
		{
			HP_RESERVE(a, g->paths, b.paths_cap, k);
			g->paths[k].frames = hp_alloc(a, (s[i].nframes + 1) * sizeof(uint32_t));
			if (s[i].nframes)
				memcpy(g->paths[k].frames, seq, s[i].nframes * sizeof(uint32_t));
			g->paths[k].nframes = s[i].nframes;
			g->npaths = k + 1;
		}
		g->paths[k].bytes += sign * s[i].bytes;
		g->paths[k].objs += sign * s[i].objs;
		if (!s[i].base)
			g->paths[k].current += o->measure == HP_INUSE_OBJECTS ? s[i].objs : s[i].bytes;
	}
	finish(a, o, g);
}
