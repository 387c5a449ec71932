/*
 * test_recent.c -- prof_recent JSON to heap_v2 text (recent.c): jemalloc's
 * real output, windows and picks, grouping, the truncated flag, every
 * malformed form, and the round trip through hp_parse and hp_unsample.
 */
#include "test.h"

#include "engine/recent.h"

#include <stdint.h>

/* Debian's jemalloc 5.3.0 with lg_prof_sample:0 */
static const char real[] =
	"{\"sample_interval\":1,\"recent_alloc_max\":100,\"recent_alloc\":[{\"size\":1000,\"usize\":1024,"
	"\"released\":false,\"alloc_thread_uid\":0,\"alloc_time\":9315433334340,\"alloc_trace\":["
	"\"0x7f7358ea2630\",\"0x7f7358ea2d21\",\"0x7f7358e95f24\",\"0x7f7358e22045\",\"0x55737d268315\","
	"\"0x7f7358c4524a\",\"0x7f7358c45305\",\"0x55737d2680d1\"]},{\"size\":3000,\"usize\":3072,"
	"\"released\":true,\"alloc_thread_uid\":0,\"alloc_time\":9315433334340,\"alloc_trace\":["
	"\"0x7f7358ea2630\",\"0x7f7358ea2d21\",\"0x7f7358e95f24\",\"0x7f7358e22045\",\"0x55737d268323\","
	"\"0x7f7358c4524a\",\"0x7f7358c45305\",\"0x55737d2680d1\"],\"dalloc_thread_uid\":0,"
	"\"dalloc_time\":9315433334340,\"dalloc_trace\":[\"0x7f7358ea2630\",\"0x7f7358ea2d21\","
	"\"0x7f7358e95f24\",\"0x7f7358ea1d63\",\"0x7f7358e2705d\",\"0x55737d268333\",\"0x7f7358c4524a\","
	"\"0x7f7358c45305\",\"0x55737d2680d1\"]}]}";

static const char real_heap[] =
	"heap_v2/1\n"
	"  t*: 2: 4096 [0: 0]\n"
	"@ 0x7f7358ea2630 0x7f7358ea2d21 0x7f7358e95f24 0x7f7358e22045 0x55737d268315 "
	"0x7f7358c4524a 0x7f7358c45305 0x55737d2680d1\n"
	"  t*: 1: 1024 [0: 0]\n"
	"@ 0x7f7358ea2630 0x7f7358ea2d21 0x7f7358e95f24 0x7f7358e22045 0x55737d268323 "
	"0x7f7358c4524a 0x7f7358c45305 0x55737d2680d1\n"
	"  t*: 1: 3072 [0: 0]\n"
	"\n";

/*
 * Five records, keys in several orders, unknown keys with nested values:
 * A at 100 live; B at 200 freed at 250; C at 300 freed at 900; D at 400
 * released without dalloc_time; E at 500 live.  A, C and E share a trace.
 */
static const char five[] =
	"{ \"recent_alloc\" : [\n"
	"  {\"usize\": 16, \"released\": false, \"alloc_time\": 100, \"alloc_trace\": [\"0x10\", \"0x20\"]},\n"
	"  {\"alloc_trace\": [\"0x11\"], \"alloc_time\": 200, \"x\": {\"a\": [1, -2.5e+3, {\"b\": null}], \"c\": \"\\\"\\u00e9\"},"
	"   \"usize\": 32, \"released\": true, \"dalloc_time\": 250, \"dalloc_trace\": [\"0x99\"]},\n"
	"  {\"usize\": 64, \"alloc_time\": 300, \"released\": true, \"dalloc_time\": 900, \"alloc_trace\": [\"0x10\", \"0x20\"]},\n"
	"  {\"usize\": 128, \"alloc_time\": 400, \"released\": true, \"alloc_trace\": [\"0x12\"], \"alloc_thread_name\": \"w\"},\n"
	"  {\"usize\": 256, \"alloc_time\": 500, \"released\": false, \"alloc_trace\": [\"0X10\", \"0x0020\"]}\n"
	"], \"future\": [[[]], {}, true, false, null, 0], \"recent_alloc_max\": -1, \"sample_interval\": 524288 }\n";

static hp_arena arena;
static t_env env;

