/*
 * heapprof_test.c -- hold memory from known functions, for heapprof's tests.
 *
 * Report tests need an allocation whose size, allocating function and call
 * chain are known exactly.  Every function of the chain is exported and built
 * without inlining or tail calls (see the Makefile), so each is a real frame
 * with a .dynsym name.  Chunk pointers live in a static array so that the
 * bookkeeping itself allocates nothing.
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/memutils.h"

#include <stdlib.h>
#include <time.h>

PG_MODULE_MAGIC;

#define MAX_CHUNKS 65536

static void *chunks[MAX_CHUNKS];
static int64 chunk_size[MAX_CHUNKS];
static bool chunk_palloc[MAX_CHUNKS];
static int	nchunks;
static MemoryContext hold_cxt;

void	   *hpt_leaf_alloc(size_t size);
void	   *hpt_middle(size_t size);
void	   *hpt_outer(size_t size);
void	   *hpt_palloc_leaf(size_t size);
void	   *hpt_palloc_middle(size_t size);
void	   *hpt_leak_top(size_t size);
void	   *hpt_malloc_leak(size_t size);
void		hpt_malloc_twin(size_t size);

PG_FUNCTION_INFO_V1(heapprof_test_hold);
PG_FUNCTION_INFO_V1(heapprof_test_hold_palloc);
PG_FUNCTION_INFO_V1(heapprof_test_release);
PG_FUNCTION_INFO_V1(heapprof_test_spin);
PG_FUNCTION_INFO_V1(heapprof_test_leak);
PG_FUNCTION_INFO_V1(heapprof_test_malloc_leak);
PG_FUNCTION_INFO_V1(heapprof_test_malloc_twin);
PG_FUNCTION_INFO_V1(heapprof_test_contexts);
PG_FUNCTION_INFO_V1(heapprof_test_reuse);
PG_FUNCTION_INFO_V1(heapprof_test_doorbell);

void *
hpt_leaf_alloc(size_t size)
{
	void	   *p = malloc(size);

	if (p)
		memset(p, 0x5a, size);	/* keep the compiler from dropping it */
	return p;
}

void *
hpt_middle(size_t size)
{
	void	   *p = hpt_leaf_alloc(size);

	return p;
}

void *
hpt_outer(size_t size)
{
	void	   *p = hpt_middle(size);

	return p;
}

void *
hpt_palloc_leaf(size_t size)
{
	void	   *p = MemoryContextAllocHuge(hold_cxt, size);

	memset(p, 0x5a, size);
	return p;
}

void *
hpt_palloc_middle(size_t size)
{
	void	   *p = hpt_palloc_leaf(size);

	return p;
}

/* A leak as real ones are: palloc in TopMemoryContext, never freed. */
void *
hpt_leak_top(size_t size)
{
	void	   *p = MemoryContextAllocHuge(TopMemoryContext, size);

	memset(p, 0x6b, size);
	return p;
}

Datum
heapprof_test_leak(PG_FUNCTION_ARGS)
{
	int64		bytes = PG_GETARG_INT64(0);

	if (bytes <= 0 || (Size) bytes > MaxAllocHugeSize)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("bytes must be between 1 and %zu", MaxAllocHugeSize)));
	(void) hpt_leak_top((size_t) bytes);
	PG_RETURN_INT64(bytes);
}

/*
 * A leak outside memory contexts, as pg_stat_monitor's issue #792: malloc on
 * every call, never freed, and no memory context knows of it.
 */
pg_noinline void *
hpt_malloc_leak(size_t size)
{
	void	   *p = malloc(size);

	if (p)
		memset(p, 0x6c, size);	/* real pages, not only address space */
	return p;
}

/* hpt_malloc_leak's twin that leaks nothing: malloc and free at once. */
static void *volatile twin_last;	/* the pointer escapes: the pair stays */

pg_noinline void
hpt_malloc_twin(size_t size)
{
	void	   *p = malloc(size);

	twin_last = p;
	free(p);
}

static void
check_malloc_bytes(int32 bytes)
{
	if (bytes <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("bytes must be > 0")));
}

