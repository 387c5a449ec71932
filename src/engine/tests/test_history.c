/*
 * test_history.c -- the tick file (history.c): the exact text of a small
 * tick, the round trip of hostile names, the reader's canonical form
 * (every one-byte change is refused or rewrites to itself), every cut
 * refused, each malformed line with its message, a large tick's size and
 * speed, and the environment's errors.
 */
#include "test.h"

#include "engine/history.h"

#include <stdint.h>
#include <time.h>

/* Sanitizers make the engine three to four times slower. */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

static hp_arena arena;
static t_env env;

static double
cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Read text (copied to an exact-size block, so ASan sees a read past it). */
static hp_status
rd(const char *text, size_t len, hp_hist_tick *t, char *err, size_t errlen)
{
	char	   *copy = malloc(len ? len : 1);
	hp_status	rc;

	memcpy(copy, text, len);
	rc = hp_hist_read(&arena, copy, len, t, err, errlen);
	free(copy);
	return rc;
}

static char *
wr(const hp_hist_tick *t, size_t *len)
{
	hp_buf		out;

	hp_buf_init(&out, &arena);
	hp_hist_write(&out, t);
	*len = out.len;
	return out.data;
}

static bool
same_str(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

/* Do a and b hold the same processes and rows? */
static bool
same_tick(const hp_hist_tick *a, const hp_hist_tick *b)
{
	if (a->time != b->time || a->interval != b->interval || a->nprocs != b->nprocs)
		return false;
	for (size_t i = 0; i < a->nprocs; i++)
	{
		const hp_hist_proc *p = &a->procs[i];
		const hp_hist_proc *q = &b->procs[i];

		if (p->pid != q->pid || p->start != q->start || p->role != q->role ||
			p->database != q->database || !same_str(p->backend_type, q->backend_type) ||
			!same_str(p->application, q->application) || !same_str(p->encoding, q->encoding) ||
			p->nrows != q->nrows)
			return false;
		for (size_t k = 0; k < p->nrows; k++)
			if (p->rows[k].kind != q->rows[k].kind || !same_str(p->rows[k].name, q->rows[k].name) ||
				p->rows[k].bytes != q->rows[k].bytes || p->rows[k].outside != q->rows[k].outside)
				return false;
	}
	return true;
}

/* ---- a small tick and its exact text ---- */

static hp_hist_row rows1[] = {
	{HP_HIST_TOTAL, "heap", 5242880, 1048576},
	{HP_HIST_FUNCTION, "ExecInitNode", 2097152, 0},
	{HP_HIST_CONTEXT, "current: TopMemoryContext", 1048576, 1048576},
};
static hp_hist_row rows2[] = {
	{HP_HIST_TOTAL, "heap", 1000, -1},
	{HP_HIST_QUERY, "-4242", 600, -1},
	{HP_HIST_FUNCTION, HP_HIST_REST, 400, -1},
};
static hp_hist_proc procs_small[] = {
	{.pid = 4242, .start = 1767225000000000, .role = 10, .database = 16384,
	.backend_type = "client backend", .application = "psql", .encoding = "UTF8", .rows = rows1, .nrows = 3},
	{.pid = 4243, .start = 1767225001000000, .backend_type = "autovacuum worker", .application = "",
	.encoding = "", .rows = rows2, .nrows = 3},
};
static const hp_hist_tick small = {1767225600000000, 60000000, procs_small, 2};

static const char small_text[] =
	"heapprof-history 1\n"
	"t 1767225600000000 60000000\n"
	"p 4242 1767225000000000 10 16384 3 client\\x20backend psql UTF8\n"
	"n h heap\n"
	"0 5242880 1048576\n"
	"n f ExecInitNode\n"
	"1 2097152 0\n"
	"n c current:\\x20TopMemoryContext\n"
	"2 1048576 1048576\n"
	"p 4243 1767225001000000 0 0 3 autovacuum\\x20worker - -\n"
	"0 1000 -1\n"
	"n q -4242\n"
	"3 600 -1\n"
	"n f (the\\x20rest)\n"
	"4 400 -1\n"
	"e 2 6\n";

static void
test_format(void)
{
	size_t		len;
	char	   *text = wr(&small, &len);
	hp_hist_tick t;
	char		err[256];
	hp_status	rc;

	T_CHECK("format: the text of a small tick", strcmp(text, small_text) == 0 && len == strlen(small_text),
			"got:\n%s", text);
	rc = rd(small_text, strlen(small_text), &t, err, sizeof(err));
	T_CHECK("format: it reads back as the tick", rc == HP_OK && same_tick(&t, &small), "%d %s", rc, err);
	T_CHECK("format: a name read is one string for all its rows",
			rc == HP_OK && t.procs[0].rows[0].name == t.procs[1].rows[0].name, "not shared");
	T_CHECK("format: an empty tick", strcmp(wr(&(hp_hist_tick) {5, 1, NULL, 0}, &len),
											"heapprof-history 1\nt 5 1\ne 0 0\n") == 0 &&
			rd("heapprof-history 1\nt 5 1\ne 0 0\n", 31, &t, err, sizeof(err)) == HP_OK &&
			t.nprocs == 0 && t.time == 5, "%s", err);
}

/* ---- round trip of hostile text and extreme numbers ---- */

static char all_bytes[256];		/* 0x01..0xff */

static hp_hist_row rows_hostile[] = {
	{HP_HIST_FUNCTION, "with space", 1, 0},
	{HP_HIST_FUNCTION, "new\nline", 2, 1},
	{HP_HIST_FUNCTION, "back\\slash \\x41", 3, 2},
	{HP_HIST_FUNCTION, "\x01\xff\x7f\t\r", 4, 3},
	{HP_HIST_FUNCTION, "-", 5, 4},
	{HP_HIST_FUNCTION, "", 6, 5},
	{HP_HIST_FUNCTION, "\\x2d", 7, 6},
	{HP_HIST_QUERY, "with space", INT64_MAX, INT64_MAX},	/* same name, other kind */
	{HP_HIST_CONTEXT, "caf\xc3\xa9 \xe2\x80\xa8", 0, -1},
	{HP_HIST_FUNCTION, all_bytes, 8, -1},
	{HP_HIST_TOTAL, "heap", 0, 0},
};
static hp_hist_row rows_other[] = {
	{HP_HIST_FUNCTION, "new\nline", 9, 9},
	{HP_HIST_FUNCTION, "with space", 10, 10},
};
static hp_hist_proc procs_hostile[] = {
	{.pid = INT32_MAX, .start = INT64_MIN, .role = UINT32_MAX, .database = UINT32_MAX,
	.backend_type = "a\\b c\nd", .application = "", .encoding = "LATIN1",
	.rows = rows_hostile, .nrows = lengthof(rows_hostile)},
	{.pid = 1, .start = INT64_MAX, .database = 1, .backend_type = "", .application = "-", .encoding = "",
	.rows = rows_other, .nrows = lengthof(rows_other)},
	{.pid = 1, .start = INT64_MIN, .database = 1, .backend_type = "\xff", .application = "\x01",
	.encoding = "SQL_ASCII"},
};
static const hp_hist_tick hostile = {INT64_MIN, INT64_MAX, procs_hostile, lengthof(procs_hostile)};

static void
test_round_trip(void)
{
	size_t		len;
	size_t		len2;
	char	   *text;
	hp_hist_tick t;
	char		err[256];
	hp_status	rc;
	bool		printable = true;

	for (int i = 1; i < 256; i++)
		all_bytes[i - 1] = (char) i;
	text = wr(&hostile, &len);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char) text[i] < 0x20 ? text[i] != '\n' : text[i] == 0x7f)
			printable = false;
	T_CHECK("round trip: no control byte but the line ends", printable && strlen(text) == len, "%s", text);
	rc = rd(text, len, &t, err, sizeof(err));
	T_CHECK("round trip: spaces, newlines, backslashes, 0x01, 0xff, \"-\", empty, every byte",
			rc == HP_OK && same_tick(&t, &hostile), "%d %s\n%s", rc, err, text);
	T_CHECK("round trip: written again, the same text",
			rc == HP_OK && strcmp(wr(&t, &len2), text) == 0 && len2 == len, "differs");
	T_CHECK("round trip: a name repeated in another process is written once",
			strstr(text, "n f with\\x20space\n") && !strstr(strstr(text, "n f with\\x20space\n") + 1,
															"n f with\\x20space") &&
			strstr(text, "n q with\\x20space\n"), "%s", text);
	T_CHECK("round trip: \"-\" is empty, \"\\x2d\" is \"-\"",
			strstr(text, " - \\x2d -\n") && strstr(text, "\nn f \\x2d\n") && strstr(text, "\nn f -\n") &&
			strstr(text, "\nn f \\x5cx2d\n"), "%s", text);
}

