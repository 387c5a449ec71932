/*
 * test_format.c -- the "%" lines (format.c): write then read, both meta
 * forms, truncation that never leaves a partial line.
 */
#include "test.h"

static void
test_meta(void)
{
	hp_meta		m = {.pid = 4242, .owner = 10, .taken_at = 781234567890123LL};
	hp_meta		r;
	char		buf[512];
	size_t		len;
	static const char old[] =
		"%heapprof-allocator 10\n"
		"%heapprof pid=77 owner=16384 taken_at=-5 backend_type=autovacuum worker\n"
		"heap_v2/1\n";

	snprintf(m.backend_type, sizeof(m.backend_type), "client backend");
	len = hp_format_meta(buf, sizeof(buf), &m);
	T_CHECK("meta written", len == strlen(buf) &&
			strcmp(buf, "%heapprof v=1 pid=4242 owner=10 taken_at=781234567890123 backend_type=client backend\n") == 0,
			"\"%s\"", buf);
	T_CHECK("meta read back", hp_read_meta(buf, len, &r) && r.version == 1 && r.pid == 4242 &&
			r.owner == 10 && r.taken_at == 781234567890123LL &&
			strcmp(r.backend_type, "client backend") == 0, "version %d pid %d type \"%s\"",
			r.version, r.pid, r.backend_type);
	T_CHECK("meta of the unversioned form", hp_read_meta(old, sizeof(old) - 1, &r) &&
			r.version == 0 && r.pid == 77 && r.owner == 16384 && r.taken_at == -5 &&
			strcmp(r.backend_type, "autovacuum worker") == 0, "version %d pid %d type \"%s\"",
			r.version, r.pid, r.backend_type);
	{
		/* only the leading "%" lines count */
		static const char late[] = "%heapprof-allocator 1\nheap_v2/1\n"
			"%heapprof pid=1 owner=1 taken_at=1 backend_type=x\n";

		T_CHECK("meta absent", !hp_read_meta(late, sizeof(late) - 1, &r) && r.pid == 0,
				"found pid %d", r.pid);
	}
	T_CHECK("meta: no room, no line", hp_format_meta(buf, 20, &m) == 0 && buf[0] == '\0', "\"%s\"", buf);

	snprintf(m.backend_type, sizeof(m.backend_type), "evil\ntype");
	len = hp_format_meta(buf, sizeof(buf), &m);
	T_CHECK("meta stays one line", strchr(buf, '\n') == buf + len - 1 &&
			hp_read_meta(buf, len, &r) && strcmp(r.backend_type, "evil?type") == 0,
			"\"%s\"", buf);
}

static void
test_identity(void)
{
	hp_build_id ids[3] = {{0}};
	uint64_t	starts[] = {0x7000, 0x5000, 0x6000, 0x5000};
	hp_identity id = {.allocator_base = 0x7f00deadb000ULL, .ids = ids, .nids = 3,
	.fold_starts = starts, .nfold_starts = 4,
	.coverage = {true, 0x660f055503000ULL, 0x4000000}};
	char		full[HP_IDENTITY_MAX];
	size_t		len;
	t_env		env;
	hp_arena	a;
	hp_profile	p;
	char		err[256];
	char		text[HP_IDENTITY_MAX + 32];
	bool		whole = true;

	ids[0].bias = 0x400000;
	ids[0].len = 20;
	for (int i = 0; i < 20; i++)
		ids[0].id[i] = (uint8_t) (i * 13);
	ids[1].bias = 0x500000;		/* no id: not written */
	ids[2].bias = 0x7f00deadb000ULL;
	ids[2].len = 64;
	memset(ids[2].id, 0xab, 64);
	len = hp_format_identity(full, sizeof(full), &id);
	T_CHECK("identity written", len == strlen(full) && strncmp(full, "%heapprof-allocator 7f00deadb000\n"
																"%heapprof-coverage 660f055503000 4000000\n"
																"%heapprof-build-id 400000 000d1a", 106) == 0 &&
			strstr(full, "\n%heapprof-fold 5000 6000 7000\n") != NULL, "\"%s\"", full);

	t_env_init(&env);
	hp_arena_init(&a, &env.env);
	snprintf(text, sizeof(text), "%sheap_v2/1\n", full);
	T_CHECK("identity read back", t_parse(&a, text, &p, err, sizeof(err)) == HP_OK &&
			p.allocator_base == id.allocator_base && p.nids == 2 &&
			p.ids[0].bias == 0x400000 && p.ids[0].len == 20 && memcmp(p.ids[0].id, ids[0].id, 20) == 0 &&
			p.ids[1].len == 64 && memcmp(p.ids[1].id, ids[2].id, 64) == 0 &&
			p.coverage.known && p.coverage.since == 0x660f055503000ULL && p.coverage.allocated == 0x4000000 &&
			p.nfold_starts == 3 && p.fold_starts[0] == 0x5000 && p.fold_starts[2] == 0x7000,
			"%zu ids, %zu starts", p.nids, p.nfold_starts);
	hp_arena_free(&a);

	/* every size: whole lines only, a prefix of the full text */
	for (size_t size = 0; size <= len + 1; size++)
	{
		char		buf[HP_IDENTITY_MAX];
		size_t		n;

		memset(buf, 'X', sizeof(buf));
		n = hp_format_identity(buf, size, &id);
		if (size == 0)
			whole &= n == 0 && buf[0] == 'X';
		else
			whole &= n < size && buf[n] == '\0' && strncmp(buf, full, n) == 0 &&
				(n == 0 || buf[n - 1] == '\n') && (n == len || full[n] == '%') &&
				(size <= len || n == len);
	}
	T_CHECK("identity truncation never writes a partial line", whole, "a partial line");

	id.nfold_starts = 0;
	hp_format_identity(full, sizeof(full), &id);
	T_CHECK("identity without fold starts has no fold line", strstr(full, "%heapprof-fold") == NULL,
			"\"%s\"", full);
	T_CHECK("header length", hp_header_length(full, strlen(full)) == strlen(full) &&
			hp_header_length("%a\n%b\nheap_v2/1\n%c\n", 18) == 6 &&
			hp_header_length("%only", 5) == 5 && hp_header_length("", 0) == 0, "wrong");
}