Datum
heapprof_test_malloc_leak(PG_FUNCTION_ARGS)
{
	static int64 calls;
	int32		bytes = PG_GETARG_INT32(0);

	check_malloc_bytes(bytes);
	if (hpt_malloc_leak((size_t) bytes) == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	PG_RETURN_INT64(++calls);
}

Datum
heapprof_test_malloc_twin(PG_FUNCTION_ARGS)
{
	static int64 calls;
	int32		bytes = PG_GETARG_INT32(0);

	check_malloc_bytes(bytes);
	hpt_malloc_twin((size_t) bytes);
	PG_RETURN_INT64(++calls);
}

static void
check_args(int64 bytes, int32 chunk)
{
	if (bytes < 0 || chunk <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("bytes must be >= 0 and chunk > 0")));
	if ((bytes + chunk - 1) / chunk > MAX_CHUNKS - nchunks)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("at most %d chunks can be held", MAX_CHUNKS)));
}

static int64
held_bytes(void)
{
	int64		sum = 0;

	for (int i = 0; i < nchunks; i++)
		sum += chunk_size[i];
	return sum;
}

Datum
heapprof_test_hold(PG_FUNCTION_ARGS)
{
	int64		bytes = PG_GETARG_INT64(0);
	int32		chunk = PG_GETARG_INT32(1);

	check_args(bytes, chunk);
	while (bytes > 0)
	{
		size_t		n = Min(bytes, chunk);
		void	   *p = hpt_outer(n);

		if (p == NULL)
			ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
		chunks[nchunks] = p;
		chunk_size[nchunks] = n;
		chunk_palloc[nchunks++] = false;
		bytes -= n;
	}
	PG_RETURN_INT64(held_bytes());
}

Datum
heapprof_test_hold_palloc(PG_FUNCTION_ARGS)
{
	int64		bytes = PG_GETARG_INT64(0);
	int32		chunk = PG_GETARG_INT32(1);

	check_args(bytes, chunk);
	if (hold_cxt == NULL)
		hold_cxt = AllocSetContextCreate(TopMemoryContext, "heapprof_test",
										 ALLOCSET_DEFAULT_SIZES);
	while (bytes > 0)
	{
		size_t		n = Min(bytes, chunk);

		chunks[nchunks] = hpt_palloc_middle(n);
		chunk_size[nchunks] = n;
		chunk_palloc[nchunks++] = true;
		bytes -= n;
	}
	PG_RETURN_INT64(held_bytes());
}

Datum
heapprof_test_release(PG_FUNCTION_ARGS)
{
	int64		sum = held_bytes();

	for (int i = 0; i < nchunks; i++)
	{
		if (chunk_palloc[i])
			pfree(chunks[i]);
		else
			free(chunks[i]);
	}
	nchunks = 0;
	PG_RETURN_INT64(sum);
}

Datum
heapprof_test_spin(PG_FUNCTION_ARGS)
{
	double		seconds = PG_GETARG_FLOAT8(0);
	struct timespec start;
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do
		clock_gettime(CLOCK_MONOTONIC, &now);
	while ((now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 < seconds);
	PG_RETURN_VOID();
}

/*
 * One context of each allocator, kept under TopMemoryContext, filled with
 * bytes each from the caller's context (MemoryContextAlloc, never palloc):
 * half in 1000-byte chunks (new blocks), half in large chunks of their own
 * (above the allocator's chunk limit), grown by repalloc where the
 * allocator can (AllocSet, Generation); Slab's in its 256-byte chunks.
 * Large chunks are sized so that, with their headers, they stay just below
 * a jemalloc size class.
 */
static void
fill(MemoryContext cxt, int64 bytes, Size large, bool grow)
{
	int64		n;

	for (n = 0; n < bytes / 2; n += 1000)
		(void) MemoryContextAlloc(cxt, 1000);
	for (; n < bytes; n += grow ? 2 * large : large)
	{
		void	   *p = MemoryContextAllocHuge(cxt, large);

		if (grow)
			(void) repalloc_huge(p, 2 * large);
	}
}

Datum
heapprof_test_contexts(PG_FUNCTION_ARGS)
{
	int64		bytes = PG_GETARG_INT64(0);
	MemoryContext slab;
	int			made = 0;

	if (bytes <= 0 || bytes > 1024 * 1024 * 1024)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("bytes must be between 1 and 1GB")));
	fill(AllocSetContextCreate(TopMemoryContext, "hpt aset", ALLOCSET_DEFAULT_SIZES), bytes, 65000, true);
	made++;
	fill(GenerationContextCreate(TopMemoryContext, "hpt generation", 0, 8192, 65536), bytes, 65000, true);
	made++;
	slab = SlabContextCreate(TopMemoryContext, "hpt slab", SLAB_DEFAULT_BLOCK_SIZE, 256);
	for (int64 n = 0; n < bytes; n += 256)
		(void) MemoryContextAlloc(slab, 256);
	made++;
