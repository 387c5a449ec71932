/*
 * test_labels.c -- labels of samples (labels.c, and their frames and lines
 * in parse.c and format.c): the pseudo-frames at a stack's root become the
 * sample's queryid and context and leave the stack, anything else stays an
 * address; a context that only was current at malloc (not the block's
 * owner) is "current: NAME"; the label lines name them, hostile ones are
 * bounded or ignored;
 * reports group, filter and diff by them (contexts by name, whatever their
 * slots), and sum bytes per queryid.
 */
#define _GNU_SOURCE			/* memmem */
#include "test.h"

#include <zlib.h>

#define CTX(slot) "0xfffe0400" slot
#define CUR(slot) "0xfffe0100" slot
static const char dump[] =
	"%heapprof-label-context 0 CacheMemoryContext\n"
	"%heapprof-label-context 5 Cached\\x50lanSource\n"
	"%heapprof-label-context 5 second name ignored\n"
	"%heapprof-label-context 1ffffffff beyond 32 bits\n"
	"%heapprof-label-context 6\n"
	"%heapprof-label-query 12345 SELECT 1\n"
	"%heapprof-label-query -5 DO $$\\n$$\n"
	"%heapprof-label-query 12345 second text ignored\n"
	"%heapprof-label-query 99999999999999999999 beyond 19 digits\n"
	"%heapprof-label-query 9223372036854775808 beyond int64\n"
	"%heapprof-label-query 0 no statement\n"
	"%heapprof-label-query 77\n"
	"heap_v2/1\n"
	"@ 0x401000 0x402001 " CTX("00000005") " 0xfffe020000000000 0xfffe030000003039\n"
	"  t*: 1: 1000 [0: 0]\n"
	"@ 0x401000 0x402001 0xfffe0300fffffffb " CTX("00000000") " 0xfffe0200ffffffff\n"
	"  t*: 1: 2000 [0: 0]\n"
	"@ 0x401000 0x402001\n"
	"  t*: 1: 4000 [0: 0]\n"
	"@ 0x401000 " CTX("00000009") " 0x402001 0xfffe020000000001\n"
	"  t*: 1: 8000 [0: 0]\n"
	"@ " CTX("00000009") "\n"
	"  t*: 1: 16000 [0: 0]\n"
	"@ 0x401000 0x402001 " CUR("00000000") "\n"
	"  t*: 1: 32000 [0: 0]\n"
	"MAPPED_LIBRARIES:\n"
	"00400000-00410000 r-xp 00000000 00:00 0 \n";

/* the same statement in another process: its context in another slot */
static const char base[] =
	"%heapprof-label-context 3 CachedPlanSource\n"
	"heap_v2/1\n"
	"@ 0x401000 0x402001 " CTX("00000003") " 0xfffe020000000000 0xfffe030000003039\n"
	"  t*: 1: 400 [0: 0]\n"
	"MAPPED_LIBRARIES:\n"
	"00400000-00410000 r-xp 00000000 00:00 0 \n";

static hp_arena arena;
static t_env env;
static hp_symbolizer *symbolizer;

static void
test_parse(void)
{
	hp_profile	p;
	char		err[256];
	hp_status	rc = t_parse(&arena, dump, &p, err, sizeof(err));
	const hp_sample *s = p.samples;

	T_CHECK("labels parse", rc == HP_OK && p.nsamples == 6, "status %d, %zu samples: %s", rc, p.nsamples, err);
	if (rc != HP_OK || p.nsamples != 6)
		return;
	T_CHECK("labels leave the stack", s[0].npcs == 2 && s[0].pcs[1] == 0x402000 &&
			s[0].labels == (HP_HAS_QUERY | HP_HAS_CONTEXT | HP_OWNED) && s[0].context == 5 && s[0].queryid == 12345,
			"npcs %u labels %d context %u queryid %llu", s[0].npcs, s[0].labels, s[0].context,
			(unsigned long long) s[0].queryid);
	T_CHECK("labels in any order, a negative queryid", s[1].npcs == 2 && s[1].context == 0 &&
			s[1].queryid == (uint64_t) -5, "queryid %llx", (unsigned long long) s[1].queryid);
	T_CHECK("labels: none", s[2].labels == 0 && s[2].npcs == 2, "labels %d", s[2].labels);
	T_CHECK("labels: half a queryid is none, a label inside the stack an address",
			s[3].labels == 0 && s[3].npcs == 3 && s[3].pcs[1] == 0xfffe040000000008ULL,
			"labels %d npcs %u", s[3].labels, s[3].npcs);
	T_CHECK("labels: a stack of labels only", s[4].npcs == 0 && s[4].labels == (HP_HAS_CONTEXT | HP_OWNED) &&
			s[4].context == 9, "npcs %u labels %d", s[4].npcs, s[4].labels);
	T_CHECK("labels: a context current at malloc, not the owner", s[5].npcs == 2 &&
			s[5].labels == HP_HAS_CONTEXT && s[5].context == 0, "npcs %u labels %d", s[5].npcs, s[5].labels);
	T_CHECK("label lines: first of a key, bounded numbers, a key without text ignored",
			p.label_slots.count == 2 && p.label_queries.count == 2 &&
			strcmp(p.slot_names[1], "CachedPlanSource") == 0 &&
			strcmp(hp_labels_query_text(&p, 12345), "SELECT 1") == 0 &&
			strcmp(hp_labels_query_text(&p, (uint64_t) -5), "DO $$\n$$") == 0 &&
			hp_labels_query_text(&p, 77) == NULL,
			"%zu slots, %zu queries", p.label_slots.count, p.label_queries.count);
}