/* ---- canonical: a one-byte change is refused or rewrites to itself ---- */

static void
test_canonical(void)
{
	size_t		len;
	char	   *text = wr(&hostile, &len);
	char	   *copy = malloc(len);
	static const char subst[] = "0-19 \\xanfhqcpe\n\x01\xff";
	size_t		accepted = 0;
	size_t		wrong = SIZE_MAX;

	for (size_t i = 0; i < len && wrong == SIZE_MAX; i++)
		for (size_t k = 0; k < sizeof(subst) - 1 && wrong == SIZE_MAX; k++)
		{
			hp_hist_tick t;
			char		err[256];
			size_t		len2;

			if (text[i] == subst[k])
				continue;
			memcpy(copy, text, len);
			copy[i] = subst[k];
			if (hp_hist_read(&arena, copy, len, &t, err, sizeof(err)) != HP_OK)
				continue;
			accepted++;
			if (memcmp(wr(&t, &len2), copy, len) != 0 || len2 != len)
				wrong = i;
		}
	free(copy);
	T_CHECK("canonical: every one-byte change is refused or is the text of what it reads",
			wrong == SIZE_MAX, "a change at byte %zu reads as another text", wrong);
	T_CHECK("canonical: some changes are other ticks (digits, names)", accepted > 0, "none");
}

