/*
 * tprog.c -- known truth for tests/t_symbols.sh: each allocation comes from
 * a function of known kind (static, exported, inlined, in a shared library).
 * Usage: tprog DUMPFILE [FILE_TO_DELETE_BEFORE_THE_DUMP]
 */
#include <jemalloc/jemalloc.h>
#include <string.h>
#include <unistd.h>

void	   *tlib_entry(size_t size);
void	   *exported_func(size_t size);
void	   *inline_user(size_t size);
void	   *deep_user(size_t size);

static void *keep[4];

static __attribute__((noinline)) void *
static_worker(size_t size)
{
	void	   *p = malloc(size);

	memset(p, 1, size);
	return p;
}

static inline __attribute__((always_inline)) void *
inlined_alloc(size_t size)
{
	void	   *p = malloc(size);

	memset(p, 2, size);
	return p;
}

__attribute__((noinline)) void *
exported_func(size_t size)
{
	void	   *p = static_worker(size);

	return p;
}

__attribute__((noinline)) void *
inline_user(size_t size)
{
	void	   *p = inlined_alloc(size);

	return p;
}

/* two inlined levels: each level's file:line is its own call site */
static inline __attribute__((always_inline)) void *
inlined_twice(size_t size)
{
	void	   *p = inlined_alloc(size);

	return p;
}

__attribute__((noinline)) void *
deep_user(size_t size)
{
	void	   *p = inlined_twice(size);

	return p;
}

int
main(int argc, char **argv)
{
	const char *path = argv[1];

	keep[0] = exported_func(1 << 20);
	keep[1] = inline_user(2 << 20);
	keep[2] = tlib_entry(3 << 20);
	keep[3] = deep_user(4 << 20);
	if (argc > 2)
		unlink(argv[2]);
	return mallctl("prof.dump", NULL, NULL, &path, sizeof(path)) != 0;
}
