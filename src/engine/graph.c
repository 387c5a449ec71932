/*
 * graph.c -- from samples to functions and paths (see graph.h).
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

static size_t
intern_pc(hp_map *m, uint64_t pc)
{
	return hp_map_put(m, &pc, sizeof(pc), NULL);
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

/* Per distinct pc: 1 = focus matches, 2 = ignore matches. */
static uint8_t *
match_flags(hp_arena *a, const hp_graph *g, const hp_options *o)
{
	uint8_t    *flags = hp_alloc(a, g->npcs ? g->npcs : 1);

	for (size_t i = 0; i < g->npcs; i++)
	{
		if (o->focus && frame_matches(o, o->focus, g->pcs[i], &g->syms[i]))
			flags[i] |= 1;
		if (o->ignore && frame_matches(o, o->ignore, g->pcs[i], &g->syms[i]))
			flags[i] |= 2;
	}
	return flags;
}

static void
poll_interrupt(const hp_options *o, size_t i)
{
	if (o->interrupt && (i & 255) == 0)
		o->interrupt();
}

/* Function index of name, added (with location) when new. */
static uint32_t
intern_func(hp_arena *a, hp_map *funcs, size_t *cap, hp_graph *g,
			const char *name, const hp_symbol *sym)
{
	bool		added;
	size_t		f = hp_map_put(funcs, name, strlen(name), &added);

	if (added)
	{
		HP_RESERVE(a, g->funcs, *cap, f);
		g->funcs[f].name = name;
		g->nfuncs = f + 1;
	}
	if (g->funcs[f].location == NULL && sym->file)
	{
		char		buf[4096];

		snprintf(buf, sizeof(buf), "%s:%d", sym->file, sym->line);
		g->funcs[f].location = hp_strdup(a, buf);
	}
	return (uint32_t) f;
}