#if PG_VERSION_NUM >= 170000
	/* its chunk limit is an eighth of its largest block, 1 MB */
	fill(BumpContextCreate(TopMemoryContext, "hpt bump", ALLOCSET_DEFAULT_SIZES), bytes, 2 * 1024 * 1024 - 128, false);
	made++;
#endif
	PG_RETURN_INT32(made);
}

/*
 * n times: a context of "hpt F" deleted (onto AllocSet's freelist), one of
 * "hpt A" of blk-byte blocks made under a context no one allocates in, and
 * one of "hpt B" made under the current context (reusing F's, without
 * malloc), moved under TopMemoryContext and allocated in.  Each A's first
 * block is A's; B's are B's.
 */
Datum
heapprof_test_reuse(PG_FUNCTION_ARGS)
{
	int			n = PG_GETARG_INT32(0);
	int			blk = PG_GETARG_INT32(1);
	MemoryContext q;

	if (n < 0 || n > 1000 || blk < 8192 || blk > 8 * 1024 * 1024)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("n must be between 0 and 1000, blk between 8kB and 8MB")));
	q = AllocSetContextCreate(AllocSetContextCreate(TopMemoryContext, "hpt P", ALLOCSET_SMALL_SIZES),
							  "hpt Q", ALLOCSET_SMALL_SIZES);
	for (int i = 0; i < n; i++)
	{
		MemoryContext b;

		MemoryContextDelete(AllocSetContextCreate(q, "hpt F", ALLOCSET_DEFAULT_SIZES));
		(void) AllocSetContextCreate(q, "hpt A", 0, blk, blk);
		b = AllocSetContextCreate(CurrentMemoryContext, "hpt B", ALLOCSET_DEFAULT_SIZES);
		MemoryContextSetParent(b, TopMemoryContext);
		(void) MemoryContextAlloc(b, 16);
	}
	PG_RETURN_INT32(n);
}

/*
 * bytes allocated in heapprof's doorbell context (an AllocSet context with
 * a method table of heapprof's own), right after a context of 1 MB blocks
 * was allocated in, deleted, and its memory malloc'd over with garbage.
 */
Datum
heapprof_test_doorbell(PG_FUNCTION_ARGS)
{
	int32		bytes = PG_GETARG_INT32(0);
	MemoryContext door = NULL;
	MemoryContext x;
	char	   *junk[16];

	if (bytes <= 0 || (Size) bytes > MaxAllocSize)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("bytes must be between 1 and %zu", MaxAllocSize)));
	for (MemoryContext c = TopMemoryContext->firstchild; c != NULL; c = c->nextchild)
		if (strcmp(c->name, "heapprof doorbell") == 0)
			door = c;
	if (door == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("heapprof is not loaded in this process")));
	x = AllocSetContextCreate(TopMemoryContext, "hpt deleted", 0, 1024 * 1024, 1024 * 1024);
	(void) MemoryContextAlloc(x, 16);
	MemoryContextDelete(x);
	for (int i = 0; i < lengthof(junk); i++)
		if ((junk[i] = malloc(1024 * 1024 + 64)) != NULL)
			memset(junk[i], 0x41, 4096);
	(void) MemoryContextAlloc(door, bytes);
	for (int i = 0; i < lengthof(junk); i++)
		free(junk[i]);
	PG_RETURN_INT32(bytes);
}