typedef struct job
{
	hp_options *o;
	hp_report_kind kind;
	bool		with_base;
	hp_result  *r;
} job;

static void
analyze(void *arg)
{
	job		   *j = arg;

	hp_analyze(&arena, symbolizer, dump, sizeof(dump) - 1, j->with_base ? base : NULL,
			   j->with_base ? sizeof(base) - 1 : 0, j->o, j->kind, SIZE_MAX, j->r);
}

static bool
run(const char *name, hp_options *o, hp_report_kind kind, bool with_base, hp_result *r)
{
	job			j = {o, kind, with_base, r};

	if (t_run(&env, analyze, &j) != 0)
	{
		t_fail(name, "error: %s", env.message);
		return false;
	}
	return true;
}

/* The collapsed report's text, NUL-terminated. */
static const char *
text(const hp_result *r)
{
	char	   *s = hp_alloc(&arena, r->text.len + 1);

	memcpy(s, r->text.data, r->text.len);
	return s;
}

static void
test_reports(void)
{
	hp_options	o = HP_OPTIONS_DEFAULT;
	hp_result	r;
	const char *t;

	if (run("labels: a function view has a path per stack", &o, HP_REPORT_COLLAPSED, false, &r))
	{
		t = text(&r);
		T_CHECK("labels: a function view has a path per stack",
				strstr(t, "[anon]+0x2000;[anon]+0x1000 47000\n") && !strstr(t, "query"), "%zu paths, %zu bytes, collapsed:\n%s", r.graph.npaths, r.text.len, t);
	}
	o.group_by = HP_GROUP_QUERY;
	if (run("labels group by query", &o, HP_REPORT_COLLAPSED, false, &r))
	{
		t = text(&r);
		T_CHECK("labels group by query", strstr(t, "query 12345;[anon]+0x2000;[anon]+0x1000 1000\n") &&
				strstr(t, "query -5;") && strstr(t, "query (none);") && strstr(t, "query (none) 16000\n"),
				"collapsed:\n%s", t);
	}
	o.group_by = HP_GROUP_CONTEXT;
	if (run("labels group by context", &o, HP_REPORT_COLLAPSED, false, &r))
	{
		t = text(&r);
		T_CHECK("labels group by context", strstr(t, "context CachedPlanSource;") &&
				strstr(t, "context CacheMemoryContext;") && strstr(t, "context #9 16000\n") &&
				strstr(t, "context current: CacheMemoryContext;[anon]+0x2000;[anon]+0x1000 32000\n") &&
				strstr(t, "context (none);"), "collapsed:\n%s", t);
	}
	o.group_by = HP_GROUP_FUNCTION;
	o.with_queryid = true;
	o.queryid = (uint64_t) -5;
	if (run("labels filter by queryid", &o, HP_REPORT_STACKS, false, &r))
		T_CHECK("labels filter by queryid", r.graph.npaths == 1 && r.graph.paths[0].bytes == 2000 &&
				strcmp(hp_labels_context(&r.profile, &r.graph.paths[0]), "CacheMemoryContext") == 0,
				"%zu paths", r.graph.npaths);
	o.with_queryid = false;
	o.context = "#9";
	if (run("labels filter by context", &o, HP_REPORT_STACKS, false, &r))
		T_CHECK("labels filter by context", r.graph.npaths == 1 && r.graph.paths[0].bytes == 16000 &&
				r.graph.paths[0].nframes == 0, "%zu paths", r.graph.npaths);
	o.context = NULL;
	if (run("labels diff by context name", &o, HP_REPORT_STACKS, true, &r))
	{
		size_t		n = 0;
		double		bytes = 0;

		for (size_t k = 0; k < r.graph.npaths; k++)
			if (r.graph.paths[k].queryid == 12345)
			{
				n++;
				bytes += r.graph.paths[k].bytes;
			}
		T_CHECK("labels diff by context name", n == 1 && bytes == 600, "%zu paths, %g bytes", n, bytes);
	}
	if (run("labels bytes by queryid", &o, HP_REPORT_QUERIES, true, &r))
		T_CHECK("labels bytes by queryid", r.nqueries == 3 && !r.queries[0].has_queryid &&
				r.queries[0].bytes == 60000 && r.queries[1].queryid == (uint64_t) -5 &&
				r.queries[2].queryid == 12345 && r.queries[2].bytes == 600 &&
				strcmp(r.queries[2].text, "SELECT 1") == 0 && r.queries[0].text == NULL,
				"%zu rows", r.nqueries);
	if (run("labels in pprof", &o, HP_REPORT_PPROF, false, &r))
	{
		char		pb[65536];
		z_stream	z;
		bool		ok;

		memset(&z, 0, sizeof(z));
		ok = inflateInit2(&z, 15 + 16) == Z_OK;
		z.next_in = (Bytef *) r.text.data;
		z.avail_in = (uInt) r.text.len;
		z.next_out = (Bytef *) pb;
		z.avail_out = sizeof(pb) - 1;
		ok = ok && inflate(&z, Z_FINISH) == Z_STREAM_END;
		inflateEnd(&z);
		pb[sizeof(pb) - 1 - z.avail_out] = '\0';
		/* the strings are in the string table; a label is key, str: 0a 07 "queryid" ... */
		T_CHECK("labels in pprof", ok && memmem(pb, sizeof(pb) - 1 - z.avail_out, "\x07queryid", 8) &&
				memmem(pb, sizeof(pb) - 1 - z.avail_out, "\x02-5", 3) &&
				memmem(pb, sizeof(pb) - 1 - z.avail_out, "\x10" "CachedPlanSource", 17),
				"no label strings in the profile");
	}
}