/* Convert json (copied to an exact-size block) into *text; the status. */
static hp_status
convert(const char *json, size_t len, int64_t from, int64_t to, hp_recent_pick pick,
		char **text, size_t *text_len, hp_recent_stats *st, char *err, size_t errlen)
{
	hp_buf		out;
	hp_status	rc;

	hp_buf_init(&out, &arena);
	err[0] = '\0';
	rc = hp_recent_to_heap(&arena, t_exact(json, len), len, from, to, pick, &out, st, err, errlen);
	*text = out.data;
	*text_len = out.len;
	return rc;
}

/* The text parsed with maps appended, as the caller does: sum of its stacks and the total line. */
static bool
parses(const char *text, size_t len, hp_profile *p, char *err, size_t errlen)
{
	static const char maps[] = "\nMAPPED_LIBRARIES:\n00400000-00401000 r-xp 00000000 08:01 42 /usr/bin/prog\n";
	char	   *all = malloc(len + sizeof(maps));
	unsigned long long objs;
	unsigned long long bytes;
	double		sum_objs = 0;
	double		sum_bytes = 0;
	bool		ok;

	memcpy(all, text, len);
	memcpy(all + len, maps, sizeof(maps));
	ok = t_parse(&arena, all, p, err, errlen) == HP_OK && p->maps_len > 0 &&
		sscanf(strchr(all, '\n') + 1, "  t*: %llu: %llu [0: 0]", &objs, &bytes) == 2;
	free(all);
	for (size_t i = 0; ok && i < p->nsamples; i++)
	{
		sum_objs += p->samples[i].objs;
		sum_bytes += p->samples[i].bytes;
	}
	return ok && sum_objs == (double) objs && sum_bytes == (double) bytes;
}

static void
test_real(void)
{
	hp_recent_stats st;
	hp_profile	p;
	char	   *text;
	size_t		len;
	char		err[256];
	hp_status	rc = convert(real, strlen(real), 0, INT64_MAX, HP_RECENT_ALLOCATED,
							 &text, &len, &st, err, sizeof(err));

	T_CHECK("real: converts", rc == HP_OK, "status %d: %s", rc, err);
	if (rc != HP_OK)
		return;
	T_CHECK("real: heap_v2 text", len == strlen(real_heap) && strcmp(text, real_heap) == 0,
			"got:\n%s", text);
	T_CHECK("real: stats", st.sample_interval == 1 && st.records == 2 && st.max_records == 100 &&
			st.picked == 2 && !st.truncated, "%llu %llu %lld %llu %d",
			(unsigned long long) st.sample_interval, (unsigned long long) st.records,
			(long long) st.max_records, (unsigned long long) st.picked, st.truncated);
	T_CHECK("real: hp_parse reads it, totals are the sum of the stacks",
			parses(text, len, &p, err, sizeof(err)) && p.rate == 1 && p.nsamples == 2 &&
			p.samples[0].npcs == 8 && p.samples[0].pcs[0] == 0x7f7358ea2630ULL &&
			p.samples[0].pcs[4] == 0x55737d268314ULL && p.samples[1].bytes == 3072,
			"%s; %zu samples", err, p.nsamples);

	rc = convert(real, strlen(real), 0, INT64_MAX, HP_RECENT_LIVE, &text, &len, &st, err, sizeof(err));
	T_CHECK("real: live is the record not released", rc == HP_OK && st.picked == 1 &&
			strstr(text, "0x55737d268315") && !strstr(text, "0x55737d268323") &&
			strstr(text, "  t*: 1: 1024 [0: 0]\n@"), "%s", text);
}

/* The picked count, and the first stack's t* line (or ""), of five over [from, to]. */
static void
expect_pick(const char *name, int64_t from, int64_t to, hp_recent_pick pick,
			uint64_t picked, const char *total, const char *first_stack)
{
	hp_recent_stats st;
	hp_profile	p;
	char	   *text;
	size_t		len;
	char		err[256];
	hp_status	rc = convert(five, strlen(five), from, to, pick, &text, &len, &st, err, sizeof(err));
	const char *stack = rc == HP_OK ? strchr(text, '@') : NULL;

	T_CHECK(name, rc == HP_OK && st.picked == picked && strstr(text, total) == strchr(text, '\n') + 1 &&
			(first_stack == NULL ? stack == NULL : stack && strstr(stack, first_stack) == stack) &&
			parses(text, len, &p, err, sizeof(err)),
			"status %d, %llu picked: %s\n%s", rc, (unsigned long long) st.picked, err, rc == HP_OK ? text : "");
}

