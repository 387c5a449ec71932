/*
 * locate.c -- symbolize a profile: every distinct address, once (locate.h).
 */
#include "locate.h"

#include "maps.h"

#include <stdio.h>
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

/* An address outside every module, and its index in the located table. */
typedef struct unmapped
{
	uint64_t	pc;
	size_t		i;
} unmapped;

static int
cmp_unmapped(const void *x, const void *y)
{
	uint64_t	a = ((const unmapped *) x)->pc;
	uint64_t	b = ((const unmapped *) y)->pc;

	return a < b ? -1 : a > b;
}

/*
 * The first index from k on that no mapping labelled yet: next[k] == k for
 * those, and the chains of labelled ones are shortened as they are walked.
 */
static size_t
next_unlabelled(size_t *next, size_t k)
{
	size_t		r = k;

	while (next[r] != r)
		r = next[r];
	while (next[k] != r)
	{
		size_t		t = next[k];

		next[k] = r;
		k = t;
	}
	return r;
}

/*
 * The label of mapping m: a file's name, or its own "[vdso]"-like name, or
 * "[anon]"; *base is what pc's offset counts from (a file: its offset 0).
 */
static void
mapping_name(const hp_mapping *m, char *name, size_t size, uint64_t *base)
{
	const char *end = m->line + m->linelen;
	const char *p = end;

	*base = m->start;
	if (m->path)
	{
		p = m->path + m->pathlen;
		while (p > m->path && p[-1] != '/')
			p--;
		snprintf(name, size, "%.*s", (int) (m->path + m->pathlen - p), p);
		*base = m->start - m->offset;
		return;
	}
	while (p > m->line && p[-1] != ' ')
		p--;
	/* "[vdso]", "[anon:NAME]": letters, digits and "_.:-" only */
	if (end - p >= 3 && end - p < 48 && *p == '[' && end[-1] == ']' &&
		strspn(p + 1, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:-") >=
		(size_t) (end - p - 2))
		snprintf(name, size, "%.*s", (int) (end - p), p);
	else
		snprintf(name, size, "[anon]");
}

/*
 * Name code outside every module (JIT code, the vDSO) by its place in the
 * mapping that holds it, "[anon]+0x1a0": its address would tell whoever
 * reads a report where the process's memory is (ASLR).  The symbolizer
 * labelled it "[unmapped]", which stays for an address in no mapping.
 */
static void
label_unmapped(hp_arena *a, const hp_profile *p, hp_located *out)
{
	unmapped   *u = NULL;
	size_t	   *next;
	size_t		n = 0;
	size_t		cap = 0;
	const char *line = p->maps;
	hp_mapping	m;
	char		name[256];
	char		label[300];

	/* no maps: nothing to name them by (and no pointer arithmetic on NULL) */
	if (p->maps == NULL)
		return;
	for (size_t i = 0; i < out->npcs; i++)
		if (out->syms[i].object == NULL)
		{
			HP_RESERVE(a, u, cap, n);
			u[n++] = (unmapped) {out->pcs[i], i};
		}
	if (n == 0)
		return;
	qsort(u, n, sizeof(*u), cmp_unmapped);
	next = hp_alloc(a, (n + 1) * sizeof(size_t));
	for (size_t k = 0; k <= n; k++)
		next[k] = k;
	while (hp_maps_next(&line, p->maps + p->maps_len, &m))
	{
		size_t		lo = 0;
		size_t		hi = n;
		uint64_t	base;

		hp_work(a->env, 1);
		/* the first unlabelled address at or above the mapping's start */
		while (lo < hi)
		{
			size_t		mid = lo + (hi - lo) / 2;

			if (u[mid].pc < m.start)
				lo = mid + 1;
			else
				hi = mid;
		}
		lo = next_unlabelled(next, lo);
		if (lo == n || u[lo].pc >= m.end)
			continue;
		mapping_name(&m, name, sizeof(name), &base);
		for (; lo < n && u[lo].pc < m.end; lo = next_unlabelled(next, lo))
		{
			hp_symbol  *sym = &out->syms[u[lo].i];

			hp_work(a->env, 1);
			snprintf(label, sizeof(label), "%s+0x%llx", name,
					 (unsigned long long) (u[lo].pc - base));
			sym->name = hp_strdup(a, label);
			sym->object = hp_strdup(a, name);
			sym->offset = u[lo].pc - base;
			next[lo] = lo + 1;	/* an overlapping later line skips it */
		}
	}
}

/* The slot of pc in l's index: where it is, or the empty one where it goes. */
static size_t
pc_slot(const hp_located *l, uint64_t pc)
{
	size_t		mask = l->nslots - 1;
	/* Fibonacci hashing: addresses 16 bytes apart spread over every slot */
	size_t		k = (size_t) ((pc * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & mask;

	while (l->slots[k].i != 0 && l->slots[k].pc != pc)
		k = (k + 1) & mask;
	return k;
}

size_t
hp_located_add(hp_arena *a, hp_located *l, uint64_t pc, bool *added)
{
	size_t		k;
	bool		is_new;

	if ((l->npcs + 1) * 2 > l->nslots)
	{
		size_t		n = l->nslots ? l->nslots * 2 : 1024;

		if (n > UINT32_MAX)
			hp_fail(a->env, HP_ELIMIT, "too many distinct addresses in the heap profile");
		l->slots = hp_alloc(a, n * sizeof(hp_pc_slot));
		memset(l->slots, 0, n * sizeof(hp_pc_slot));
		l->nslots = n;
		for (size_t i = 0; i < l->npcs; i++)
			l->slots[pc_slot(l, l->pcs[i])] = (hp_pc_slot) {l->pcs[i], (uint32_t) (i + 1)};
	}
	k = pc_slot(l, pc);
	is_new = l->slots[k].i == 0;
	if (added)
		*added = is_new;
	if (is_new)
	{
		HP_RESERVE(a, l->pcs, l->cap, l->npcs);
		l->pcs[l->npcs] = pc;
		l->slots[k] = (hp_pc_slot) {pc, (uint32_t) (++l->npcs)};
	}
	return l->slots[k].i - 1;
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
	for (size_t i = 0; i < p->nsamples; i++)
	{
		const hp_sample *smp = &p->samples[i];

		hp_work(env, smp->npcs + 1);
		for (uint32_t j = 0; j < smp->npcs; j++)
		{
			bool		added;
			size_t		k = hp_located_add(a, out, smp->pcs[j], &added);

			if (added)
			{
				HP_RESERVE(a, caller, cap, k);
				caller[k] = false;
			}
			caller[k] |= j > 0;
		}
	}
	if (out->pcs == NULL)
		out->pcs = hp_alloc(a, sizeof(uint64_t));	/* never NULL: no stack is no address */
	out->syms = hp_alloc(a, (out->npcs ? out->npcs : 1) * sizeof(hp_symbol));
	calls = hp_alloc(a, (out->npcs ? out->npcs : 1) * sizeof(uint64_t));
	for (size_t i = 0; i < out->npcs; i++)
		if (caller[i])
			calls[ncalls++] = out->pcs[i];
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
	label_unmapped(a, p, out);
}

size_t
hp_located_index(const hp_located *l, uint64_t pc)
{
	size_t		k;

	if (l->nslots == 0)
		return SIZE_MAX;
	k = pc_slot(l, pc);
	return l->slots[k].i ? l->slots[k].i - 1 : SIZE_MAX;
}
