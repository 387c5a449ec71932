/*
 * fold.c -- recognise PostgreSQL's allocator in stack frames.
 *
 * Almost every allocation in a backend is palloc -> AllocSetAlloc -> malloc,
 * so unfolded reports charge nearly everything to AllocSetAlloc.  Folding
 * charges memory to the first caller above the allocator instead.
 *
 * The hard part is that AllocSetAlloc, GenerationAlloc, SlabAlloc and their
 * realloc twins are static: Debian's stripped postgres has no name for them.
 * Two independent facts find them anyway:
 *  - They are only ever called through a context's method table, from the
 *    exported memory-context entry points (palloc, MemoryContextAlloc*, ...:
 *    src/fold_names.c), and the engine cuts everything leafward of the
 *    rootmost folded frame, so those nameless frames go with the named
 *    entry point above them.
 *  - Their exact start addresses are the alloc and realloc pointers of a
 *    live context's method table (owner.c reads them before it wraps them;
 *    the wrappers' frames never reach a profile).  They are written into every dump this process takes (%heapprof-fold),
 *    so a stored profile is folded with the addresses of the process that
 *    dumped it, not of the one reading it (PIE and ASLR move them at every
 *    server start).
 * Both rely on nothing but PostgreSQL's memory-context API, not on names.
 */
#include "postgres.h"

#include "fold.h"
#include "owner.h"

#define MAX_STARTS 8

static uint64_t starts[MAX_STARTS];
static size_t nstarts;

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a;
	uint64_t	y = *(const uint64_t *) b;

	return (x > y) - (x < y);
}

void
hpg_fold_init(void)
{
	if (nstarts > 0)
		return;
	hpg_owner_probe();
	nstarts = hpg_owner_allocator_starts(starts, MAX_STARTS);
	qsort(starts, nstarts, sizeof(uint64_t), cmp_u64);
}

const uint64_t *
hpg_fold_starts(size_t *n)
{
	*n = nstarts;
	return starts;
}
