/*
 * combine.h -- stacks of several inputs combined by identity.
 *
 * The one place heapprof adds stacks up, pprof's Merge with a signed weight
 * per input: stacks with the same functions (interned by name, leaf first)
 * are one path, whose bytes and objects are the sum over the inputs of
 * weight times the input's own.  With several inputs, each path also keeps
 * every input's own sums, unweighted.  So:
 *  - a diff is a profile (weight 1) minus a base (-1), per symbolized stack,
 *    so that a base from another process, with other addresses, compares;
 *  - pg_heapprof --merge is the processes (1) minus the base processes (-1);
 *  - a window of allocations joins what was freed by its end (0): the
 *    window's values are unchanged, and each path knows its freed part.
 * graph.c builds every graph through it, then filters and reduces the paths.
 */
#ifndef HEAPPROF_COMBINE_H
#define HEAPPROF_COMBINE_H

#include "graph.h"

/* Inputs of one combination, at most: a weight each, two sums a path. */
#define HP_MAX_INPUTS 16

typedef struct hp_combiner
{
	hp_arena   *a;
	hp_graph   *g;				/* funcs and paths are built here */
	double		weights[HP_MAX_INPUTS];
	uint32_t	ninputs;
	hp_map		funcs;			/* name -> function index */
	size_t		funcs_cap;
	hp_map		paths;			/* function sequence and labels -> path index */
	size_t		paths_cap;
	uint32_t   *key;			/* the key being looked up */
	size_t		key_cap;
} hp_combiner;

/* Start an empty g that ninputs inputs, input i weighted weights[i], add to. */
extern void hp_combine_init(hp_combiner *c, hp_arena *a, const double *weights,
							uint32_t ninputs, hp_graph *g);

/*
 * Index of the function named name in g->funcs, added (name only) when new:
 * then *added is set, if not NULL.  name must live as long as g.
 */
extern uint32_t hp_combine_func(hp_combiner *c, const char *name, bool *added);

/*
 * Add a stack of input i: its n functions (indexes from hp_combine_func,
 * leaf first), the focus / ignore flags of its frames, its values.
 */
extern void hp_combine_stack(hp_combiner *c, uint32_t i, const uint32_t *funcs, size_t n,
							 uint8_t match, double bytes, double objs);

/*
 * The same, for a sample with labels (profile.h; NULL: none): the same
 * functions under two statements or contexts are two paths.
 */
extern void hp_combine_labelled(hp_combiner *c, uint32_t i, const uint32_t *funcs, size_t n,
								uint8_t match, double bytes, double objs, const hp_sample *labels);

#endif