static void
test_window_and_picks(void)
{
	expect_pick("window: everything", INT64_MIN, INT64_MAX, HP_RECENT_ALLOCATED, 5,
				"  t*: 5: 496 [0: 0]\n", "@ 0x10 0x20\n  t*: 3: 336 [0: 0]\n@ 0x11\n  t*: 1: 32");
	expect_pick("window: bounds are inclusive", 200, 400, HP_RECENT_ALLOCATED, 3,
				"  t*: 3: 224 [0: 0]\n", "@ 0x11\n  t*: 1: 32 [0: 0]\n@ 0x10 0x20\n  t*: 1: 64");
	expect_pick("window: one instant", 300, 300, HP_RECENT_ALLOCATED, 1,
				"  t*: 1: 64 [0: 0]\n", "@ 0x10 0x20\n  t*: 1: 64 [0: 0]\n\n");
	expect_pick("window: from after to picks nothing", 400, 300, HP_RECENT_ALLOCATED, 0,
				"  t*: 0: 0 [0: 0]\n", NULL);
	expect_pick("window: before every record", 0, 99, HP_RECENT_ALLOCATED, 0,
				"  t*: 0: 0 [0: 0]\n", NULL);
	/* up to 600: B freed at 250, D released without a time; C is freed at 900 */
	expect_pick("pick freed: released by the end, or without dalloc_time", 0, 600, HP_RECENT_FREED, 2,
				"  t*: 2: 160 [0: 0]\n", "@ 0x11\n  t*: 1: 32 [0: 0]\n@ 0x12\n  t*: 1: 128");
	expect_pick("pick live: not released, or freed after the end", 0, 600, HP_RECENT_LIVE, 3,
				"  t*: 3: 336 [0: 0]\n", "@ 0x10 0x20\n  t*: 3: 336 [0: 0]\n\n");
	expect_pick("pick freed: at the end counts", 0, 900, HP_RECENT_FREED, 3,
				"  t*: 3: 224 [0: 0]\n", "@ 0x11\n");
	expect_pick("pick live: a window before the free", 250, 350, HP_RECENT_LIVE, 1,
				"  t*: 1: 64 [0: 0]\n", "@ 0x10 0x20\n  t*: 1: 64 [0: 0]\n\n");
	expect_pick("pick live: released without dalloc_time is not live", 400, 400, HP_RECENT_LIVE, 0,
				"  t*: 0: 0 [0: 0]\n", NULL);
}

static void
test_stats(void)
{
	hp_recent_stats st;
	char	   *text;
	size_t		len;
	char		err[256];
	const char *full = "{\"sample_interval\":1,\"recent_alloc_max\":2,\"recent_alloc\":["
		"{\"usize\":8,\"released\":false,\"alloc_time\":50,\"alloc_trace\":[\"0x1\"]},"
		"{\"usize\":8,\"released\":false,\"alloc_time\":40,\"alloc_trace\":[]}]}";
	const char *room = "{\"sample_interval\":1,\"recent_alloc_max\":3,\"recent_alloc\":["
		"{\"usize\":8,\"released\":false,\"alloc_time\":50,\"alloc_trace\":[\"0x1\"]}]}";
	const char *none = "{\"sample_interval\":1,\"recent_alloc_max\":0,\"recent_alloc\":[]}";

	T_CHECK("truncated: full ring, oldest record in the window",
			convert(full, strlen(full), 40, 100, HP_RECENT_ALLOCATED, &text, &len, &st, err, sizeof(err)) == HP_OK &&
			st.truncated && st.records == 2 && st.max_records == 2, "%s", err);
	T_CHECK("truncated: a record with an empty trace is not written",
			st.picked == 1 && strstr(text, "  t*: 1: 8 [0: 0]\n@ 0x1\n"), "%s", text);
	T_CHECK("truncated: not when the oldest record is older than the window",
			convert(full, strlen(full), 41, 100, HP_RECENT_ALLOCATED, &text, &len, &st, err, sizeof(err)) == HP_OK &&
			!st.truncated, "%s", err);
	T_CHECK("truncated: not when the ring has room",
			convert(room, strlen(room), 0, 100, HP_RECENT_ALLOCATED, &text, &len, &st, err, sizeof(err)) == HP_OK &&
			!st.truncated && st.max_records == 3, "%s", err);
	T_CHECK("truncated: not when unlimited (-1)",
			convert(five, strlen(five), 0, 100, HP_RECENT_ALLOCATED, &text, &len, &st, err, sizeof(err)) == HP_OK &&
			!st.truncated && st.max_records == -1 && st.records == 5 && st.sample_interval == 524288, "%s", err);
	T_CHECK("truncated: not with recent_alloc_max 0, and no records parse",
			convert(none, strlen(none), 0, 100, HP_RECENT_ALLOCATED, &text, &len, &st, err, sizeof(err)) == HP_OK &&
			!st.truncated && st.records == 0 && strcmp(text, "heap_v2/1\n  t*: 0: 0 [0: 0]\n\n") == 0,
			"%s", err);
}