/* The writer's tables come back through the reader. */
static void
test_round_trip(void)
{
	hp_context_slot contexts[3] = {{0}};
	hp_query_slot queries[2] = {{0}};
	hp_identity id = {0};
	static char buf[HP_IDENTITY_MAX + 16];
	size_t		n;
	hp_profile	p;
	char		err[256];

	snprintf(contexts[2].name, sizeof(contexts[2].name), "a\nb\\c");
	queries[1].queryid = (uint64_t) -7;
	snprintf(queries[1].text, sizeof(queries[1].text), "SELECT '\x01'");
	id.contexts = contexts;
	id.ncontexts = 3;
	id.queries = queries;
	id.nqueries = 2;
	n = hp_format_identity(buf, sizeof(buf), &id);
	memcpy(buf + n, "heap_v2/1\n", 11);
	T_CHECK("label lines written", t_parse(&arena, buf, &p, err, sizeof(err)) == HP_OK &&
			p.label_slots.count == 1 && strcmp(p.slot_names[0], "a\nb\\c") == 0 &&
			strcmp(hp_labels_query_text(&p, (uint64_t) -7), "SELECT '\x01'") == 0,
			"%s", buf);
}

/* More label lines than a reader keeps. */
static void
test_bounded(void)
{
	size_t		size = (HP_MAX_LABEL_NAMES + 100) * 40 + 64;
	char	   *text = malloc(size);
	size_t		n = 0;
	hp_profile	p;
	char		err[256];

	for (int i = 0; i < HP_MAX_LABEL_NAMES + 100; i++)
		n += (size_t) snprintf(text + n, size - n, "%%heapprof-label-context %x c%d\n", i, i);
	snprintf(text + n, size - n, "heap_v2/1\n");
	T_CHECK("label lines bounded", t_parse(&arena, text, &p, err, sizeof(err)) == HP_OK &&
			p.label_slots.count == HP_MAX_LABEL_NAMES, "%zu names", p.label_slots.count);
	free(text);
}

int
main(void)
{
	t_env_init(&env);
	hp_arena_init(&arena, &env.env);
	symbolizer = hp_symbolizer_new();
	test_parse();
	test_reports();
	test_round_trip();
	test_bounded();
	hp_arena_free(&arena);
	hp_symbolizer_free(symbolizer);
	T_CHECK("labels free what they took", env.allocs == 0, "%ld blocks live", env.allocs);
	return t_exit();
}
