/*
 * owner.h -- which memory context owns the block that malloc is asked for.
 */
#ifndef HEAPPROF_PG_OWNER_H
#define HEAPPROF_PG_OWNER_H

#include "postgres.h"

#include "nodes/memnodes.h"

/* What the stack of a malloc says of its block's owner. */
typedef enum hpg_owner_kind
{
	HPG_OWNER_NONE,				/* no context's: plain malloc (libc, LLVM, ...) */
	HPG_OWNER_CONTEXT,			/* a block of the context in .context */
	HPG_OWNER_CREATING			/* the first block of a context being created at .site */
} hpg_owner_kind;

typedef struct hpg_owner
{
	MemoryContext context;
	uintptr_t	site;			/* the return address into the creator's caller */
	uintptr_t	caller;			/* and into that one's caller, or 0 */
} hpg_owner;

/*
 * Read the allocators' method tables (one throwaway context of each kind)
 * and what wrapping them needs; a palloc'ing step, once, before
 * hpg_owner_wrap.
 */
extern void hpg_owner_probe(void);

/*
 * Where the allocators' own alloc and realloc functions start (static,
 * nameless in a stripped postgres), for folding (fold.c).
 */
extern size_t hpg_owner_allocator_starts(uint64_t *starts, size_t max);

/*
 * Wrap (on) the alloc, realloc and delete methods of every allocator's
 * table, in this process and those it forks from now, or put them back.  A
 * table that cannot be written leaves them all as they were (with a LOG,
 * once): then every block's owner is unknown.  Not inside an allocator.
 */
extern void hpg_owner_wrap(bool on);

/*
 * In the backtrace hook, with the frames of the sampled malloc (innermost
 * first): whose block it is; the wrappers' own frames are taken out of
 * vec[0 .. *len).  Plain reads and stores: no allocation, lock or error.
 */
extern hpg_owner_kind hpg_owner_of(void **vec, unsigned *len, hpg_owner *out);

/*
 * After HPG_OWNER_CREATING, in the same hook: call named(token, context)
 * with the new context once it is linked under its parent and named -- at
 * the next context operation or sampled malloc (a hash table's, once it has
 * the table's name), before it is freed -- or never, when its address could
 * not be seen.  named must not allocate, lock or raise.
 */
extern void hpg_owner_expect(int token, void (*named) (int token, MemoryContext created));

/* Settle an expected context now (the hook calls it first). */
extern void hpg_owner_settle(void);

#endif