static void
expect_error(const char *name, const char *json, const char *message)
{
	hp_recent_stats st;
	hp_buf		out;
	char		err[256];
	size_t		len = strlen(json);
	hp_status	rc;

	hp_buf_init(&out, &arena);
	hp_buf_append(&out, "kept", 4);
	err[0] = '\0';
	rc = hp_recent_to_heap(&arena, t_exact(json, len), len, 0, INT64_MAX, HP_RECENT_ALLOCATED,
						   &out, &st, err, sizeof(err));
	T_CHECK(name, rc == HP_EFORMAT && strstr(err, message) && out.len == 4 && st.records == 0,
			"status %d, message \"%s\", %zu bytes out", rc, err, out.len);
}

#define HEAD "{\"sample_interval\":1,\"recent_alloc_max\":1,\"recent_alloc\":["
#define REC(fields) "{\"usize\":8,\"released\":false,\"alloc_time\":1,\"alloc_trace\":[\"0x1\"]" fields "}"

/* Every cut of json before its last '}' is malformed (each in an exact block). */
static void
test_prefixes(const char *name, const char *json)
{
	size_t		len = (size_t) (strrchr(json, '}') - json);
	size_t		wrong = SIZE_MAX;

	for (size_t n = 0; n <= len && wrong == SIZE_MAX; n++)
	{
		hp_recent_stats st;
		hp_buf		out;
		char		err[256];
		char	   *copy = malloc(n ? n : 1);

		memcpy(copy, json, n);
		hp_buf_init(&out, &arena);
		if (hp_recent_to_heap(&arena, copy, n, 0, INT64_MAX, HP_RECENT_ALLOCATED,
							  &out, &st, err, sizeof(err)) != HP_EFORMAT)
			wrong = n;
		free(copy);
	}
	T_CHECK(name, wrong == SIZE_MAX, "the first %zu bytes are accepted", wrong);
}

/* [[[...]]] nested depth deep as an unknown value of the dump. */
static char *
nested(size_t depth)
{
	char	   *s = malloc(depth * 2 + sizeof(HEAD) + 16);
	size_t		len = (size_t) sprintf(s, "%s], \"x\": ", HEAD);

	memset(s + len, '[', depth);
	memset(s + len + depth, ']', depth);
	strcpy(s + len + 2 * depth, "}");
	return s;
}

