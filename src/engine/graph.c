/*
 * graph.c -- from samples to functions and paths (see graph.h).
 *
 * Each profile (the current one, and a base to subtract) is symbolized with
 * its own maps; its stacks lose the allocator's frames (jemalloc's, and
 * folded ones), become paths of function names and are added with sign +1
 * or -1.  Then the total is taken, focus / ignore applied, and every path
 * reduced to flat (its leaf function) and cum (each function on it once).
 */
#include "graph.h"

#include <stdio.h>
#include <string.h>

const char *const hp_postgres_allocator[] = {
	"palloc", "palloc0", "palloc_extended", "repalloc", "repalloc_extended", "repalloc_huge",
	"MemoryContextAlloc", "MemoryContextAllocZero", "MemoryContextAllocZeroAligned",
	"MemoryContextAllocExtended", "MemoryContextAllocHuge", "MemoryContextStrdup",
	"pstrdup", "pnstrdup", "psprintf", "pvsnprintf",
	"MemoryContextCreate", "AllocSetContextCreateInternal",
	"GenerationContextCreate", "SlabContextCreate",
	NULL
};

/* State shared by the profiles that make one graph. */
typedef struct builder
{
	hp_arena   *a;
	hp_graph   *g;
	const hp_options *o;
	hp_map		funcs;			/* name -> function index */
	size_t		funcs_cap;
	hp_map		paths;			/* function sequence -> path index */
	size_t		paths_cap;
} builder;

/* One profile's distinct addresses and what they are. */
typedef struct pc_table
{
	hp_map		map;			/* address -> index */
	hp_symbol  *syms;
	uint32_t   *first;			/* functions of pc i: funcs[first[i] .. first[i + 1]) */
	uint32_t   *funcs;
	bool	   *cut;			/* allocator or folded frame */
	uint8_t    *match;			/* 1: matches focus; 2: matches ignore */
} pc_table;

static void
poll_interrupt(const hp_options *o, size_t i)
{
	if (o->interrupt && (i & 255) == 0)
		o->interrupt();
}

/* Function index of name, added (with a location) when new. */
static uint32_t
intern_func(builder *b, const char *name, const hp_symbol *sym)
{
	hp_graph   *g = b->g;
	bool		added;
	size_t		f = hp_map_put(&b->funcs, name, strlen(name), &added);

	if (added)
	{
		HP_RESERVE(b->a, g->funcs, b->funcs_cap, f);
		g->funcs[f].name = name;
		g->funcs[f].object = sym->object;
		g->nfuncs = f + 1;
	}
	if (g->funcs[f].location == NULL && sym->file)
	{
		char		buf[4096];

		snprintf(buf, sizeof(buf), "%s:%d", sym->file, sym->line);
		g->funcs[f].location = hp_strdup(b->a, buf);
	}
	return (uint32_t) f;
}

