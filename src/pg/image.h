/*
 * image.h -- this process's image: the executable's code and its slots for
 * the functions it calls, and writing into read-only data.
 */
#ifndef HEAPPROF_PG_IMAGE_H
#define HEAPPROF_PG_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Find the executable's code and the unwinder's table of functions, once,
 * outside any hook: false when either is not found (then hpg_image_code
 * finds no frame in it).
 */
extern bool hpg_image_init(void);

/* Whether pc is in the executable's code. */
extern bool hpg_image_code(uintptr_t pc);

/*
 * The start of the function holding pc, by its unwind table entry, or 0.
 * Safe where an unwinder runs: inside malloc, as jemalloc's own backtrace.
 */
extern uintptr_t hpg_image_function(uintptr_t pc);

/*
 * The protection (PROT_*) of the one mapping that holds [addr, addr + len),
 * or -1: none, or two of different protections.  Reads /proc/self/maps: not
 * in a hook.
 */
extern int	hpg_image_protection(const void *addr, size_t len);

/*
 * memcpy into [dst, dst + len), whose protection is prot: writable for the
 * write, then as it was.  0, or an errno (prot -1: ENOTSUP; written but
 * left writable when the protection could not be given back).  System
 * calls and a copy: safe inside malloc.
 */
extern int	hpg_image_write(void *dst, const void *src, size_t len, int prot);

/*
 * Where the executable (not a library) keeps the address of the function
 * it calls by that name -- its PLT or GOT slot, bound at start (PostgreSQL
 * is linked with -z now) -- or NULL when it has none or this platform's
 * relocations are not known here.
 */
extern void **hpg_image_slot(const char *name);

#endif
