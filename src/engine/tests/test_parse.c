/*
 * test_parse.c -- the heap_v2 parser: good dumps, every malformed form, the
 * frame cap, the leading "%" lines (parse.c, format.c's reader).
 */
#include "test.h"

#include <math.h>

static const char good[] =
	"%heapprof v=1 pid=12 owner=10 taken_at=5 backend_type=client backend\n"
	"%heapprof-allocator 7f0000000000\n"
	"%heapprof-build-id 55d000000000 0123456789abcdef\n"
	"%heapprof-fold 3000 1000 2000 1000\n"
	"%some other comment\n"
	"heap_v2/524288\n"
	"  t*: 3: 300 [0: 0]\n"
	"  t0: 3: 300 [0: 0]\n"
	"@ 0x1000 0x2001 0x3001\n"
	"  t*: 2: 200 [4: 400]\n"
	"  t0: 2: 200 [0: 0]\n"
	"@ 0x4000\t0x0000000000000000002001  \n"
	"  t*: 1: 10 [0: 0]\n"
	"  t*: 99999999999999999999: 1 [0: 0]\n"
	"  t*: 5: 50 [0: 0] extra\n"
	"@0x5000\n"
	"  t*: 7: 70 [0: 0]\n"
	"\n"
	"MAPPED_LIBRARIES:\n"
	"00400000-00401000 r-xp 00000000 08:01 42 /usr/bin/prog\n";

static hp_arena arena;
static t_env env;

static void
test_good(void)
{
	hp_profile	p;
	char		err[256];
	hp_status	rc = t_parse(&arena, good, &p, err, sizeof(err));

	T_CHECK("parse good dump", rc == HP_OK, "status %d: %s", rc, err);
	T_CHECK("parse rate", p.rate == 524288, "rate %llu", (unsigned long long) p.rate);
	/* "@0x5000" is not "@\s+": ignored, its counts belong to the previous stack */
	T_CHECK("parse samples", p.nsamples == 3, "%zu samples", p.nsamples);
	if (p.nsamples != 3)
		return;
	T_CHECK("parse leaf kept, callers minus one",
			p.samples[0].npcs == 3 && p.samples[0].pcs[0] == 0x1000 &&
			p.samples[0].pcs[1] == 0x2000 && p.samples[0].pcs[2] == 0x3000,
			"pcs %u", p.samples[0].npcs);
	/* the t* line before the first stack is the total: not a sample */
	T_CHECK("parse counts", p.samples[0].objs == 2 && p.samples[0].bytes == 200 &&
			p.samples[0].acc_objs == 4 && p.samples[0].acc_bytes == 400 &&
			p.samples[1].objs == 1 && p.samples[1].bytes == 10,
			"counts %g %g", p.samples[0].objs, p.samples[0].bytes);
	T_CHECK("parse leading zeros and tabs", p.samples[1].npcs == 2 && p.samples[1].pcs[0] == 0x4000 &&
			p.samples[1].pcs[1] == 0x2000, "npcs %u", p.samples[1].npcs);
	T_CHECK("parse a count beyond 19 digits, or trailing text, is ignored",
			p.samples[2].objs == 7 && p.samples[1].npcs == p.samples[2].npcs,
			"third sample %g", p.samples[2].objs);
	T_CHECK("parse maps section", p.maps && p.maps_len > 0 && strncmp(p.maps, "00400000-", 9) == 0,
			"maps %zu bytes", p.maps_len);
	T_CHECK("parse allocator line", p.allocator_base == 0x7f0000000000ULL,
			"allocator %llx", (unsigned long long) p.allocator_base);
	T_CHECK("parse build-id line", p.nids == 1 && p.ids[0].bias == 0x55d000000000ULL &&
			p.ids[0].len == 8 && p.ids[0].id[0] == 0x01 && p.ids[0].id[7] == 0xef,
			"%zu ids", p.nids);
	T_CHECK("parse fold line sorted and distinct", p.nfold_starts == 3 && p.fold_starts[0] == 0x1000 &&
			p.fold_starts[1] == 0x2000 && p.fold_starts[2] == 0x3000,
			"%zu fold starts", p.nfold_starts);
}

static void
expect_error(const char *name, const char *text, const char *message)
{
	hp_profile	p;
	char		err[256];
	hp_status	rc = t_parse(&arena, text, &p, err, sizeof(err));

	T_CHECK(name, rc == HP_EFORMAT && strcmp(err, message) == 0,
			"status %d, message \"%s\"", rc, err);
}

