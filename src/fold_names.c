/*
 * fold_names.c -- PostgreSQL's memory-context entry points (fold_names.h).
 */
#include "fold_names.h"

#include <stddef.h>

const char *const hp_postgres_allocator[] = {
	"palloc", "palloc0", "palloc_extended", "repalloc", "repalloc_extended", "repalloc_huge",
	"MemoryContextAlloc", "MemoryContextAllocZero", "MemoryContextAllocZeroAligned",
	"MemoryContextAllocExtended", "MemoryContextAllocHuge", "MemoryContextStrdup",
	"pstrdup", "pnstrdup", "psprintf", "pvsnprintf",
	"MemoryContextCreate", "AllocSetContextCreateInternal",
	"GenerationContextCreate", "SlabContextCreate",
	/* 16: aligned allocations; 17: the Bump allocator */
	"palloc_aligned", "MemoryContextAllocAligned", "BumpContextCreate",
	/*
	 * The allocators' own static functions, named where the binary keeps its
	 * symbols.  From 17 palloc and the alloc methods end in sibling calls, so
	 * a stack at malloc may hold only the static helper that called it
	 * (AllocSetAllocLarge ...), with no entry point or method above it; a
	 * stripped binary names these only with its debug symbols.
	 */
	"AllocSetAlloc", "AllocSetRealloc", "AllocSetAllocLarge", "AllocSetAllocFromNewBlock",
	"AllocSetAllocChunkFromBlock",
	"GenerationAlloc", "GenerationRealloc", "GenerationAllocLarge", "GenerationAllocFromNewBlock",
	"SlabAlloc", "SlabRealloc", "SlabAllocFromNewBlock",
	"BumpAlloc", "BumpAllocLarge", "BumpAllocFromNewBlock",
	NULL
};
