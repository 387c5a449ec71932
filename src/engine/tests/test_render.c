/*
 * test_render.c -- the whole pipeline on a fixed synthetic dump, against
 * golden files: text, dot, collapsed, top, flame graph, with and without a
 * base.  The code is in one anonymous mapping, so the symbolizer (the real
 * one) names every frame by its place there, "[anon]+0x1000": deterministic
 * on any machine.  The numbers of the text and collapsed goldens are
 * jeprof's on the same dump (jeprof names the frames by their addresses),
 * but for whole-number rows, which add up to the Total here (each within 1
 * of jeprof's).
 */
#include "test.h"

static const char dump[] =
	"%heapprof-allocator 0\n"
	"%heapprof-coverage 660f055503000 4000000\n"
	"heap_v2/524288\n"
	"  t*: 40: 9000000 [0: 0]\n"
	"@ 0x401000 0x402001 0x403001 0x404001\n"
	"  t*: 3: 3145728 [0: 0]\n"
	"@ 0x401000 0x402101 0x403001 0x404001\n"
	"  t*: 10: 10240 [0: 0]\n"
	"@ 0x405000 0x405001 0x405001 0x404001\n"
	"  t*: 1: 524288 [0: 0]\n"
	"@ 0x406000 0x403001 0x404001\n"
	"  t*: 7: 700000 [0: 0]\n"
	"@ 0x407000 0x404001\n"
	"  t*: 24: 96 [0: 0]\n"
	"@ 0x408000 0x409001 0x404001\n"
	"  t*: 2: 2621440 [0: 0]\n"
	"@ 0x408000 0x40a001 0x404001\n"
	"  t*: 4: 262144 [0: 0]\n"
	"@ 0x40b000 0x40a001 0x404001\n"
	"  t*: 1: 1048576 [0: 0]\n"
	"MAPPED_LIBRARIES:\n"
	"00400000-00410000 r-xp 00000000 00:00 0 \n";

static const char base[] =
	"heap_v2/524288\n"
	"@ 0x401000 0x402001 0x403001 0x404001\n"
	"  t*: 1: 1048576 [0: 0]\n"
	"@ 0x407000 0x404001\n"
	"  t*: 100: 400 [0: 0]\n"
	"@ 0x40c000 0x404001\n"
	"  t*: 1: 2097152 [0: 0]\n"
	"MAPPED_LIBRARIES:\n"
	"00400000-00410000 r-xp 00000000 00:00 0 \n";

static t_env env;
static hp_symbolizer *symbolizer;

typedef struct job
{
	const hp_options *o;
	hp_report_kind kind;
	bool		with_base;
	hp_arena   *a;
	hp_result  *r;
} job;

static void
analyze(void *arg)
{
	job		   *j = arg;

	hp_analyze(j->a, symbolizer, dump, sizeof(dump) - 1, j->with_base ? base : NULL,
			   j->with_base ? sizeof(base) - 1 : 0, j->o, j->kind, SIZE_MAX, j->r);
}

static void
golden(const char *name, const char *file, const hp_options *o, hp_report_kind kind, bool with_base)
{
	hp_arena	a;
	hp_result	r;
	job			j = {o, kind, with_base, &a, &r};

	hp_arena_init(&a, &env.env);
	if (t_run(&env, analyze, &j) != 0)
		t_fail(name, "%s", env.message);
	else if (kind == HP_REPORT_TOP)
	{
		hp_buf		b;

		hp_buf_init(&b, &a);
		for (size_t i = 0; i < r.nrows; i++)
			hp_buf_printf(&b, "%s %.17g %.17g %.17g\n", r.rows[i].func->name, r.rows[i].flat,
						  r.rows[i].running, r.rows[i].cum);
		t_golden(name, file, b.data ? b.data : "", b.len);
	}
	else
		t_golden(name, file, r.text.data ? r.text.data : "", r.text.len);
	hp_arena_free(&a);
}