/* ---- every cut refused ---- */

static void
test_truncated(void)
{
	size_t		len;
	char	   *text = wr(&hostile, &len);
	size_t		wrong = SIZE_MAX;

	for (size_t n = 0; n < len && wrong == SIZE_MAX; n++)
	{
		hp_hist_tick t;
		char		err[256];

		if (rd(text, n, &t, err, sizeof(err)) != HP_EFORMAT || err[0] == '\0' || t.nprocs != 0)
			wrong = n;
	}
	T_CHECK("truncated: every cut of a file is refused, with a message", wrong == SIZE_MAX,
			"the first %zu bytes are accepted", wrong);
	text = wr(&small, &len);
	wrong = SIZE_MAX;
	for (size_t n = 0; n < len && wrong == SIZE_MAX; n++)
	{
		hp_hist_tick t;

		if (rd(text, n, &t, NULL, 0) != HP_EFORMAT)
			wrong = n;
	}
	T_CHECK("truncated: ... also without room for the message", wrong == SIZE_MAX,
			"the first %zu bytes are accepted", wrong);
}

/* ---- malformed ---- */

#define HEAD "heapprof-history 1\nt 100 60\n"
#define PROC "p 7 1 0 0 1 b a e\n"

static void
expect_bad(const char *name, const char *text, const char *message)
{
	hp_hist_tick t;
	char		err[256];
	hp_status	rc = rd(text, strlen(text), &t, err, sizeof(err));

	T_CHECK(name, rc == HP_EFORMAT && strstr(err, message) && t.nprocs == 0 && t.procs == NULL,
			"status %d, \"%s\"", rc, err);
}

static void
expect_good(const char *name, const char *text)
{
	hp_hist_tick t;
	char		err[256];
	hp_status	rc = rd(text, strlen(text), &t, err, sizeof(err));

	T_CHECK(name, rc == HP_OK, "%s", err);
}