static void
symbolize_all(hp_arena *a, hp_symbolizer *s, const hp_options *o, hp_graph *g)
{
	hp_map		funcs;
	size_t		cap = 0;
	size_t		nout = 0;
	size_t		outcap = 0;

	g->syms = hp_alloc(a, (g->npcs ? g->npcs : 1) * sizeof(*g->syms));
	g->pc_first = hp_alloc(a, (g->npcs + 1) * sizeof(uint32_t));
	hp_map_init(&funcs, a);
	for (size_t i = 0; i < g->npcs; i++)
	{
		hp_symbol  *sym = &g->syms[i];

		poll_interrupt(o, i);
		hp_symbolize(s, g->pcs[i], a, sym);
		g->pc_first[i] = (uint32_t) nout;
		for (uint32_t k = 0; k <= sym->ninlines; k++)
		{
			const char *name = sym->name;

			if (k < sym->ninlines)
			{
				size_t		len = strlen(sym->inlines[k]);
				char	   *n = hp_alloc(a, len + sizeof(HP_INLINE_SUFFIX));

				memcpy(n, sym->inlines[k], len);
				memcpy(n + len, HP_INLINE_SUFFIX, sizeof(HP_INLINE_SUFFIX));
				name = n;
			}
			HP_RESERVE(a, g->pc_funcs, outcap, nout);
			g->pc_funcs[nout++] = intern_func(a, &funcs, &cap, g, name, sym);
		}
	}
	g->pc_first[g->npcs] = (uint32_t) nout;
	/* without a source line, a function is located by its object */
	for (size_t i = 0; i < g->npcs; i++)
		for (uint32_t u = g->pc_first[i]; u < g->pc_first[i + 1]; u++)
			if (g->funcs[g->pc_funcs[u]].location == NULL)
				g->funcs[g->pc_funcs[u]].location = g->syms[i].object;
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

/* Cut the allocator's frames and merge stacks that become identical. */
static void
build_paths(hp_arena *a, const hp_profile *p, hp_map *pcmap, hp_graph *g,
			const hp_options *o)
{
	hp_map		paths;
	size_t		cap = 0;
	uint32_t   *frames = NULL;
	size_t		fcap = 0;

	hp_map_init(&paths, a);
	for (size_t i = 0; i < p->nsamples; i++)
	{
		const hp_sample *smp = &p->samples[i];
		size_t		keep = 0;
		size_t		n = 0;
		size_t		k;
		bool		added;

		poll_interrupt(o, i);
		for (size_t j = 0; j < smp->npcs; j++)
		{
			size_t		pi = hp_map_get(pcmap, &smp->pcs[j], sizeof(uint64_t));

			HP_RESERVE(a, frames, fcap, n);
			frames[n++] = (uint32_t) pi;
			/* the rootmost allocator (or folded) frame ends the allocator's part */
			if (g->pc_cut[pi])
				keep = j + 1;
		}
		k = hp_map_put(&paths, frames + keep, (n - keep) * sizeof(uint32_t), &added);
		if (added)
		{
			HP_RESERVE(a, g->paths, cap, k);
			g->paths[k].frames = hp_alloc(a, (n - keep + 1) * sizeof(uint32_t));
			memcpy(g->paths[k].frames, frames + keep, (n - keep) * sizeof(uint32_t));
			g->paths[k].nframes = (uint32_t) (n - keep);
			g->npaths = k + 1;
		}
		g->paths[k].bytes += smp->bytes;
		g->paths[k].objs += smp->objs;
	}
	for (size_t k = 0; k < g->npaths; k++)
		g->paths[k].value = o->measure == HP_INUSE_OBJECTS ? g->paths[k].objs : g->paths[k].bytes;
}

static void
filter_paths(hp_graph *g, const uint8_t *flags, bool focus, bool ignore)
{
	size_t		kept = 0;

	for (size_t k = 0; k < g->npaths; k++)
	{
		const hp_path *path = &g->paths[k];
		bool		focused = !focus;
		bool		ignored = false;

		for (uint32_t j = 0; j < path->nframes; j++)
		{
			focused |= (flags[path->frames[j]] & 1) != 0;
			ignored |= (flags[path->frames[j]] & 2) != 0;
		}
		if (focused && !ignored)
			g->paths[kept++] = *path;
	}
	g->npaths = kept;
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
		bool		first = true;

		for (uint32_t j = 0; j < path->nframes; j++)
		{
			uint32_t	pi = path->frames[j];

			if (HP_KERNEL_PC(g->pcs[pi]))
				continue;
			for (uint32_t u = g->pc_first[pi]; u < g->pc_first[pi + 1]; u++)
			{
				uint32_t	f = g->pc_funcs[u];

				if (stamp[f] == k + 1)
					continue;
				stamp[f] = (uint32_t) (k + 1);
				if (first)
				{
					g->funcs[f].flat += path->value;
					g->local_total += path->value;
					first = false;
				}
				g->funcs[f].cum += path->value;
				g->funcs[f].seen = true;
			}
		}
	}
}

hp_status
hp_build_graph(hp_arena *a, const hp_profile *p, hp_symbolizer *s,
			   const hp_options *o, hp_graph *g, char *err, size_t errlen)
{
	hp_map		pcmap;

	memset(g, 0, sizeof(*g));
	if (p->nsamples > UINT32_MAX - 1)
	{
		snprintf(err, errlen, "too many stacks in the heap profile");
		return HP_EFORMAT;
	}
	hp_map_init(&pcmap, a);
	for (size_t i = 0; i < p->nsamples; i++)
	{
		g->total += o->measure == HP_INUSE_OBJECTS ? p->samples[i].objs : p->samples[i].bytes;
		for (uint32_t j = 0; j < p->samples[i].npcs; j++)
			intern_pc(&pcmap, p->samples[i].pcs[j]);
	}
	g->npcs = pcmap.count;
	g->pcs = hp_alloc(a, (g->npcs ? g->npcs : 1) * sizeof(uint64_t));
	for (size_t i = 0; i < g->npcs; i++)
		memcpy(&g->pcs[i], pcmap.keys[i].key, sizeof(uint64_t));

	symbolize_all(a, s, o, g);
	g->pc_cut = hp_alloc(a, (g->npcs ? g->npcs : 1) * sizeof(bool));
	for (size_t i = 0; i < g->npcs; i++)
		g->pc_cut[i] = g->syms[i].allocator || folded(o, &g->syms[i]);
	build_paths(a, p, &pcmap, g, o);
	if ((o->focus || o->ignore) && o->match)
		filter_paths(g, match_flags(a, g, o), o->focus != NULL, o->ignore != NULL);
	reduce(a, g);
	return HP_OK;
}
