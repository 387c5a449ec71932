/*
 * test_locate.c -- the symbolization stage (locate.c).
 *
 * B3: a symbolizer that cannot take a profile's maps or build-ids must end
 * the analysis (before, the graph ignored those errors and went on with the
 * previous dump's modules).  The failure is real: this program is linked
 * with --wrap=malloc,calloc,realloc, so the symbolizer's own allocations go
 * through the wrappers below and fail on demand; the analysis arena uses
 * the real malloc.
 */
#include "test.h"

void	   *__real_malloc(size_t size);
void	   *__real_calloc(size_t n, size_t size);
void	   *__real_realloc(void *p, size_t size);
void	   *__wrap_malloc(size_t size);
void	   *__wrap_calloc(size_t n, size_t size);
void	   *__wrap_realloc(void *p, size_t size);

static bool fail_all;			/* every wrapped allocation fails */
static size_t fail_size;		/* allocations of this size fail */

void *
__wrap_malloc(size_t size)
{
	return fail_all || (fail_size && size == fail_size) ? NULL : __real_malloc(size);
}

void *
__wrap_calloc(size_t n, size_t size)
{
	return fail_all ? NULL : __real_calloc(n, size);
}

void *
__wrap_realloc(void *p, size_t size)
{
	return fail_all || (fail_size && size == fail_size) ? NULL : __real_realloc(p, size);
}

static void *
real_alloc(void *ctx, size_t size)
{
	t_env	   *t = ctx;

	t->allocs++;
	return __real_malloc(size);
}

static const char dump[] =
	"%heapprof-build-id 400000 01\n%heapprof-build-id 500000 02\n%heapprof-build-id 600000 03\n"
	"%heapprof-build-id 700000 04\n%heapprof-build-id 800000 05\n%heapprof-build-id 900000 06\n"
	"%heapprof-build-id a00000 07\n"
	"heap_v2/1\n"
	"@ 0x1000 0x2001 0x3001\nt*: 1: 10 [0: 0]\n"
	"@ 0x1000 0x3001\nt*: 1: 10 [0: 0]\n"
	"MAPPED_LIBRARIES:\n";

/* code outside every file: an anonymous mapping (JIT code), the vDSO, nothing */
static const char anon_dump[] =
	"heap_v2/1\n"
	"@ 0x7f0000001010 0x7ffd00000401 0x5000\nt*: 1: 10 [0: 0]\n"
	"MAPPED_LIBRARIES:\n"
	"7f0000000000-7f0000010000 r-xp 00000000 00:00 0 \n"
	"7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                          [vdso]\n"
	"7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                          [evil\x01]\n";

static hp_symbolizer *symbolizer;
static hp_profile profile;

static void
locate(void *arg)
{
	hp_arena   *a = arg;
	hp_located	l;

	hp_symbolize_profile(a, symbolizer, &profile, &l);
}

int
main(void)
{
	t_env		t;
	hp_arena	a;
	hp_located	l;
	char		err[256];
	int			rc;

	t_env_init(&t);
	t.env.alloc = real_alloc;
	hp_arena_init(&a, &t.env);
	symbolizer = hp_symbolizer_new();
	if (t_parse(&a, dump, &profile, err, sizeof(err)) != HP_OK || profile.nids != 7)
		t_fail("locate input", "%s", err);

	hp_symbolize_profile(&a, symbolizer, &profile, &l);
	T_CHECK("locate: distinct addresses in order", l.npcs == 3 && l.pcs[0] == 0x1000 &&
			l.pcs[1] == 0x2000 && l.pcs[2] == 0x3000 && hp_located_index(&l, 0x3000) == 2 &&
			hp_located_index(&l, 0x4000) == SIZE_MAX, "%zu addresses", l.npcs);
	T_CHECK("locate: no maps, no addresses in labels", strcmp(l.syms[0].name, "[unmapped]") == 0 &&
			l.syms[0].object == NULL, "\"%s\"", l.syms[0].name);
	{
		hp_profile	ap;

		if (t_parse(&a, anon_dump, &ap, err, sizeof(err)) != HP_OK)
			t_fail("locate anonymous input", "%s", err);
		hp_symbolize_profile(&a, symbolizer, &ap, &l);
		T_CHECK("locate: code outside files is named by its place in its mapping, never its address",
				l.npcs == 3 && strcmp(l.syms[0].name, "[anon]+0x1010") == 0 &&
				strcmp(l.syms[1].name, "[vdso]+0x400") == 0 && l.syms[1].offset == 0x400 &&
				strcmp(l.syms[1].object, "[vdso]") == 0 && strcmp(l.syms[2].name, "[unmapped]") == 0 &&
				l.syms[2].object == NULL,
				"\"%s\" \"%s\" \"%s\"", l.syms[0].name, l.npcs > 1 ? l.syms[1].name : "",
				l.npcs > 2 ? l.syms[2].name : "");
	}

	/* a new session: unchanged maps would need no memory */
	hp_symbolizer_free(symbolizer);
	symbolizer = hp_symbolizer_new();
	fail_all = true;
	rc = t_run(&t, locate, &a);
	fail_all = false;
	T_CHECK("locate: maps the symbolizer cannot take end the analysis (B3)",
			rc == 1 && t.code == HP_ENOMEM && strstr(t.message, "memory map"),
			"returned %d: %s", rc, t.message);

	fail_size = 7 * sizeof(hp_build_id);
	rc = t_run(&t, locate, &a);
	fail_size = 0;
	T_CHECK("locate: build-ids the symbolizer cannot take end the analysis (B3)",
			rc == 1 && t.code == HP_ENOMEM && strstr(t.message, "build-ids"),
			"returned %d: %s", rc, t.message);

	rc = t_run(&t, locate, &a);
	T_CHECK("locate: the symbolizer recovers", rc == 0, "%s", t.message);
	hp_arena_free(&a);
	hp_symbolizer_free(symbolizer);
	T_CHECK("locate frees what it took", t.allocs == 0, "%ld blocks live", t.allocs);
	return t_exit();
}