static bool
folded(const hp_options *o, const hp_symbol *sym)
{
	size_t		lo = 0;
	size_t		hi = o->nfold_starts;

	if (o->fold_names)
		for (const char *const *n = o->fold_names; *n; n++)
			if (strcmp(*n, sym->name) == 0)
				return true;
	while (sym->start && lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (o->fold_starts[mid] == sym->start)
			return true;
		if (o->fold_starts[mid] < sym->start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* Does any identity of this frame match?  jeprof tests pc, names and file:line. */
static bool
frame_matches(const hp_options *o, void *pattern, uint64_t pc, const hp_symbol *sym)
{
	char		buf[32];
	char		fileline[4096];

	snprintf(buf, sizeof(buf), "%016llx", (unsigned long long) pc);
	if (o->match(pattern, buf) || o->match(pattern, sym->name))
		return true;
	for (uint32_t k = 0; k < sym->ninlines; k++)
		if (o->match(pattern, sym->inlines[k]))
			return true;
	if (sym->file)
	{
		snprintf(fileline, sizeof(fileline), "%s:%d", sym->file, sym->line);
		return o->match(pattern, fileline);
	}
	return false;
}

/* Name every distinct address of p, with its functions, cut and match flags. */
static void
symbolize_pcs(builder *b, const hp_profile *p, hp_symbolizer *s, pc_table *t)
{
	hp_arena   *a = b->a;
	const hp_options *o = b->o;
	size_t		n;
	size_t		nout = 0;
	size_t		outcap = 0;

	hp_map_init(&t->map, a);
	for (size_t i = 0; i < p->nsamples; i++)
		for (uint32_t j = 0; j < p->samples[i].npcs; j++)
			hp_map_put(&t->map, &p->samples[i].pcs[j], sizeof(uint64_t), NULL);
	n = t->map.count;
	t->syms = hp_alloc(a, (n ? n : 1) * sizeof(*t->syms));
	t->first = hp_alloc(a, (n + 1) * sizeof(uint32_t));
	t->cut = hp_alloc(a, (n ? n : 1) * sizeof(bool));
	t->match = hp_alloc(a, (n ? n : 1) * sizeof(uint8_t));
	for (size_t i = 0; i < n; i++)
	{
		hp_symbol  *sym = &t->syms[i];
		uint64_t	pc;

		memcpy(&pc, t->map.keys[i].key, sizeof(pc));
		poll_interrupt(o, i);
		hp_symbolize(s, pc, a, sym);
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
			t->funcs[nout++] = intern_func(b, name, sym);
		}
		t->cut[i] = sym->allocator || folded(o, sym);
		if (o->focus && o->match && frame_matches(o, o->focus, pc, sym))
			t->match[i] |= 1;
		if (o->ignore && o->match && frame_matches(o, o->ignore, pc, sym))
			t->match[i] |= 2;
	}
	t->first[n] = (uint32_t) nout;
	/* without a source line, a function is located by its object */
	for (size_t i = 0; i < n; i++)
		for (uint32_t u = t->first[i]; u < t->first[i + 1]; u++)
			if (b->g->funcs[t->funcs[u]].location == NULL)
				b->g->funcs[t->funcs[u]].location = t->syms[i].object;
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

	for (size_t i = 0; i < p->nsamples; i++)
	{
		const hp_sample *smp = &p->samples[i];
		size_t		keep = 0;
		size_t		n = 0;
		uint8_t		match = 0;
		size_t		k;
		bool		added;

		poll_interrupt(b->o, i);
		for (uint32_t j = 0; j < smp->npcs; j++)
			if (t->cut[hp_map_get(&t->map, &smp->pcs[j], sizeof(uint64_t))])
				keep = j + 1;
		for (uint32_t j = (uint32_t) keep; j < smp->npcs; j++)
		{
			size_t		pi = hp_map_get(&t->map, &smp->pcs[j], sizeof(uint64_t));

			match |= t->match[pi];
			if (HP_KERNEL_PC(smp->pcs[j]))
				continue;
			for (uint32_t u = t->first[pi]; u < t->first[pi + 1]; u++)
			{
				HP_RESERVE(a, seq, cap, n);
				seq[n++] = t->funcs[u];
			}
		}
		if (n > UINT32_MAX)
			longjmp(a->oom, 1);
		k = hp_map_put(&b->paths, seq, n * sizeof(uint32_t), &added);
		if (added)
		{
			HP_RESERVE(a, g->paths, b->paths_cap, k);
			g->paths[k].frames = hp_alloc(a, (n + 1) * sizeof(uint32_t));
			if (n)				/* seq is NULL for a path with no frame left */
				memcpy(g->paths[k].frames, seq, n * sizeof(uint32_t));
			g->paths[k].nframes = (uint32_t) n;
			g->npaths = k + 1;
		}
		g->paths[k].match |= match;
		g->paths[k].bytes += sign * smp->bytes;
		g->paths[k].objs += sign * smp->objs;
		if (sign > 0)
			g->paths[k].current += b->o->measure == HP_INUSE_OBJECTS ? smp->objs : smp->bytes;
	}
}

/* Symbolize p with its own maps and add its stacks. */
static void
add_profile(builder *b, const hp_profile *p, hp_symbolizer *s, double sign, pc_table *t)
{
	hp_symbolizer_sync(s, p->maps, p->maps_len);
	hp_symbolizer_expect(s, p->ids, p->nids, p->allocator_base);
	symbolize_pcs(b, p, s, t);
	add_stacks(b, p, t, sign);
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

hp_status
hp_build_graph(hp_arena *a, const hp_profile *p, const hp_profile *base,
			   hp_symbolizer *s, const hp_options *o, hp_graph *g,
			   char *err, size_t errlen)
{
	builder		b;
	pc_table	cur;
	pc_table	old;
	size_t		kept = 0;

	memset(g, 0, sizeof(*g));
	memset(&b, 0, sizeof(b));
	b.a = a;
	b.g = g;
	b.o = o;
	if (p->nsamples > UINT32_MAX - 1 || (base && base->nsamples > UINT32_MAX - 1))
	{
		snprintf(err, errlen, "too many stacks in the heap profile");
		return HP_EFORMAT;
	}
	hp_map_init(&b.funcs, a);
	hp_map_init(&b.paths, a);

	/* the current profile first: its modules get the identity checks */
	add_profile(&b, p, s, 1, &cur);
	g->npcs = cur.map.count;
	g->pcs = hp_alloc(a, (g->npcs ? g->npcs : 1) * sizeof(uint64_t));
	for (size_t i = 0; i < g->npcs; i++)
		memcpy(&g->pcs[i], cur.map.keys[i].key, sizeof(uint64_t));
	g->syms = cur.syms;
	g->pc_first = cur.first;
	g->pc_funcs = cur.funcs;
	if (base)
		add_profile(&b, base, s, -1, &old);

	for (size_t k = 0; k < g->npaths; k++)
	{
		hp_path    *path = &g->paths[k];

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
	return HP_OK;
}