static void
test_malformed(void)
{
	char	   *deep;

	test_prefixes("malformed: every prefix of the real output", real);
	test_prefixes("malformed: every prefix of a hand-written dump", five);
	expect_error("malformed: empty input", "", "at byte 0: expected a JSON object");
	expect_error("malformed: an array", "[]", "at byte 0: expected a JSON object");
	expect_error("malformed: text after the object", HEAD "]} x", "at byte 61: text after the JSON object");
	expect_error("malformed: two objects", HEAD "]}{}", "text after the JSON object");
	{
		static const char nul[] = HEAD "]}\0";
		hp_recent_stats st;
		hp_buf		out;
		char		err[256];

		hp_buf_init(&out, &arena);
		T_CHECK("malformed: a NUL byte after the object",
				hp_recent_to_heap(&arena, t_exact(nul, sizeof(nul)), sizeof(nul), 0, 1,
								  HP_RECENT_ALLOCATED, &out, &st, err, sizeof(err)) == HP_EFORMAT &&
				strstr(err, "text after the JSON object"), "%s", err);
	}
	expect_error("malformed: missing keys", "{\"sample_interval\":1,\"recent_alloc\":[]}",
				 "no sample_interval, recent_alloc_max or recent_alloc");
	expect_error("malformed: a record lacking alloc_time",
				 HEAD "{\"usize\":8,\"released\":false,\"alloc_trace\":[]}]}",
				 "a record without usize, released, alloc_time or alloc_trace");
	expect_error("malformed: repeated key", HEAD REC(",\"usize\":8") "]}", "repeated key");
	expect_error("malformed: repeated recent_alloc", HEAD "], \"recent_alloc\":[]}", "repeated key");
	expect_error("malformed: usize as a string", HEAD "{\"usize\":\"8\"}]}", "expected a non-negative integer");
	expect_error("malformed: negative usize", HEAD "{\"usize\":-8}]}", "expected a non-negative integer");
	expect_error("malformed: usize 1.5", HEAD "{\"usize\":1.5}]}", "number is not an integer");
	expect_error("malformed: usize 1e3", HEAD "{\"usize\":1e3}]}", "number is not an integer");
	expect_error("malformed: released as a number", HEAD "{\"released\":1}]}", "expected true or false");
	expect_error("malformed: released as truex", HEAD "{\"released\":truex}]}", "expected ',' or '}'");
	expect_error("malformed: a record that is not an object", HEAD "[1]]}", "expected a record object");
	expect_error("malformed: recent_alloc not an array", "{\"recent_alloc\":{}}", "expected an array of records");
	expect_error("malformed: trace not an array", HEAD "{\"alloc_trace\":\"0x1\"}]}", "expected an array of addresses");
	expect_error("malformed: address as a number", HEAD "{\"alloc_trace\":[1]}]}", "expected a string");
	expect_error("malformed: address not hex", HEAD "{\"alloc_trace\":[\"0xzz\"]}]}", "not a hex number");
	expect_error("malformed: empty address", HEAD "{\"alloc_trace\":[\"\"]}]}", "not a hex number");
	expect_error("malformed: address with an escape", HEAD "{\"alloc_trace\":[\"0x1\\u0030\"]}]}",
				 "not a hex number");
	expect_error("malformed: address beyond 64 bits", HEAD "{\"alloc_trace\":[\"0x12345678901234567\"]}]}",
				 "not a hex number");
	expect_error("malformed: usize 2^63", HEAD "{\"usize\":9223372036854775808}]}", "number beyond 2^63-1");
	expect_error("malformed: alloc_time of 30 digits", HEAD "{\"alloc_time\":123456789012345678901234567890}]}",
				 "number beyond 2^63-1");
	expect_error("malformed: recent_alloc_max below -(2^63-1)", "{\"recent_alloc_max\":-9223372036854775808}",
				 "number beyond 2^63-1");
	expect_error("malformed: sample_interval 0", "{\"sample_interval\":0}", "sample_interval outside 1..2^53");
	expect_error("malformed: sample_interval 2^53+1", "{\"sample_interval\":9007199254740993}",
				 "sample_interval outside 1..2^53");
	expect_error("malformed: picked bytes beyond 2^63-1",
				 HEAD "{\"usize\":4611686018427387904,\"released\":false,\"alloc_time\":1,\"alloc_trace\":[\"0x1\"]},"
				 "{\"usize\":4611686018427387904,\"released\":false,\"alloc_time\":1,\"alloc_trace\":[\"0x2\"]}]}",
				 "picked bytes beyond 2^63-1");
	expect_error("malformed: trailing comma", HEAD REC("") ",]}", "expected a record object");
	expect_error("malformed: leading comma", HEAD "," REC("") "]}", "expected a record object");
	expect_error("malformed: missing comma", HEAD REC("") REC("") "]}", "expected ',' or ']'");
	expect_error("malformed: missing colon", "{\"sample_interval\" 1}", "expected ':'");
	expect_error("malformed: unterminated string", "{\"sample_interval", "unterminated string");
	expect_error("malformed: control character in a key", "{\"a\nb\":1}", "control character in a string");
	expect_error("malformed: bad escape", "{\"a\\x\":1}", "bad escape");
	expect_error("malformed: short \\u escape", "{\"a\\u12\":1}", "bad \\u escape");
	expect_error("malformed: unknown value is a bare word", HEAD "], \"x\": nul}", "expected a value");
	expect_error("malformed: unknown number 1.", HEAD "], \"x\": 1.}", "expected a digit");
	expect_error("malformed: unknown number -", HEAD "], \"x\": -}", "expected a value");
	expect_error("malformed: unknown value with mismatched brackets", HEAD "], \"x\": [1}}", "expected ',' or ']'");
	expect_error("malformed: unknown object with a number key", HEAD "], \"x\": {1: 2}}", "expected a string");
	expect_error("malformed: unknown value unterminated", HEAD "], \"x\": [[1, {\"a\": [", "expected a value");
	deep = nested(64);
	{
		hp_recent_stats st;
		hp_buf		out;
		char		err[256];

		hp_buf_init(&out, &arena);
		T_CHECK("nesting: an unknown value 64 deep is skipped",
				hp_recent_to_heap(&arena, deep, strlen(deep), 0, 1, HP_RECENT_ALLOCATED,
								  &out, &st, err, sizeof(err)) == HP_OK, "%s", err);
	}
	free(deep);
	deep = nested(65);
	expect_error("nesting: 65 deep is malformed", deep, "values nested deeper than 64 levels");
	free(deep);
	deep = nested(1000000);
	expect_error("nesting: a million deep is malformed, without recursion", deep,
				 "values nested deeper than 64 levels");
	free(deep);
}

