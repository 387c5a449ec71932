/* tlib.c -- the shared library of tprog.c; -DVERSION2 moves its code. */
#include <stdlib.h>
#include <string.h>

#ifdef VERSION2
__attribute__((noinline)) void *
tlib_padding(size_t size)
{
	return calloc(1, size + 1);
}
#endif

static __attribute__((noinline)) void *
lib_static_alloc(size_t size)
{
	void	   *p = malloc(size);

	memset(p, 3, size);
	return p;
}

void *
tlib_entry(size_t size)
{
	void	   *p = lib_static_alloc(size);

	return p;
}