static void
test_malformed(void)
{
	hp_profile	p;
	char		err[256];

	expect_error("malformed: empty input", "", "not a jemalloc heap profile: no \"heap_v2/\" header");
	expect_error("malformed: only comments", "%heapprof-allocator 1\n",
				 "not a jemalloc heap profile: no \"heap_v2/\" header");
	expect_error("malformed: another first line", "heap profile: 1\n",
				 "not a jemalloc heap profile: the first line must start with \"heap_v2/\"");
	expect_error("malformed: rate 0", "heap_v2/0\n", "invalid sampling rate in the heap_v2 header");
	expect_error("malformed: 19-digit rate (unsampling would be inf)", "heap_v2/9999999999999999999\n",
				 "invalid sampling rate in the heap_v2 header");
	expect_error("malformed: rate missing", "heap_v2/\n", "invalid sampling rate in the heap_v2 header");
	expect_error("malformed: rate beyond 19 digits", "heap_v2/12345678901234567890\n",
				 "invalid sampling rate in the heap_v2 header");
	expect_error("malformed: address not hex", "heap_v2/1\n@ 0x10 0xzz\n",
				 "malformed stack addresses on line 2");
	expect_error("malformed: address beyond 64 bits", "heap_v2/1\n\n@ 0x12345678901234567\n",
				 "malformed stack addresses on line 3");
	expect_error("malformed: bare 0x", "heap_v2/1\n@ 0x\n", "malformed stack addresses on line 2");
	T_CHECK("malformed: no newline at the end",
			t_parse(&arena, "heap_v2/1\n@ 0x10\nt*: 1: 2 [0: 0]", &p, err, sizeof(err)) == HP_OK &&
			p.nsamples == 1 && p.samples[0].bytes == 2, "%s", err);
	T_CHECK("malformed: counts before any stack are ignored",
			t_parse(&arena, "heap_v2/1\nt*: 1: 2 [0: 0]\n", &p, err, sizeof(err)) == HP_OK &&
			p.nsamples == 0, "%s", err);
	T_CHECK("malformed: a NUL byte is just a byte",
			hp_parse(&arena, "heap_v2/1\n@ 0x1\0\n", 17, &p, err, sizeof(err)) == HP_EFORMAT,
			"accepted");
}

/* A stack of n frames, and a count line. */
static char *
long_stack(size_t n)
{
	char	   *s = malloc(32 + n * 8);
	size_t		len = (size_t) sprintf(s, "heap_v2/1\n@");

	for (size_t i = 0; i < n; i++)
		len += (size_t) sprintf(s + len, " 0x%zx", (i % 4096) + 16);
	sprintf(s + len, "\nt*: 1: 8 [0: 0]\n");
	return s;
}

static void
test_frame_cap(void)
{
	hp_profile	p;
	char		err[256];
	char	   *at = long_stack(HP_MAX_FRAMES);
	char	   *over = long_stack(HP_MAX_FRAMES + 1);
	hp_status	rc;

	rc = hp_parse(&arena, at, strlen(at), &p, err, sizeof(err));
	T_CHECK("frame cap: 65536 frames are read", rc == HP_OK && p.nsamples == 1 &&
			p.samples[0].npcs == HP_MAX_FRAMES, "status %d: %s", rc, err);
	rc = hp_parse(&arena, over, strlen(over), &p, err, sizeof(err));
	T_CHECK("frame cap: 65537 frames are an error", rc == HP_EFORMAT &&
			strcmp(err, "stack on line 2 has more than 65536 frames") == 0,
			"status %d: %s", rc, err);
	free(at);
	free(over);
}

static void
test_comments(void)
{
	hp_profile	p;
	char		err[256];
	char		text[8192];
	size_t		len = 0;

	/* the fold starts are capped, and still sorted */
	len += (size_t) sprintf(text + len, "%%heapprof-fold");
	for (int i = 100; i > 0; i--)
		len += (size_t) sprintf(text + len, " %x", i * 16);
	len += (size_t) sprintf(text + len, "\n%%heapprof-fold 1 zz 2\n%%heapprof-build-id 10\n"
							"%%heapprof-build-id 20 xyz\n%%heapprof-allocator 0x12345678901234567\n"
							"%%heapprof-allocatorX 5\nheap_v2/1\n%%heapprof-allocator 99\n");
	(void) len;
	T_CHECK("comments parse", t_parse(&arena, text, &p, err, sizeof(err)) == HP_OK, "%s", err);
	{
		bool		sorted = true;

		for (size_t i = 1; i < p.nfold_starts; i++)
			sorted &= p.fold_starts[i - 1] < p.fold_starts[i];
		T_CHECK("comments: fold starts capped and sorted",
				p.nfold_starts == HP_MAX_FOLD_STARTS && sorted, "%zu starts", p.nfold_starts);
	}
	T_CHECK("comments: build-id lines without an id are dropped", p.nids == 0, "%zu ids", p.nids);
	T_CHECK("comments: a bad allocator line, and one after the header, are ignored",
			p.allocator_base == 0, "allocator %llx", (unsigned long long) p.allocator_base);
}

static void
test_work(void)
{
	t_env		e;
	hp_arena	a;
	hp_profile	p;
	char		err[256];

	t_env_init(&e);
	hp_arena_init(&a, &e.env);
	t_parse(&a, good, &p, err, sizeof(err));
	/* 19 lines up to the maps, one of them 64 bytes or more, 5 frames */
	T_CHECK("parse counts its work", e.env.work == 19 + 1 + 5,
			"work %zu", e.env.work);
	hp_arena_free(&a);
}

int
main(void)
{
	t_env_init(&env);
	hp_arena_init(&arena, &env.env);
	test_good();
	test_malformed();
	test_frame_cap();
	test_comments();
	test_work();
	hp_arena_free(&arena);
	T_CHECK("parse frees what it took", env.allocs == 0, "%ld blocks live", env.allocs);
	return t_exit();
}