/* A record whose trace has n frames. */
static char *
long_trace(size_t n)
{
	char	   *s = malloc(sizeof(HEAD) + 128 + n * 10);
	size_t		len = (size_t) sprintf(s, "%s{\"usize\":8,\"released\":false,\"alloc_time\":1,\"alloc_trace\":[", HEAD);

	for (size_t i = 0; i < n; i++)
		len += (size_t) sprintf(s + len, "%s\"0x%zx\"", i ? "," : "", (i % 4096) + 16);
	strcpy(s + len, "]}]}");
	return s;
}

static void
test_frame_cap(void)
{
	hp_recent_stats st;
	hp_profile	p;
	char	   *at = long_trace(HP_MAX_FRAMES);
	char	   *over = long_trace(HP_MAX_FRAMES + 1);
	char	   *text;
	size_t		len;
	char		err[256];

	T_CHECK("frame cap: 65536 frames are written and parsed",
			convert(at, strlen(at), 0, 1, HP_RECENT_ALLOCATED, &text, &len, &st, err, sizeof(err)) == HP_OK &&
			parses(text, len, &p, err, sizeof(err)) && p.nsamples == 1 && p.samples[0].npcs == HP_MAX_FRAMES,
			"%s", err);
	expect_error("frame cap: 65537 frames are malformed", over, "a trace of more than 65536 frames");
	free(at);
	free(over);
}

/* The unsampled result of a recent dump equals that of the same counts written by hand. */
static void
test_round_trip(void)
{
	static const char json[] =
		"{\"sample_interval\":524288,\"recent_alloc_max\":100,\"recent_alloc\":["
		"{\"usize\":112,\"released\":false,\"alloc_time\":1,\"alloc_trace\":[\"0x4000\",\"0x3001\",\"0x2001\"]},"
		"{\"usize\":1048576,\"released\":false,\"alloc_time\":2,\"alloc_trace\":[\"0x5000\",\"0x2001\"]},"
		"{\"usize\":208,\"released\":true,\"alloc_time\":3,\"alloc_trace\":[\"0x4000\",\"0x3001\",\"0x2001\"]},"
		"{\"usize\":48,\"released\":false,\"alloc_time\":4,\"alloc_trace\":[\"0x4000\",\"0x3001\",\"0x2001\"]}]}";
	static const char hand[] =
		"heap_v2/524288\n"
		"  t*: 4: 1048944 [0: 0]\n"
		"@ 0x4000 0x3001 0x2001\n"
		"  t*: 3: 368 [0: 0]\n"
		"@ 0x5000 0x2001\n"
		"  t*: 1: 1048576 [0: 0]\n"
		"\n"
		"MAPPED_LIBRARIES:\n";
	hp_recent_stats st;
	hp_profile	p;
	hp_profile	q;
	char	   *text;
	size_t		len;
	char		err[256];
	bool		same;

	if (convert(json, strlen(json), 0, 10, HP_RECENT_ALLOCATED, &text, &len, &st, err, sizeof(err)) != HP_OK ||
		!parses(text, len, &p, err, sizeof(err)) || t_parse(&arena, hand, &q, err, sizeof(err)) != HP_OK)
	{
		t_fail("round trip", "%s", err);
		return;
	}
	hp_unsample(&p);
	hp_unsample(&q);
	same = p.rate == q.rate && p.nsamples == 2 && q.nsamples == 2;
	for (size_t i = 0; same && i < p.nsamples; i++)
	{
		same = p.samples[i].objs == q.samples[i].objs && p.samples[i].bytes == q.samples[i].bytes &&
			p.samples[i].npcs == q.samples[i].npcs;
		for (uint32_t k = 0; same && k < p.samples[i].npcs; k++)
			same = p.samples[i].pcs[k] == q.samples[i].pcs[k];
	}
	T_CHECK("round trip: unsampled as the hand-written heap_v2", same, "%s", text);
	T_CHECK("round trip: unsampling scaled small objects up",
			same && p.samples[0].bytes > 368 * 1000 && p.samples[1].bytes > 1048576,
			"%.17g %.17g", p.samples[0].bytes, p.samples[1].bytes);
}