/*
 * Whole-number rows add up to the printed Total (hp_wholes), with and
 * without a base, in either order.
 */
static void
sums(const char *name, bool with_base)
{
	hp_options	o = HP_OPTIONS_DEFAULT;
	hp_arena	a;
	hp_result	r;
	job			j = {&o, HP_REPORT_COLLAPSED, with_base, &a, &r};
	long long	lines = 0;
	long long	rows = 0;
	long long	by_cum = 0;
	long long	total;

	hp_arena_init(&a, &env.env);
	if (t_run(&env, analyze, &j) != 0)
	{
		t_fail(name, "%s", env.message);
		hp_arena_free(&a);
		return;
	}
	total = hp_whole(r.graph.total);
	for (const char *p = r.text.data; p && p < r.text.data + r.text.len;)
	{
		const char *nl = memchr(p, '\n', (size_t) (r.text.data + r.text.len - p));
		const char *sp = p;

		for (const char *q = p; q < nl; q++)
			if (*q == ' ')
				sp = q;
		lines += strtoll(sp, NULL, 10);
		p = nl + 1;
	}
	r.nrows = hp_top(&a, &r.graph, SIZE_MAX, false, &r.rows);
	for (size_t i = 0; i < r.nrows; i++)
		rows += r.rows[i].whole_flat;
	r.nrows = hp_top(&a, &r.graph, SIZE_MAX, true, &r.rows);
	for (size_t i = 0; i < r.nrows; i++)
		by_cum += r.rows[i].whole_flat;
	T_CHECK(name, lines == total && rows == total && by_cum == total,
			"collapsed %lld, top %lld, top by cum %lld, Total %lld", lines, rows, by_cum, total);
	hp_arena_free(&a);
}

int
main(void)
{
	hp_options	o = HP_OPTIONS_DEFAULT;

	t_env_init(&env);
	symbolizer = hp_symbolizer_new();
	o.program = "synthetic";
	golden("render text", "render_text.txt", &o, HP_REPORT_TEXT, false);
	golden("render dot", "render_dot.dot", &o, HP_REPORT_DOT, false);
	golden("render collapsed", "render_collapsed.txt", &o, HP_REPORT_COLLAPSED, false);
	golden("render top", "render_top.txt", &o, HP_REPORT_TOP, false);
	golden("render flame graph", "render_flame.svg", &o, HP_REPORT_FLAMEGRAPH, false);
	golden("render text with a base", "render_text_base.txt", &o, HP_REPORT_TEXT, true);
	golden("render collapsed with a base", "render_collapsed_base.txt", &o, HP_REPORT_COLLAPSED, true);
	golden("render flame graph with a base", "render_flame_base.svg", &o, HP_REPORT_FLAMEGRAPH, true);
	o.by_cum = true;
	golden("render text by cum", "render_text_cum.txt", &o, HP_REPORT_TEXT, false);
	golden("render top by cum", "render_top_cum.txt", &o, HP_REPORT_TOP, false);
	golden("render text by cum with a base", "render_text_base_cum.txt", &o, HP_REPORT_TEXT, true);
	o.by_cum = false;
	o.measure = HP_INUSE_OBJECTS;
	golden("render text, objects", "render_text_objects.txt", &o, HP_REPORT_TEXT, false);
	golden("render dot, objects", "render_dot_objects.dot", &o, HP_REPORT_DOT, false);
	o.measure = HP_INUSE_SPACE;
	o.show_bytes = true;
	o.nodecount = 4;
	o.edgefraction = 0.2;
	golden("render dot, bytes, 4 nodes", "render_dot_bytes.dot", &o, HP_REPORT_DOT, false);
	sums("rows and lines add up to the Total", false);
	sums("rows and lines add up to the Total of a diff", true);
	hp_symbolizer_free(symbolizer);
	T_CHECK("render frees what it took", env.allocs == 0, "%ld blocks live", env.allocs);
	return t_exit();
}