static void
test_malformed(void)
{
	char	   *name = malloc(8192);
	char	   *text = malloc(9000);

	expect_good("malformed: the base case is good", HEAD PROC "n f x\n0 1 -1\ne 1 1\n");
	expect_bad("malformed: empty", "", "line 1: no \"heapprof-history 1\" header");
	expect_bad("malformed: another version", "heapprof-history 2\nt 1 1\ne 0 0\n", "header");
	expect_bad("malformed: a heap dump", "heap_v2/524288\n", "header");
	expect_bad("malformed: no t line", "heapprof-history 1\ne 0 0\n", "line 2: no \"t\" line");
	expect_bad("malformed: interval 0", "heapprof-history 1\nt 1 0\ne 0 0\n", "line 2: a number out of its range");
	expect_bad("malformed: a t line with three fields", "heapprof-history 1\nt 1 1 1\ne 0 0\n",
			   "more fields than expected");
	expect_bad("malformed: no e line", HEAD, "line 3: the file ends before its \"e\" line");
	expect_bad("malformed: no newline after the e line", HEAD "e 0 0", "the file ends within a line");
	expect_bad("malformed: text after the e line", HEAD "e 0 0\n\n", "text after the \"e\" line");
	expect_bad("malformed: e counts too many processes", HEAD PROC "n f x\n0 1 -1\ne 2 1\n",
			   "the file has 1 processes and 1 rows, its \"e\" line says 2 and 1");
	expect_bad("malformed: e counts too few rows", HEAD PROC "n f x\n0 1 -1\ne 1 0\n", "says 1 and 0");
	expect_bad("malformed: e with a huge count", HEAD "e 18446744073709551616 0\n", "beyond 64 bits");
	expect_bad("malformed: a process with fewer rows than it says", HEAD "p 7 1 0 0 2 b a e\nn f x\n0 1 -1\ne 1 2\n",
			   "line 6: a number that is not written as one");
	expect_bad("malformed: a process with more rows than it says", HEAD PROC "n f x\n0 1 -1\n0 1 -1\ne 1 2\n",
			   "neither a process nor");
	expect_bad("malformed: rows beyond the rest of the file", HEAD "p 7 1 0 0 4 b a e\nn f x\n0 1 -1\ne 1 4\n",
			   "more rows than the rest of the file can hold");
	expect_bad("malformed: rows beyond the limit", HEAD "p 7 1 0 0 65537 b a e\n", "out of its range");
	expect_bad("malformed: pid 0", HEAD "p 0 1 0 0 0 b a e\ne 1 0\n", "out of its range");
	expect_bad("malformed: pid beyond 2^31-1", HEAD "p 2147483648 1 0 0 0 b a e\ne 1 0\n", "out of its range");
	expect_bad("malformed: role beyond 2^32-1", HEAD "p 7 1 4294967296 0 0 b a e\ne 1 0\n", "out of its range");
	expect_bad("malformed: a process twice", HEAD "p 7 1 0 0 0 b a e\np 7 1 0 0 0 c d e\ne 2 0\n",
			   "process 7 (started 1) twice");
	expect_good("malformed: a pid twice with two starts is two processes",
				HEAD "p 7 1 0 0 0 b a e\np 7 2 0 0 0 b a e\ne 2 0\n");
	expect_bad("malformed: a process line without an encoding", HEAD "p 7 1 0 0 0 b a\ne 1 0\n",
			   "line 3: an empty field");
	expect_bad("malformed: two spaces", HEAD "p 7 1 0 0 0 b  a e\ne 1 0\n", "an empty field");
	expect_bad("malformed: a trailing space", HEAD "p 7 1 0 0 0 b a e \ne 1 0\n", "more fields than expected");
	expect_bad("malformed: CRLF", HEAD "p 7 1 0 0 0 b a e\r\ne 1 0\n", "a control character in a text field");
	expect_bad("malformed: a tab in a name", HEAD PROC "n f x\ty\n0 1 -1\ne 1 1\n", "a control character");
	expect_bad("malformed: an escape of a plain byte", HEAD PROC "n f \\x41\n0 1 -1\ne 1 1\n",
			   "an escape the writer does not make");
	expect_bad("malformed: an escaped NUL", HEAD PROC "n f a\\x00\n0 1 -1\ne 1 1\n", "an escape the writer");
	expect_bad("malformed: an uppercase escape", HEAD PROC "n f \\x7F\n0 1 -1\ne 1 1\n", "a bad escape");
	expect_bad("malformed: a cut escape", HEAD PROC "n f a\\x2\n0 1 -1\ne 1 1\n", "a bad escape");
	expect_bad("malformed: \"\\x2d\" within a longer name", HEAD PROC "n f a\\x2d\n0 1 -1\ne 1 1\n",
			   "an escape the writer does not make");
	expect_bad("malformed: an unknown kind", HEAD PROC "n x name\n0 1 -1\ne 1 1\n", "an unknown kind of row");
	expect_bad("malformed: a kind of two letters", HEAD PROC "n ff name\n0 1 -1\ne 1 1\n", "an unknown kind");
	expect_bad("malformed: a name line with no name", HEAD PROC "n f\n0 1 -1\ne 1 1\n", "an empty field");
	expect_bad("malformed: a name given twice", HEAD "p 7 1 0 0 2 b a e\nn f x\n0 1 -1\nn f x\n1 1 -1\ne 1 2\n",
			   "a name given twice");
	expect_good("malformed: one name in two kinds is two names",
				HEAD "p 7 1 0 0 2 b a e\nn f x\n0 1 -1\nn c x\n1 1 -1\ne 1 2\n");
	expect_bad("malformed: a name twice in a process", HEAD "p 7 1 0 0 2 b a e\nn f x\n0 1 -1\n0 1 -1\ne 1 2\n",
			   "a name twice in a process");
	expect_bad("malformed: a row naming no name", HEAD PROC "1 1 -1\ne 1 1\n", "out of its range");
	expect_bad("malformed: a row before any name", HEAD PROC "0 1 -1\ne 1 1\n", "out of its range");
	expect_bad("malformed: two name lines in a row",
			   HEAD "p 7 1 0 0 2 b a e\nn f x\nn f y\n0 1 -1\n1 1 -1\ne 1 2\n", "not just before its first row");
	expect_bad("malformed: a name line before a row of another name",
			   HEAD "p 7 1 0 0 2 b a e\nn f x\n0 1 -1\nn f y\n0 1 -1\ne 1 2\n", "not just before its first row");
	expect_bad("malformed: a name line after the last row", HEAD PROC "n f x\n0 1 -1\nn f y\ne 1 1\n",
			   "neither a process nor");
	expect_bad("malformed: negative bytes", HEAD PROC "n f x\n0 -1 -1\ne 1 1\n", "out of its range");
	expect_bad("malformed: outside -2", HEAD PROC "n f x\n0 1 -2\ne 1 1\n", "out of its range");
	expect_bad("malformed: bytes 2^63", HEAD PROC "n f x\n0 9223372036854775808 -1\ne 1 1\n", "beyond 64 bits");
	expect_good("malformed: bytes 2^63-1", HEAD PROC "n f x\n0 9223372036854775807 -1\ne 1 1\n");
	expect_good("malformed: time -(2^63)", "heapprof-history 1\nt -9223372036854775808 1\ne 0 0\n");
	expect_bad("malformed: time below -(2^63)", "heapprof-history 1\nt -9223372036854775809 1\ne 0 0\n",
			   "beyond 64 bits");
	expect_bad("malformed: a leading zero", HEAD PROC "n f x\n0 01 -1\ne 1 1\n", "not written as one");
	expect_bad("malformed: -0", "heapprof-history 1\nt -0 1\ne 0 0\n", "not written as one");
	expect_bad("malformed: +1", "heapprof-history 1\nt +1 1\ne 0 0\n", "not written as one");
	expect_bad("malformed: a lone -", "heapprof-history 1\nt - 1\ne 0 0\n", "not written as one");
	expect_bad("malformed: 1.5", HEAD PROC "n f x\n0 1.5 -1\ne 1 1\n", "not written as one");
	expect_bad("malformed: 1e3", HEAD PROC "n f x\n0 1e3 -1\ne 1 1\n", "not written as one");
	expect_bad("malformed: a hex number", HEAD PROC "n f x\n0 0x10 -1\ne 1 1\n", "not written as one");
	expect_bad("malformed: an unknown line", HEAD "x 1\ne 0 0\n", "line 3: neither a process nor");
	expect_bad("malformed: an empty line", HEAD "\ne 0 0\n", "neither a process nor");

	{
		static const char nul[] = HEAD "e 0 0\n";	/* and its NUL */
		hp_hist_tick t;
		char		err[256];

		T_CHECK("malformed: a NUL after the e line",
				rd(nul, sizeof(nul), &t, err, sizeof(err)) == HP_EFORMAT && strstr(err, "text after"), "%s", err);
	}

	/* a name of exactly MAX_TEXT bytes, and one more */
	memset(name, 'a', 4096);
	name[4096] = '\0';
	snprintf(text, 9000, HEAD PROC "n f %s\n0 1 -1\ne 1 1\n", name);
	expect_good("malformed: a name of 4096 bytes is good", text);
	snprintf(text, 9000, HEAD PROC "n f %sa\n0 1 -1\ne 1 1\n", name);
	expect_bad("malformed: a name over 4096 bytes", text, "a text field longer than 4096 bytes");
	for (int i = 0; i < 1366; i++)
		memcpy(name + 4 * i, "\\x20", 4);
	name[4 * 1366] = '\0';
	snprintf(text, 9000, HEAD PROC "n f %s\n0 1 -1\ne 1 1\n", name);
	expect_good("malformed: a name of 1366 escapes is good", text);

	/* the writer cuts a longer name to 4096 bytes, not within a character */
	{
		hp_hist_row r = {HP_HIST_FUNCTION, name, 1, -1};
		hp_hist_proc p = {.pid = 1, .rows = &r, .nrows = 1};
		hp_hist_tick t = {1, 1, &p, 1};
		hp_hist_tick back;
		size_t		len;
		char	   *w;
		char		err[256];

		memset(name, 'a', 6000);
		name[6000] = '\0';
		w = wr(&t, &len);
		T_CHECK("writer: a name over 4096 bytes is cut to 4096",
				rd(w, len, &back, err, sizeof(err)) == HP_OK && strlen(back.procs[0].rows[0].name) == 4096,
				"%s", err);
		memcpy(name + 4094, "\xe2\x80\xa8", 3);
		w = wr(&t, &len);
		T_CHECK("writer: ... before a UTF-8 character that does not fit",
				rd(w, len, &back, err, sizeof(err)) == HP_OK && strlen(back.procs[0].rows[0].name) == 4094,
				"%s", err);
	}
	free(name);
	free(text);
}

