/*
 * test_summary.c -- a process's heap in a few rows (summary.c): the total
 * and what no context owns, the top functions, statements and contexts of
 * a labelled dump, each kind's rest in one row, nothing lost.
 */
#include "test.h"
#include "engine/history.h"

#define CTX(slot) "0xfffe0400" slot
#define CUR(slot) "0xfffe0100" slot
static const char dump[] =
	"%heapprof-label-context 0 CacheMemoryContext\n"
	"%heapprof-label-context 1 ExecutorState\n"
	"%heapprof-label-query 12345 SELECT 1\n"
	"heap_v2/1\n"
	"@ 0x401000 0x402001 " CTX("00000000") " 0xfffe020000000000 0xfffe030000003039\n"
	"  t*: 1: 1000 [0: 0]\n"
	"@ 0x403000 0x402001 " CTX("00000001") " 0xfffe020000000000 0xfffe030000003039\n"
	"  t*: 1: 2000 [0: 0]\n"
	"@ 0x404000 0x402001 " CUR("00000001") "\n"
	"  t*: 1: 4000 [0: 0]\n"
	"@ 0x405000 0x402001 " CUR("00000000") "\n"
	"  t*: 1: 8000 [0: 0]\n"
	"MAPPED_LIBRARIES:\n"
	"00400000-00410000 r-xp 00000000 00:00 0 \n";

static hp_arena arena;
static t_env env;
static hp_symbolizer *symbolizer;

typedef struct job
{
	size_t		top;
	hp_hist_proc *out;
} job;

static void
summarize(void *arg)
{
	job		   *j = arg;
	hp_options	o = HP_OPTIONS_DEFAULT;
	hp_result	r;

	hp_analyze(&arena, symbolizer, dump, sizeof(dump) - 1, NULL, 0, &o, HP_REPORT_STACKS, SIZE_MAX, &r);
	hp_hist_summarize(&arena, &r.profile, &r.graph, j->top, j->out);
}

static const hp_hist_row *
row(const hp_hist_proc *p, hp_hist_kind kind, const char *name)
{
	for (size_t i = 0; i < p->nrows; i++)
		if (p->rows[i].kind == kind && strcmp(p->rows[i].name, name) == 0)
			return &p->rows[i];
	return NULL;
}

/* Bytes of kind's rows, and their number. */
static int64_t
sum(const hp_hist_proc *p, hp_hist_kind kind, int64_t *outside, size_t *n)
{
	int64_t		b = 0;

	*outside = 0;
	*n = 0;
	for (size_t i = 0; i < p->nrows; i++)
		if (p->rows[i].kind == kind)
		{
			b += p->rows[i].bytes;
			*outside += p->rows[i].outside;
			(*n)++;
		}
	return b;
}

static void
test_rows(size_t top)
{
	hp_hist_proc p = {0};
	job			j = {top, &p};
	const hp_hist_row *total;
	char		name[64];

	if (t_run(&env, summarize, &j) != 0)
	{
		t_fail("summary", "error: %s", env.message);
		return;
	}
	total = row(&p, HP_HIST_TOTAL, "heap");
	snprintf(name, sizeof(name), "summary (top %zu): the total, and what no context owns", top);
	T_CHECK(name, total && total->bytes == 15000 && total->outside == 12000 && p.rows[0].kind == HP_HIST_TOTAL,
			"total %lld outside %lld", total ? (long long) total->bytes : -1LL,
			total ? (long long) total->outside : -1LL);
	for (int k = HP_HIST_FUNCTION; k < HP_HIST_KINDS; k++)
	{
		int64_t		outside;
		size_t		n;
		int64_t		b = sum(&p, k, &outside, &n);
		size_t		names = k == HP_HIST_FUNCTION ? 4 : k == HP_HIST_QUERY ? 2 : 4;
		size_t		want = names > top ? top + 1 : names;

		snprintf(name, sizeof(name), "summary (top %zu): kind %d adds up, at most top + 1 rows", top, k);
		T_CHECK(name, b == 15000 && outside == 12000 && n == want, "bytes %lld outside %lld rows %zu (want %zu)",
				(long long) b, (long long) outside, n, want);
	}
	snprintf(name, sizeof(name), "summary (top %zu): contexts owned and current, statements", top);
	if (top >= 4)
		T_CHECK(name, row(&p, HP_HIST_CONTEXT, "current: CacheMemoryContext") &&
				row(&p, HP_HIST_CONTEXT, "current: CacheMemoryContext")->outside == 8000 &&
				row(&p, HP_HIST_CONTEXT, "ExecutorState")->bytes == 2000 &&
				row(&p, HP_HIST_QUERY, "12345")->bytes == 3000 &&
				row(&p, HP_HIST_QUERY, "(none)")->bytes == 12000 && !row(&p, HP_HIST_FUNCTION, HP_HIST_REST),
				"rows %zu", p.nrows);
	else
		T_CHECK(name, p.rows[1].kind == HP_HIST_FUNCTION && p.rows[1].bytes == 8000 &&
				row(&p, HP_HIST_FUNCTION, HP_HIST_REST) && row(&p, HP_HIST_FUNCTION, HP_HIST_REST)->bytes == 7000 &&
				row(&p, HP_HIST_CONTEXT, "current: CacheMemoryContext"),
				"rows %zu", p.nrows);
}

/* A tick of the summary round-trips through the tick file. */
static void
test_file(void)
{
	hp_hist_proc p = {0};
	job			j = {2, &p};
	hp_hist_tick t = {.time = 1767225600000000, .interval = 10000000, .procs = &p, .nprocs = 1};
	hp_hist_tick back;
	hp_buf		out;
	char		err[256];

	if (t_run(&env, summarize, &j) != 0)
		return;
	p.pid = 42;
	p.start = 1767225000000000;
	p.backend_type = "client backend";
	p.application = "";
	p.encoding = "LATIN1";
	hp_buf_init(&out, &arena);
	hp_hist_write(&out, &t);
	T_CHECK("summary: a tick of it is read back", hp_hist_read(&arena, out.data, out.len, &back, err, sizeof(err)) == HP_OK &&
			back.nprocs == 1 && back.procs[0].nrows == p.nrows && strcmp(back.procs[0].encoding, "LATIN1") == 0,
			"%s", err);
}

int
main(void)
{
	t_env_init(&env);
	hp_arena_init(&arena, &env.env);
	symbolizer = hp_symbolizer_new();
	test_rows(10);
	test_rows(1);
	test_file();
	hp_arena_free(&arena);
	hp_symbolizer_free(symbolizer);
	T_CHECK("summary frees what it took", env.allocs == 0, "%ld blocks live", env.allocs);
	return t_exit();
}
