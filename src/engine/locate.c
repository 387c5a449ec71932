/*
 * locate.c -- symbolize a profile: every distinct address, once (locate.h).
 */
#include "locate.h"

#include <stdlib.h>
#include <string.h>

/* Work units of one symbolized address: interrupts are polled every 256. */
#define ADDRESS_WORK (HP_WORK_QUANTUM / 256)

static int
u64_cmp(const void *x, const void *y)
{
	uint64_t	a = *(const uint64_t *) x;
	uint64_t	b = *(const uint64_t *) y;

	return (a > b) - (a < b);
}

void
hp_symbolize_profile(hp_arena *a, hp_symbolizer *s, const hp_profile *p, hp_located *out)
{
	hp_env	   *env = a->env;
	hp_status	rc;
	bool	   *caller = NULL;	/* caller[i]: pcs[i] is some stack's caller frame */
	size_t		cap = 0;
	uint64_t   *calls;
	size_t		ncalls = 0;

	memset(out, 0, sizeof(*out));
	hp_map_init(&out->index, a);
	for (size_t i = 0; i < p->nsamples; i++)
	{
		const hp_sample *smp = &p->samples[i];

		hp_work(env, smp->npcs + 1);
		for (uint32_t j = 0; j < smp->npcs; j++)
		{
			bool		added;
			size_t		k = hp_map_put(&out->index, &smp->pcs[j], sizeof(uint64_t), &added);

			if (added)
			{
				HP_RESERVE(a, caller, cap, k);
				caller[k] = false;
			}
			caller[k] |= j > 0;
		}
	}
	out->npcs = out->index.count;
	out->pcs = hp_alloc(a, (out->npcs ? out->npcs : 1) * sizeof(uint64_t));
	out->syms = hp_alloc(a, (out->npcs ? out->npcs : 1) * sizeof(hp_symbol));
	calls = hp_alloc(a, (out->npcs ? out->npcs : 1) * sizeof(uint64_t));
	for (size_t i = 0; i < out->npcs; i++)
	{
		memcpy(&out->pcs[i], out->index.keys[i].key, sizeof(uint64_t));
		if (caller[i])
			calls[ncalls++] = out->pcs[i];
	}
	/* sorted: the identity checks look up a module's range */
	hp_work(env, ncalls);
	qsort(calls, ncalls, sizeof(uint64_t), u64_cmp);

	/* only the files the stacks use become modules */
	rc = hp_symbolizer_sync(s, a, p->maps, p->maps_len, out->pcs, out->npcs);
	if (rc != HP_OK)
		hp_fail(env, rc, "could not load the memory map of the heap profile%s",
				rc == HP_ENOMEM ? ": out of memory" : "");

	/* the caller frames are evidence of which code the process ran */
	rc = hp_symbolizer_expect(s, p->ids, p->nids, p->allocator_base, calls, ncalls);
	if (rc != HP_OK)
		hp_fail(env, rc, "could not take the build-ids of the heap profile%s",
				rc == HP_ENOMEM ? ": out of memory" : "");
	for (size_t i = 0; i < out->npcs; i++)
	{
		hp_work(env, ADDRESS_WORK);
		hp_symbolize(s, out->pcs[i], a, &out->syms[i]);
	}
}

size_t
hp_located_index(const hp_located *l, uint64_t pc)
{
	return hp_map_get(&l->index, &pc, sizeof(pc));
}
