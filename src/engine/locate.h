/*
 * locate.h -- the symbolization stage: a profile's distinct addresses and
 * what each one is.
 *
 * The graph consumes located addresses, never the symbolizer: symbolizing is
 * one stage of its own, with its own failures (maps that cannot be loaded
 * end the analysis), run once per profile against that profile's own maps
 * and recorded identity.
 */
#ifndef HEAPPROF_LOCATE_H
#define HEAPPROF_LOCATE_H

#include "profile.h"
#include "symbolize.h"

/* One slot of the address index: the address itself, so a probe is one memory access. */
typedef struct hp_pc_slot
{
	uint64_t	pc;
	uint32_t	i;				/* pcs[i - 1]; 0: empty */
} hp_pc_slot;

typedef struct hp_located
{
	uint64_t   *pcs;			/* distinct addresses, in order of first appearance */
	hp_symbol  *syms;			/* syms[i] names pcs[i] */
	size_t		npcs;
	size_t		cap;			/* of pcs */
	hp_pc_slot *slots;			/* address -> i: open addressing, a power of two of them */
	size_t		nslots;
} hp_located;

/*
 * Point s at p's maps and recorded identity, then symbolize every distinct
 * address of p's stacks into out (arena memory).  A symbolizer that fails is
 * raised through a->env.
 */
extern void hp_symbolize_profile(hp_arena *a, hp_symbolizer *s, const hp_profile *p,
								 hp_located *out);

/* Add pc to l's addresses (arena memory): its index, and whether it is new (added may be NULL). */
extern size_t hp_located_add(hp_arena *a, hp_located *l, uint64_t pc, bool *added);

/* Index of pc in l, or SIZE_MAX. */
extern size_t hp_located_index(const hp_located *l, uint64_t pc);

#endif