/* ---- a large tick: size and speed ---- */

/* A tick like a busy server's: n processes, each a total and 13 rows of each kind. */
static hp_hist_tick *
busy_tick(hp_arena *a, size_t n)
{
	static const char *funcs[] = {
		"palloc", "MemoryContextAlloc", "ExecInitNode", "hash_create", "CreateTemplateTupleDesc",
		"SearchCatCacheMiss", "RelationBuildDesc", "pq_getmessage", "heap_form_tuple",
		"AllocSetContextCreateInternal", "lappend", "pstrdup", "makeNode", "enlargeStringInfo",
		"ExecBuildProjectionInfo", "CopyFrom", "tuplesort_begin_common", "BuildCachedPlan",
		"RelationCacheInitializePhase3", "dsa_allocate_extended"};
	static const char *contexts[] = {
		"CacheMemoryContext", "MessageContext", "ExecutorState", "CachedPlan", "TopTransactionContext",
		"PortalContext", "smgr relation table", "Relcache by OID", "CatCache", "index info",
		"current: TopMemoryContext", "current: CacheMemoryContext", "ErrorContext", "PlanCache",
		"TupleSort main", "HashAgg meta context", "ExprContext", "Operator lookup cache"};
	hp_hist_tick *t = hp_alloc(a, sizeof(*t));
	uint64_t	seed = 42;

	t->time = 1767225600000000;
	t->interval = 60000000;
	t->procs = hp_alloc(a, n * sizeof(hp_hist_proc));
	t->nprocs = n;
	for (size_t i = 0; i < n; i++)
	{
		hp_hist_proc *p = &t->procs[i];
		size_t		k = 0;

		p->pid = (int32_t) (100000 + i * 37);
		p->start = 1767225000000000 + (int64_t) i * 1234567;
		p->role = 10;
		p->database = 16384;
		p->backend_type = "client backend";
		p->application = i % 3 ? "pgbench" : "";
		p->encoding = "UTF8";
		p->rows = hp_alloc(a, 40 * sizeof(hp_hist_row));
		p->rows[k++] = (hp_hist_row) {HP_HIST_TOTAL, "heap", 24000000 + (int64_t) i * 1000, 3000000};
		for (int kind = HP_HIST_FUNCTION; kind <= HP_HIST_CONTEXT; kind++)
			for (int j = 0; j < 13; j++)
			{
				hp_hist_row *r = &p->rows[k++];
				char		buf[32];

				seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
				r->kind = (hp_hist_kind) kind;
				r->bytes = (int64_t) (seed >> 44) * 4 + 1000;	/* up to 4 MB */
				r->outside = j == 12 ? -1 : kind == HP_HIST_CONTEXT && j < 2 ? r->bytes :
					j % 3 == 0 ? r->bytes / 3 : 0;
				if (j == 12)
					r->name = HP_HIST_REST;
				else if (kind == HP_HIST_FUNCTION)
					r->name = funcs[(i + j) % lengthof(funcs)];
				else if (kind == HP_HIST_CONTEXT)
					r->name = contexts[(i + j) % lengthof(contexts)];
				else
				{
					/* queryids: 19 digits and a sign, some shared by processes */
					long long	q = 1000000000000000000LL + (long long) ((i + j) % 60) * 7919;

					snprintf(buf, sizeof(buf), "%lld", j % 4 ? q : -q);
					r->name = hp_strdup(a, buf);
				}
			}
		p->nrows = k;
	}
	return t;
}

