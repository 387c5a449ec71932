/*
 * combine.c -- stacks of several inputs combined by identity (see combine.h).
 *
 * Functions are interned by name and paths by their function sequence in
 * the arena's hash maps, so combining n stacks of f frames in all is linear
 * in f.  Sums are taken in the order stacks are added: a weighted sum and
 * each input's own, so that a side of a diff or join is exact, not the
 * difference of two rounded sums.
 */
#include "combine.h"

#include <string.h>

void
hp_combine_init(hp_combiner *c, hp_arena *a, const double *weights, uint32_t ninputs,
				hp_graph *g)
{
	memset(c, 0, sizeof(*c));
	memset(g, 0, sizeof(*g));
	if (ninputs == 0 || ninputs > HP_MAX_INPUTS)
		hp_fail(a->env, HP_ELIMIT, "%u inputs to combine, not 1 to %d", ninputs, HP_MAX_INPUTS);
	c->a = a;
	c->g = g;
	memcpy(c->weights, weights, ninputs * sizeof(double));
	c->ninputs = ninputs;
	hp_map_init(&c->funcs, a);
	hp_map_init(&c->paths, a);
}

uint32_t
hp_combine_func(hp_combiner *c, const char *name, bool *added)
{
	hp_graph   *g = c->g;
	bool		is_new;
	size_t		f = hp_map_put(&c->funcs, name, strlen(name), &is_new);

	if (is_new)
	{
		HP_RESERVE(c->a, g->funcs, c->funcs_cap, f);
		g->funcs[f].name = name;
		g->nfuncs = f + 1;
	}
	if (added)
		*added = is_new;
	return (uint32_t) f;
}

void
hp_combine_stack(hp_combiner *c, uint32_t i, const uint32_t *funcs, size_t n,
				 uint8_t match, double bytes, double objs)
{
	hp_combine_labelled(c, i, funcs, n, match, bytes, objs, NULL);
}

void
hp_combine_labelled(hp_combiner *c, uint32_t i, const uint32_t *funcs, size_t n,
					uint8_t match, double bytes, double objs, const hp_sample *labels)
{
	hp_arena   *a = c->a;
	hp_graph   *g = c->g;
	hp_path    *path;
	uint32_t	tail[4] = {0};	/* the labels end the key */
	bool		added;
	size_t		k;

	hp_work(a->env, n + 1);
	if (i >= c->ninputs)
		hp_fail(a->env, HP_ELIMIT, "input %u of %u inputs to combine", i, c->ninputs);
	if (n > UINT32_MAX)
		hp_fail(a->env, HP_ELIMIT, "a stack of the heap profile has too many frames");
	if (labels)
	{
		tail[0] = labels->labels;
		tail[1] = labels->labels & HP_HAS_CONTEXT ? labels->context : 0;
		tail[2] = labels->labels & HP_HAS_QUERY ? (uint32_t) (labels->queryid >> 32) : 0;
		tail[3] = labels->labels & HP_HAS_QUERY ? (uint32_t) labels->queryid : 0;
	}
	HP_RESERVE(a, c->key, c->key_cap, n + 3);
	if (n)						/* funcs may be NULL for a path with no frame */
		memcpy(c->key, funcs, n * sizeof(uint32_t));
	memcpy(c->key + n, tail, sizeof(tail));
	k = hp_map_put(&c->paths, c->key, (n + 4) * sizeof(uint32_t), &added);
	if (added)
	{
		HP_RESERVE(a, g->paths, c->paths_cap, k);
		path = &g->paths[k];
		/* the map's copy of the key, whose frames come first: never written */
		path->frames = (uint32_t *) c->paths.keys[k].key;
		path->nframes = (uint32_t) n;
		path->labels = (uint8_t) tail[0];
		path->context = tail[1];
		path->queryid = (uint64_t) tail[2] << 32 | tail[3];
		if (c->ninputs > 1)
			path->input = hp_alloc(a, 2 * c->ninputs * sizeof(double));
		g->npaths = k + 1;
	}
	path = &g->paths[k];
	path->match |= match;
	path->bytes += c->weights[i] * bytes;
	path->objs += c->weights[i] * objs;
	if (path->input)
	{
		path->input[2 * i] += bytes;
		path->input[2 * i + 1] += objs;
	}
}
