/*
 * oracle.c -- allocate through known call chains, then dump a heap profile.
 *
 * Built with -g and linked with jemalloc by tests/t_oracle.sh, so jeprof gets
 * full symbols and its numbers are the reference heapprof must reproduce.
 * Chains: a plain three-level chain, many small objects, recursion, several
 * threads, a spread of sizes, calloc, realloc and an inlined function.  Memory stays live until
 * the dump.  With a second file, a later dump follows in which the small
 * objects were freed and leak_more has grown (for --base).
 * Usage: oracle DUMPFILE [LATER_DUMPFILE]
 */
#include <jemalloc/jemalloc.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define NTHREADS 3

static void *keep[8192];
static int nkeep;

static void
hold(void *p)
{
	if (p && nkeep < 8192)
		keep[nkeep++] = p;
}

void *
leaf_alloc(size_t size)
{
	void	   *p = malloc(size);

	memset(p, 1, size);
	return p;
}

void
alloc_big(void)
{
	hold(leaf_alloc(3 << 20));
}

void
mid(void)
{
	alloc_big();
}

void
alloc_small_many(void)
{
	for (int i = 0; i < 1000; i++)
		hold(leaf_alloc(1024));
}

void
rec(int depth)
{
	if (depth > 0)
		rec(depth - 1);
	else
		hold(calloc(1, 512 << 10));
}

void
sizes(void)
{
	static const size_t list[] = {8, 24, 100, 3000, 40000, 100000, 700000, 2500000};

	for (size_t i = 0; i < sizeof(list) / sizeof(list[0]); i++)
		for (int k = 0; k < 3; k++)
			hold(leaf_alloc(list[i]));
}

void
grow(void)
{
	char	   *p = malloc(1000);

	for (size_t n = 2000; n <= 256000; n *= 2)
		p = realloc(p, n);
	hold(p);
}

/* inlined even under -fno-inline: jeprof shows it as "inl_alloc (inline)" */
static inline __attribute__((always_inline)) void *
inl_alloc(size_t size)
{
	void	   *p = malloc(size);

	memset(p, 2, size);
	return p;
}

void
via_inline(void)
{
	hold(inl_alloc(200000));
}

/* second phase: grows after the first dump */
void
leak_more(void)
{
	for (int i = 0; i < 5; i++)
		hold(leaf_alloc(256 << 10));
}

void *
worker_alloc(long id)
{
	return malloc((size_t) (id + 1) << 18);
}

static void *
thread_main(void *arg)
{
	long		id = (long) arg;

	for (int i = 0; i < 4; i++)
		hold(worker_alloc(id));
	return NULL;
}

int
main(int argc, char **argv)
{
	pthread_t	t[NTHREADS];
	const char *path;
	int			small_first;
	int			small_end;

	if (argc != 2 && argc != 3)
	{
		fprintf(stderr, "usage: oracle DUMPFILE [LATER_DUMPFILE]\n");
		return 2;
	}
	mid();
	small_first = nkeep;
	alloc_small_many();
	small_end = nkeep;
	rec(3);
	sizes();
	grow();
	via_inline();
	/* threads one at a time: hold() is not thread-safe */
	for (long i = 0; i < NTHREADS; i++)
	{
		pthread_create(&t[i], NULL, thread_main, (void *) i);
		pthread_join(t[i], NULL);
	}
	path = argv[1];
	if (mallctl("prof.dump", NULL, NULL, &path, sizeof(path)) != 0)
	{
		fprintf(stderr, "oracle: prof.dump failed\n");
		return 1;
	}
	if (argc == 3)
	{
		/* later: the small objects are freed, leak_more has grown */
		for (int i = small_first; i < small_end; i++)
			free(keep[i]);
		leak_more();
		path = argv[2];
		if (mallctl("prof.dump", NULL, NULL, &path, sizeof(path)) != 0)
			return 1;
	}
	return 0;
}