static void
test_large(void)
{
	hp_hist_tick *t = busy_tick(&arena, 100);
	size_t		len;
	char	   *text = wr(t, &len);
	hp_hist_tick back;
	char		err[256];
	int			reads = t_long() ? 1440 : 50;
	double		t0 = cpu_s();
	double		secs;
	bool		ok = true;

	T_CHECK("large: 100 processes by 40 rows well under 100 kB", len < 75000, "%zu bytes", len);
	printf("# a tick of 100 processes by 40 rows: %zu bytes\n", len);
	for (int i = 0; i < reads && ok; i++)
	{
		hp_arena	a;

		hp_arena_init(&a, &env.env);
		ok = hp_hist_read(&a, text, len, &back, err, sizeof(err)) == HP_OK &&
			(i > 0 || same_tick(&back, t));
		hp_arena_free(&a);
	}
	secs = cpu_s() - t0;
	printf("# %d reads of it: %.3f s CPU%s\n", reads, secs, SANITIZED ? " (with sanitizers)" : "");
	T_CHECK("large: 1440 reads of it in under a second (4 with sanitizers)",
			secs < reads / 1440.0 * (SANITIZED ? 4 : 1), "%.3f s", secs);
	T_CHECK("large: reads back", ok, "%s", err);
}

/* ---- the environment ---- */

