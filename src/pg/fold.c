/*
 * fold.c -- recognise PostgreSQL's memory allocator in stack frames.
 *
 * Almost every allocation in a backend is palloc -> AllocSetAlloc -> malloc,
 * so unfolded reports charge nearly everything to AllocSetAlloc.  Folding
 * charges memory to the first caller above the allocator instead.
 *
 * The hard part is that AllocSetAlloc, GenerationAlloc, SlabAlloc and their
 * realloc twins are static: Debian's stripped postgres has no name for them.
 * Two independent facts find them anyway:
 *  - They are only ever called through a context's method table, from the
 *    exported memory-context entry points (palloc, MemoryContextAlloc*,
 *    repalloc, ...: hp_postgres_allocator), and the engine cuts everything
 *    leafward of the rootmost folded frame, so those nameless frames go with
 *    the named entry point above them.
 *  - In this process their exact start addresses are the alloc and realloc
 *    pointers of a live context's method table.  The engine compares them
 *    with each frame's function start (from symbols or .eh_frame), which
 *    catches them even where no named entry point lies above.
 * Both rely on nothing but PostgreSQL's memory-context API, not on names.
 */
#include "postgres.h"

#include "nodes/memnodes.h"
#include "utils/memutils.h"

#include "heapprof_pg.h"
#include "engine/graph.h"

#define MAX_STARTS 6

static uint64 starts[MAX_STARTS];
static int	nstarts = -1;

static void
add_methods(MemoryContext cxt)
{
	starts[nstarts++] = (uint64) (uintptr_t) cxt->methods->alloc;
	starts[nstarts++] = (uint64) (uintptr_t) cxt->methods->realloc;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64		x = *(const uint64 *) a;
	uint64		y = *(const uint64 *) b;

	return (x > y) - (x < y);
}

/* Fill the folding options for a dump of this backend. */
void
hp_fold_postgres(hp_options *o)
{
	if (nstarts < 0)
	{
		MemoryContext gen;
		MemoryContext slab;

		/* one throwaway context of each kind, to read its method table */
		gen = GenerationContextCreate(CurrentMemoryContext, "heapprof probe",
									  0, 8192, 8192);
		slab = SlabContextCreate(CurrentMemoryContext, "heapprof probe",
								 SLAB_DEFAULT_BLOCK_SIZE, 64);
		nstarts = 0;
		add_methods(TopMemoryContext);	/* AllocSet */
		add_methods(gen);
		add_methods(slab);
		MemoryContextDelete(gen);
		MemoryContextDelete(slab);
		qsort(starts, nstarts, sizeof(uint64), cmp_u64);
	}
	o->fold_names = hp_postgres_allocator;
	o->fold_starts = starts;
	o->nfold_starts = (size_t) nstarts;
}