static void
test_capture(void)
{
	hp_capture	c = {-6826501827167439091LL, 3149936, true, "my db"};
	hp_capture	back;
	char		buf[HP_CAPTURE_MAX];
	char		text[HP_CAPTURE_MAX + 64];
	size_t		n;

	snprintf(c.query, sizeof(c.query), "SELECT 'a\\b'\n\tFROM \x01 t -- \xc3\xa9");
	n = hp_format_capture(buf, sizeof(buf), &c);
	T_CHECK("capture lines are three lines", n == strlen(buf) && strchr(buf, '\t') == NULL &&
			strchr(buf, '\x01') == NULL, "\"%s\"", buf);
	snprintf(text, sizeof(text), "%sheap_v2/1\n", buf);
	T_CHECK("capture round trip", hp_read_capture(text, strlen(text), &back) &&
			back.queryid == c.queryid && back.growth == c.growth && back.partial &&
			strcmp(back.database, c.database) == 0 && strcmp(back.query, c.query) == 0,
			"\"%s\" -> \"%s\"", c.query, back.query);
	T_CHECK("no capture lines", !hp_read_capture("%heapprof v=1 pid=1\nheap_v2/1\n", 30, &back), "found");
	snprintf(text, sizeof(text), "%%heapprof-capture queryid=x\n%%heapprof-query \\x4\n");
	T_CHECK("hostile capture lines", !hp_read_capture(text, strlen(text), &back) &&
			strcmp(back.query, "x4") == 0, "\"%s\"", back.query);
	memset(c.query, 'q', HP_MAX_QUERY);
	c.query[HP_MAX_QUERY] = '\0';
	memset(c.database, '\n', sizeof(c.database) - 1);
	n = hp_format_capture(buf, sizeof(buf), &c);
	T_CHECK("longest capture fits", n == strlen(buf) && hp_read_capture(buf, n, &back) &&
			strlen(back.query) == HP_MAX_QUERY && strlen(back.database) == sizeof(c.database) - 1,
			"%zu", n);
}

static int
fail_put(void *arg, const char *piece, size_t n)
{
	return 7;
}

typedef struct
{
	char		data[1024];
	size_t		len;
} sink;

static int
collect(void *arg, const char *piece, size_t n)
{
	sink	   *b = arg;

	if (b->len + n > sizeof(b->data))
		return 1;
	memcpy(b->data + b->len, piece, n);
	b->len += n;
	return 0;
}

/* A file on disk keeps a statement's queryid, not its text. */
static void
test_without_texts(void)
{
	static const char in[] =
		"%heapprof v=1 pid=1 owner=10 taken_at=1 backend_type=client backend\n"
		"%heapprof-capture queryid=77 growth=5 partial=0\n"
		"%heapprof-database db\n"
		"%heapprof-query SELECT 'Sekret-4242'\n"
		"%heapprof-label-context 3 CachedPlan\n"
		"%heapprof-label-query -1234 ALTER ROLE x PASSWORD 'Sekret-4242'\n"
		"%heapprof-label-query 99\n"
		"heap_v2/1\n%heapprof-query in the body stays\n";
	static const char want[] =
		"%heapprof v=1 pid=1 owner=10 taken_at=1 backend_type=client backend\n"
		"%heapprof-capture queryid=77 growth=5 partial=0\n"
		"%heapprof-database db\n"
		"%heapprof-query \n"
		"%heapprof-label-context 3 CachedPlan\n"
		"%heapprof-label-query -1234 \n"
		"%heapprof-label-query 99\n"
		"heap_v2/1\n%heapprof-query in the body stays\n";
	sink		b = {{0}, 0};
	hp_capture	c;

	T_CHECK("texts left out", hp_put_without_texts(in, sizeof(in) - 1, collect, &b) == 0 &&
			b.len == sizeof(want) - 1 && memcmp(b.data, want, b.len) == 0, "\"%.*s\"", (int) b.len, b.data);
	T_CHECK("what is left reads", hp_read_capture(b.data, b.len, &c) && c.queryid == 77 && c.query[0] == '\0',
			"query \"%s\"", c.query);
	T_CHECK("an error ends the copy", hp_put_without_texts(in, sizeof(in) - 1, fail_put, NULL) == 7, "%s", "");
}

int
main(void)
{
	test_without_texts();
	test_meta();
	test_identity();
	test_capture();
	return t_exit();
}