static void
test_env(void)
{
	size_t		len;
	char	   *text = wr(&hostile, &len);
	t_env		e;
	hp_arena	a;
	hp_hist_tick t;
	jmp_buf		jb;
	volatile int jumped;
	char		err[256];
	long		most = 0;
	hp_hist_tick *busy = busy_tick(&arena, 100);

	t_env_init(&e);
	e.jump_at_interrupt = 1;
	hp_arena_init(&a, &e.env);
	e.env.work = HP_WORK_QUANTUM - 1;
	e.jump = &jb;
	jumped = setjmp(jb);
	if (jumped == 0)
		hp_hist_read(&a, text, len, &t, err, sizeof(err));
	e.jump = NULL;
	hp_arena_free(&a);
	T_CHECK("env: reading counts work, an interrupt jumps out, nothing leaks",
			jumped == 2 && e.allocs == 0, "jumped %d, %ld blocks live", jumped, e.allocs);

	/* fail each allocation in turn until a write and a read need no more */
	for (long n = 1;; n++)
	{
		t_env_init(&e);
		e.fail_at = n;
		hp_arena_init(&a, &e.env);
		e.jump = &jb;
		jumped = setjmp(jb);
		if (jumped == 0)
		{
			hp_buf		out;

			hp_buf_init(&out, &a);
			hp_hist_write(&out, busy);
			if (hp_hist_read(&a, out.data, out.len, &t, err, sizeof(err)) != HP_OK)
				jumped = 3;
		}
		e.jump = NULL;
		hp_arena_free(&a);
		if (jumped == 0 || e.code != HP_ENOMEM || e.allocs != 0)
			break;
		most = n;
	}
	T_CHECK("env: out of memory at each allocation of a write and a read is raised, nothing leaks",
			jumped == 0 && most >= 5 && e.allocs == 0, "allocation %ld: jumped %d, code %d, %ld live",
			most + 1, jumped, e.code, e.allocs);
}

int
main(void)
{
	t_env_init(&env);
	hp_arena_init(&arena, &env.env);
	test_format();
	test_round_trip();
	test_canonical();
	test_truncated();
	test_malformed();
	test_large();
	test_env();
	hp_arena_free(&arena);
	T_CHECK("history frees what it took", env.allocs == 0, "%ld blocks live", env.allocs);
	return t_exit();
}