/* Many records: interrupts fire while reading, and errors leave nothing behind. */
static void
test_env(void)
{
	size_t		n = 20000;
	char	   *json = malloc(64 + n * 96);
	size_t		len = (size_t) sprintf(json, "%s", HEAD);
	t_env		e;
	hp_arena	a;
	hp_recent_stats st;
	hp_buf		out;
	char		err[256];
	hp_status	rc;
	jmp_buf		jb;
	int			jumped;

	for (size_t i = 0; i < n; i++)
		len += (size_t) sprintf(json + len, "%s{\"usize\":8,\"released\":false,\"alloc_time\":%zu,"
								"\"alloc_trace\":[\"0x%zx\",\"0x2\"]}", i ? "," : "", i, i % 1000);
	len += (size_t) sprintf(json + len, "]}");

	t_env_init(&e);
	hp_arena_init(&a, &e.env);
	hp_buf_init(&out, &a);
	rc = hp_recent_to_heap(&a, json, len, 0, INT64_MAX, HP_RECENT_ALLOCATED, &out, &st, err, sizeof(err));
	T_CHECK("env: 20000 records in 1000 stacks", rc == HP_OK && st.picked == n &&
			strstr(out.data, "@ 0x3e7 0x2\n  t*: 20: 160 [0: 0]\n"), "status %d: %s", rc, err);
	T_CHECK("env: the work is counted", e.interrupts > 0, "%ld interrupts", e.interrupts);
	hp_arena_free(&a);

	t_env_init(&e);
	e.jump_at_interrupt = 1;
	hp_arena_init(&a, &e.env);
	hp_buf_init(&out, &a);
	e.jump = &jb;
	jumped = setjmp(jb);
	if (jumped == 0)
		hp_recent_to_heap(&a, json, len, 0, INT64_MAX, HP_RECENT_ALLOCATED, &out, &st, err, sizeof(err));
	e.jump = NULL;
	hp_arena_free(&a);
	T_CHECK("env: an interrupt jumps out, nothing leaks", jumped == 2 && e.allocs == 0,
			"jumped %d, %ld blocks live", jumped, e.allocs);

	t_env_init(&e);
	e.fail_at = 3;
	hp_arena_init(&a, &e.env);
	hp_buf_init(&out, &a);
	e.jump = &jb;
	jumped = setjmp(jb);
	if (jumped == 0)
		hp_recent_to_heap(&a, json, len, 0, INT64_MAX, HP_RECENT_ALLOCATED, &out, &st, err, sizeof(err));
	e.jump = NULL;
	hp_arena_free(&a);
	T_CHECK("env: out of memory is raised through the env, nothing leaks",
			jumped == 1 && e.code == HP_ENOMEM && e.allocs == 0,
			"jumped %d, code %d, %ld blocks live", jumped, e.code, e.allocs);
	free(json);
}

int
main(void)
{
	t_env_init(&env);
	hp_arena_init(&arena, &env.env);
	test_real();
	test_window_and_picks();
	test_stats();
	test_malformed();
	test_frame_cap();
	test_round_trip();
	test_env();
	hp_arena_free(&arena);
	T_CHECK("recent frees what it took", env.allocs == 0, "%ld blocks live", env.allocs);
	return t_exit();
}
