/*
 * harness.h -- the engine's environment for the fuzz targets (header only).
 *
 * malloc with errors that longjmp back to the target; on some input sizes
 * allocation fails after a number of blocks, or the first interrupt check
 * jumps out, so the error paths are fuzzed too.  The target frees its arena
 * after each input, which must leave nothing behind (LeakSanitizer).
 */
#ifndef HEAPPROF_FUZZ_HARNESS_H
#define HEAPPROF_FUZZ_HARNESS_H

#include "engine/env.h"

#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct harness
{
	hp_env		env;
	jmp_buf		jump;
	long		allocs_left;	/* fail the allocation after these; < 0: never */
	int			interrupts_left;	/* jump out at this interrupt; 0: never */
} harness;

static void *
fuzz_alloc(void *ctx, size_t size)
{
	harness    *h = ctx;
	void	   *p;

	if (h->allocs_left == 0 || (p = malloc(size)) == NULL)
		hp_fail(&h->env, HP_ENOMEM, "out of memory");
	if (h->allocs_left > 0)
		h->allocs_left--;
	return p;
}

static void
fuzz_free(void *ctx, void *ptr)
{
	free(ptr);
}

static void
fuzz_error(void *ctx, hp_status code, const char *message)
{
	harness    *h = ctx;

	longjmp(h->jump, 1);
}

static void
fuzz_interrupt(void *ctx)
{
	harness    *h = ctx;

	if (h->interrupts_left > 0 && --h->interrupts_left == 0)
		longjmp(h->jump, 2);
}

/* A fresh environment for an input of size bytes; match may be NULL. */
static void
harness_init(harness *h, size_t size, bool (*match) (void *, void *, const char *))
{
	memset(h, 0, sizeof(*h));
	h->env.alloc = fuzz_alloc;
	h->env.free = fuzz_free;
	h->env.error = fuzz_error;
	h->env.interrupt = fuzz_interrupt;
	h->env.match = match;
	h->env.ctx = h;
	h->allocs_left = size % 19 == 0 ? (long) (size % 97) : -1;
	h->interrupts_left = size % 23 == 0 ? 1 : 0;
}

#endif
