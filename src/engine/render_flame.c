/*
 * render_flame.c -- an interactive SVG flame graph, in the style of
 * flamegraph.pl.
 *
 * Paths become a tree from the root (bottom) to the allocating frames (top);
 * a frame's width is the memory below it.  The tree is built in linear time
 * (a child is found by a hash of parent and function), and the output is a
 * few MB whatever the profile, as flamegraph.pl's --minwidth: only frames at
 * least a pixel wide are drawn (at most MAX_FRAMES), and the siblings
 * narrower than that become one gray "N narrower frames" box.
 *
 * The SVG is self-contained: tooltips (<title>), a details line on hover,
 * click to zoom, and a search (the Search button, or ?s=REGEX in the URL)
 * that highlights matching frames and tells the share of the stacks through
 * them -- heapprof_top's cum for one function, each stack once for several.
 * The search counts from data, not from what is drawn, as speedscope and
 * pprof's web view do: a table of the function names, each once, and of the
 * tree's nodes in depth-first order (name, width, subtree size), exact when
 * it fits in TABLE_BYTES, with each name's cum.  A larger tree keeps its
 * widest nodes there: a search matching one function still tells its cum
 * exactly, one matching several shows what the table leaves out as "up to"
 * that much more.
 *
 * Colors tell the object: the program itself (o->home_object, e.g.
 * postgres) warm, its extensions purple, the C library and loader green,
 * other libraries aqua.  In a diff, widths are the current profile and
 * colors the change: red grew, blue shrank.  Names come from ELF and DWARF
 * and may hold any byte: they pass sink.h's XML sink in the document and its
 * JavaScript sink in the table's script, so the document is always
 * well-formed XML and no name can end a string or the script.
 */
#include "render.h"
#include "sink.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define WIDTH 1200
#define FRAME_H 16
#define PAD_TOP 56
#define PAD_BOTTOM 34
#define PAD_SIDE 10
#define MIN_PX 1.0				/* narrower frames are merged into one box */
#define MAX_FRAMES 4096			/* at most this many drawn: a wider cut beyond */
#define TABLE_BYTES (3 << 20)	/* about the most the search table takes */
#define ENTRY_BYTES 24			/* one table entry, about */
#define TABLE_NAME_MAX 1000		/* bytes of a name kept in the table */
#define TITLE_MAX 300			/* bytes of a name in a frame's tooltip */
#define NONE UINT32_MAX
#define PSEUDO 0x80000000u		/* size flag: the entry has a "narrower" child */

typedef struct node
{
	uint32_t	func;
	uint32_t	parent;			/* NONE: a root */
	uint32_t	first_child;	/* NONE: none */
	uint32_t	next_sibling;
	uint32_t	depth;
	uint32_t	size;			/* entries of its subtree in the search table */
	double		width;			/* current memory below, drawn */
	double		delta;			/* change against the base (= width without one) */
} node;

/* The call tree: children found by a hash of (parent, function), in O(1). */
typedef struct tree
{
	hp_arena   *a;
	node	   *nodes;
	size_t		n;
	size_t		cap;
	uint32_t   *slots;			/* node index + 1, 0 = empty */
	size_t		nslots;
	uint32_t	roots;			/* first root, then next_sibling */
} tree;

static size_t
slot_of(uint32_t parent, uint32_t func, size_t nslots)
{
	uint64_t	h = (((uint64_t) parent << 32) | func) * UINT64_C(0x9e3779b97f4a7c15);

	return (size_t) (h ^ (h >> 29)) & (nslots - 1);
}

static void
rehash(tree *t)
{
	t->nslots = t->nslots ? t->nslots * 2 : 1024;
	t->slots = hp_alloc(t->a, t->nslots * sizeof(uint32_t));
	hp_work(t->a->env, t->n);
	for (size_t i = 0; i < t->n; i++)
	{
		size_t		s = slot_of(t->nodes[i].parent, t->nodes[i].func, t->nslots);

		while (t->slots[s])
			s = (s + 1) & (t->nslots - 1);
		t->slots[s] = (uint32_t) i + 1;
	}
}

static uint32_t
child_of(tree *t, uint32_t parent, uint32_t func, uint32_t depth)
{
	size_t		s = slot_of(parent, func, t->nslots);
	uint32_t   *head;

	for (; t->slots[s]; s = (s + 1) & (t->nslots - 1))
	{
		node	   *nd = &t->nodes[t->slots[s] - 1];

		if (nd->parent == parent && nd->func == func)
			return t->slots[s] - 1;
	}
	if (t->n >= NONE - 1)
		hp_fail(t->a->env, HP_ELIMIT, "the flame graph has more than %u frames", NONE - 1);
	HP_RESERVE(t->a, t->nodes, t->cap, t->n);
	/* linked first here; build_tree reverses the lists to the order of first appearance */
	head = parent == NONE ? &t->roots : &t->nodes[parent].first_child;
	t->nodes[t->n] = (node) {func, parent, NONE, *head, depth, 0, 0, 0};
	*head = (uint32_t) t->n;
	t->slots[s] = (uint32_t) t->n + 1;
	t->n++;
	if (t->n * 2 > t->nslots)
		rehash(t);
	return (uint32_t) t->n - 1;
}

static uint32_t
reverse(node *nodes, uint32_t i)
{
	uint32_t	prev = NONE;

	while (i != NONE)
	{
		uint32_t	next = nodes[i].next_sibling;

		nodes[i].next_sibling = prev;
		prev = i;
		i = next;
	}
	return prev;
}

/* The tree of g's paths, root (depth 0) first; widths from the current profile. */
static void
build_tree(hp_arena *a, const hp_graph *g, bool diff, tree *t, double *total)
{
	memset(t, 0, sizeof(*t));
	t->a = a;
	t->roots = NONE;
	rehash(t);
	*total = 0;
	for (size_t k = 0; k < g->npaths; k++)
	{
		const hp_path *path = &g->paths[k];
		double		w = diff ? path->current : path->value;
		uint32_t	parent = NONE;

		hp_work(a->env, path->nframes + 1);
		if (path->nframes == 0)
			continue;
		w = w > 0 ? w : 0;
		*total += w;
		for (uint32_t j = path->nframes, d = 0; j-- > 0; d++)
		{
			uint32_t	i = child_of(t, parent, path->frames[j], d);

			t->nodes[i].width += w;
			t->nodes[i].delta += path->value;
			parent = i;
		}
	}
	hp_work(a->env, t->n);
	t->roots = reverse(t->nodes, t->roots);
	for (size_t i = 0; i < t->n; i++)
		t->nodes[i].first_child = reverse(t->nodes, t->nodes[i].first_child);
}

/*
 * Sizes of what a cut keeps: nodes at least cut wide (a child is never wider
 * than its parent, so they form a tree from the roots).  For drawing, their
 * number; for the search table, its bytes about: an entry per node, one per
 * node some of whose children are cut ("narrower" entry), and the names.
 */
typedef struct cut_cost
{
	const hp_graph *g;
	bool		table;
	uint32_t   *mark;			/* per function: pass that counted its name */
	uint32_t	pass;
} cut_cost;

/* Bytes of a name in the table, about: escaped, quoted, a comma, its cum. */
static size_t
name_bytes(const char *s)
{
	size_t		n = 3 + 12;		/* and its cum */

	for (size_t i = 0; s[i] && i < TABLE_NAME_MAX; i++)
		n += strchr("<>&", s[i]) ? 6 : strchr("\"\\", s[i]) ? 2 : 1;
	return n;
}

static size_t
cost_of(tree *t, double cut, cut_cost *c)
{
	size_t		cost = 0;
	bool		cut_root = false;

	hp_work(t->a->env, t->n);
	c->pass++;
	for (size_t i = 0; i < t->n; i++)
	{
		node	   *nd = &t->nodes[i];

		if (nd->width <= 0)
			continue;
		if (!c->table)
			cost += nd->width >= cut;
		else if (nd->width >= cut)
		{
			/* size holds the pass that counted this node's "narrower" entry */
			cost += ENTRY_BYTES;
			if (c->mark[nd->func] != c->pass)
			{
				c->mark[nd->func] = c->pass;
				cost += name_bytes(c->g->funcs[nd->func].name);
			}
		}
		else if (nd->parent == NONE ? !cut_root :
				 t->nodes[nd->parent].width >= cut && t->nodes[nd->parent].size != c->pass)
		{
			cost += ENTRY_BYTES;
			if (nd->parent == NONE)
				cut_root = true;
			else
				t->nodes[nd->parent].size = c->pass;
		}
	}
	return cost;
}

/*
 * The narrowest cut, at least lo, whose cost is within budget: the whole
 * tree when it fits, else found by halving the ratio of the bounds.  The
 * number of passes is bounded by a count, not by the arithmetic: widths
 * come from outside (1e300, inf, NaN), and halving the ratio of doubles
 * reaches 1.01 within CUT_STEPS from any pair of them.
 */
#define CUT_STEPS 64

static double
find_cut(tree *t, double lo, double hi, size_t budget, cut_cost *c)
{
	if (cost_of(t, lo, c) <= budget)
		return lo;
	for (int step = 0; step < CUT_STEPS && hi > lo * 1.01; step++)
	{
		/* not sqrt(lo * hi): the product overflows to inf above 1e154 */
		double		mid = sqrt(lo) * sqrt(hi);

		if (cost_of(t, mid, c) <= budget)
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}

/* v with at most three decimals, trailing zeros dropped, and a comma */
static void
number(hp_buf *out, double v)
{
	char		s[64];
	int			n = snprintf(s, sizeof(s), "%.3f", v);

	/* JavaScript's spelling of what printf writes inf and nan */
	if (!isfinite(v))
		n = snprintf(s, sizeof(s), "%s", isnan(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity");
	else if (n <= 0 || n >= (int) sizeof(s))
		n = snprintf(s, sizeof(s), "%.6g", v);
	else
	{
		while (s[n - 1] == '0')
			n--;
		if (s[n - 1] == '.')
			n--;
	}
	s[n++] = ',';
	hp_buf_append(out, s, n);
}

/* A stable pseudo-random number in [0, 1) from a name. */
static double
name_hash(const char *s)
{
	uint32_t	h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char) *s) * 16777619u;
	return (h % 1000) / 1000.0;
}

static void
frame_color(const hp_options *o, const hp_func *fn, double delta, double max_delta, bool diff,
			char *buf, size_t len)
{
	double		v = name_hash(fn->name);
	const char *obj = fn->object ? fn->object : "";

	if (diff)
	{
		int			c = max_delta > 0 ? (int) (210 - 210 * fmin(1, fabs(delta) / max_delta)) : 210;

		if (delta > 0)
			snprintf(buf, len, "rgb(255,%d,%d)", c, c);
		else if (delta < 0)
			snprintf(buf, len, "rgb(%d,%d,255)", c, c);
		else
			snprintf(buf, len, "rgb(235,235,235)");
	}
	else if (o->home_object && strcmp(obj, o->home_object) == 0)
		snprintf(buf, len, "rgb(%d,%d,%d)", 205 + (int) (50 * v), (int) (230 * v), 55);
	else if (strncmp(obj, "libc.so", 7) == 0 || strncmp(obj, "ld-linux", 8) == 0)
		snprintf(buf, len, "rgb(%d,%d,%d)", (int) (80 * v), 190 + (int) (55 * v), (int) (80 * v));
	else if (strlen(obj) > 3 && strcmp(obj + strlen(obj) - 3, ".so") == 0)
		/* extensions are unversioned objects; libraries are libfoo.so.N */
		snprintf(buf, len, "rgb(%d,%d,%d)", 160 + (int) (60 * v), 110 + (int) (50 * v), 220);
	else
		snprintf(buf, len, "rgb(%d,%d,%d)", 50 + (int) (60 * v), 180 + (int) (55 * v), 200 + (int) (55 * v));
}

static const char script[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"var svg, details, matched, frames, W = " "%d" ", unit = \"%s\", T = %.3f;\n"
	"function init() {\n"
	"  svg = document.documentElement; details = document.getElementById('details');\n"
	"  matched = document.getElementById('matched');\n"
	"  frames = Array.prototype.slice.call(document.getElementsByClassName('f'));\n"
	"  frames.forEach(function (g) { g.ox = +g.dataset.x; g.ow = +g.dataset.w;\n"
	"    g.nm = +g.dataset.f >= 0 ? N[+g.dataset.f] : g.dataset.name; fit(g); });\n"
	"  var top = null;\n"
	"  frames.forEach(function (g) { if (+g.dataset.self > (top ? +top.dataset.self : 0)) top = g; });\n"
	"  details.textContent = top ? 'Top frame: ' + top.nm : 'Empty profile';\n"
	"  var q = /[?&]s=([^&]*)/.exec(location.search);  // a search from the URL, as flamegraph.pl's\n"
	"  if (q) { try { q = decodeURIComponent(q[1]); } catch (e) { q = q[1]; } find(q); }\n"
	"}\n"
	"function fit(g) {\n"
	"  var r = g.querySelector('rect'), t = g.querySelector('text'), w = +r.getAttribute('width');\n"
	"  var n = Math.floor((w - 6) / 7), s = g.nm;\n"
	"  t.setAttribute('x', +r.getAttribute('x') + 3);\n"
	"  t.textContent = n < 3 ? '' : (s.length <= n ? s : s.substring(0, n - 2) + '..');\n"
	"}\n"
	"function info(g) { details.textContent = g.querySelector('title').textContent; }\n"
	"function clear_info() { details.textContent = ' '; }\n"
	"function zoom(g) {\n"
	"  var x = g.ox, w = g.ow, y = +g.querySelector('rect').getAttribute('y'), k = (W - 2 * %d) / w;\n"
	"  frames.forEach(function (f) {\n"
	"    var r = f.querySelector('rect'), fy = +r.getAttribute('y');\n"
	"    if (f.ox + f.ow <= x || f.ox >= x + w) { f.style.display = 'none'; return; }\n"
	"    f.style.display = '';\n"
	"    if (fy > y) { r.setAttribute('x', %d); r.setAttribute('width', W - 2 * %d); }\n"
	"    else { r.setAttribute('x', %d + (f.ox - x) * k); r.setAttribute('width', f.ow * k); }\n"
	"    fit(f);\n"
	"  });\n"
	"  document.getElementById('unzoom').style.opacity = 1;\n"
	"}\n"
	"function unzoom() {\n"
	"  frames.forEach(function (f) { var r = f.querySelector('rect');\n"
	"    f.style.display = ''; r.setAttribute('x', f.ox + %d); r.setAttribute('width', f.ow); fit(f); });\n"
	"  document.getElementById('unzoom').style.opacity = 0;\n"
	"}\n"
	"function search() {\n"
	"  var term = prompt('Search frames (regular expression):', ''); if (term !== null) find(term);\n"
	"}\n"
	"/*\n"
	" * the share of the stacks through a matching function, each stack once (as cum), from the table:\n"
	" * the widths of matching entries without a matching ancestor (S skips a subtree); F < 0 is what\n"
	" * the table leaves out, narrower than any entry, which a match may or may not hold\n"
	" */\n"
	"function find(term) {\n"
	"  var re, m, hit = 0, out = 0, one = [];\n"
	"  try { re = new RegExp(term); } catch (e) { matched.textContent = 'Bad search: ' + e.message; return; }\n"
	"  m = N.map(function (s, k) { var on = term !== '' && re.test(s); if (on) one.push(k); return on; });\n"
	"  frames.forEach(function (f) { var k = +f.dataset.f;\n"
	"    f.querySelector('rect').setAttribute('fill', k >= 0 && m[k] ? 'rgb(230,0,230)' : f.dataset.fill); });\n"
	"  if (one.length == 1) hit = C[one[0]];  // one function: its cum, exact even when the table is cut\n"
	"  else for (var i = 0; i < F.length;) {\n"
	"    if (F[i] >= 0 && m[F[i]]) { hit += V[i]; i += S[i]; }\n"
	"    else { if (F[i] < 0) out += V[i]; i++; }\n"
	"  }\n"
	"  matched.textContent = term === '' ? ' ' : 'Matched: ' + Math.round(hit) + ' ' + unit + ', ' +\n"
	"    (T > 0 ? (100 * hit / T).toFixed(1) : '0.0') + '%% of ' + Math.round(T) +\n"
	"    (out > 0 ? ' (and up to ' + Math.round(out) + ' more in stacks too small to list)' : '');\n"
	"}\n"
	"]]></script>\n";

/* One rendering: the tree, its cuts, and where the output goes. */
typedef struct flame
{
	hp_arena   *a;
	const hp_graph *g;
	const hp_options *o;
	bool		diff;
	tree		t;
	hp_buf	   *out;
	double		total;
	double		scale;			/* pixels per unit */
	double		px;				/* MIN_PX in units */
	double		tcut;			/* narrowest node in the search table */
	double		dcut;			/* narrowest node drawn */
	double		max_delta;
	const char *unit;
	uint32_t   *ids;			/* per function: its name's index in the table, NONE: absent */
	double	   *cum;			/* per function: the width of the stacks through it */
	uint32_t	max_depth;		/* of what is drawn */
	int			height;
} flame;

/* var name = [items of b, without b's trailing comma]; */
static void
list(hp_buf *out, const char *name, const hp_buf *b)
{
	hp_buf_printf(out, "var %s = [", name);
	if (b->len > 1)
		hp_buf_append(out, b->data, b->len - 1);
	hp_buf_printf(out, "];\n");
}

#define KEPT(f, nd) ((nd)->width > 0 && (nd)->width >= (f)->tcut)

/*
 * The search table, in a script of its own: N the names (each once), C
 * their cum (the width of the stacks through each, exact in any case), and
 * per entry, in depth-first order, F its name's index, V its width, S the
 * entries of its subtree.  An entry of F = -1 stands for the children its
 * parent has narrower than tcut.  Exact, with no such entry, when the whole
 * tree fits in TABLE_BYTES.
 */
static void
write_table(flame *f)
{
	tree	   *t = &f->t;
	hp_buf		names, cs, fs, vs, ss;
	uint32_t   *stack;
	size_t		sp = 0, kept = 0, nids = 0;
	double		cut_roots = 0;

	hp_work(f->a->env, 3 * t->n);
	for (size_t i = 0; i < t->n; i++)
	{
		t->nodes[i].size = KEPT(f, &t->nodes[i]) ? 1 : 0;
		kept += t->nodes[i].size;
	}
	for (size_t i = 0; i < t->n; i++)
	{
		node	   *nd = &t->nodes[i];

		if (nd->width <= 0 || KEPT(f, nd))
			continue;
		if (nd->parent == NONE)
			cut_roots += nd->width;
		else if (t->nodes[nd->parent].size && !(t->nodes[nd->parent].size & PSEUDO))
			t->nodes[nd->parent].size = (t->nodes[nd->parent].size + 1) | PSEUDO;
	}
	/* a child comes after its parent: sizes from the leaves down */
	for (size_t i = t->n; i-- > 0;)
		if (t->nodes[i].size && t->nodes[i].parent != NONE)
			t->nodes[t->nodes[i].parent].size += t->nodes[i].size & ~PSEUDO;

	f->ids = hp_alloc(f->a, (f->g->nfuncs ? f->g->nfuncs : 1) * sizeof(uint32_t));
	memset(f->ids, 0xff, (f->g->nfuncs ? f->g->nfuncs : 1) * sizeof(uint32_t));
	hp_buf_init(&names, f->a);
	hp_buf_init(&cs, f->a);
	hp_buf_init(&fs, f->a);
	hp_buf_init(&vs, f->a);
	hp_buf_init(&ss, f->a);
	if (cut_roots > 0)
	{
		hp_buf_append(&fs, "-1,", 3);
		number(&vs, cut_roots);
		hp_buf_append(&ss, "1,", 2);
	}
	stack = hp_alloc(f->a, (kept + 1) * sizeof(uint32_t));
	for (uint32_t c = t->roots; c != NONE; c = t->nodes[c].next_sibling)
		if (KEPT(f, &t->nodes[c]))
			stack[sp++] = c;
	while (sp > 0)
	{
		node	   *nd = &t->nodes[stack[--sp]];
		double		cut = 0;
		char		s[32];

		hp_work(f->a->env, 1);
		if (f->ids[nd->func] == NONE)
		{
			f->ids[nd->func] = (uint32_t) nids++;
			hp_buf_append(&names, "\"", 1);
			hp_sink_buf(&names, HP_SINK_JS, f->g->funcs[nd->func].name, TABLE_NAME_MAX);
			hp_buf_append(&names, "\",", 2);
			number(&cs, f->cum[nd->func]);
		}
		hp_buf_append(&fs, s, snprintf(s, sizeof(s), "%u,", f->ids[nd->func]));
		number(&vs, nd->width);
		hp_buf_append(&ss, s, snprintf(s, sizeof(s), "%u,", nd->size & ~PSEUDO));
		for (uint32_t c = nd->first_child; c != NONE; c = t->nodes[c].next_sibling)
		{
			if (KEPT(f, &t->nodes[c]))
				stack[sp++] = c;
			else if (t->nodes[c].width > 0)
				cut += t->nodes[c].width;
		}
		if (nd->size & PSEUDO)
		{
			hp_buf_append(&fs, "-1,", 3);
			number(&vs, cut);
			hp_buf_append(&ss, "1,", 2);
		}
	}
	hp_buf_printf(f->out, "<script type=\"text/ecmascript\"><![CDATA[\n");
	list(f->out, "N", &names);
	list(f->out, "C", &cs);
	list(f->out, "F", &fs);
	list(f->out, "V", &vs);
	list(f->out, "S", &ss);
	hp_buf_printf(f->out, "]]></script>\n");
}

static void
box(flame *f, bool emit, double x, double w, uint32_t depth, const char *fill,
	double self, double delta, const hp_func *fn, size_t narrower)
{
	char		amount[96];
	double		pct = f->total > 0 ? 100.0 * w / f->total : 0;

	if (!emit)
	{
		if (depth > f->max_depth)
			f->max_depth = depth;
		return;
	}
	if (f->diff && fn)
		snprintf(amount, sizeof(amount), "%.0f %s now, %+.0f %s", w, f->unit, delta, f->unit);
	else
		snprintf(amount, sizeof(amount), "%.0f %s, %.2f%%", w, f->unit, pct);
	hp_buf_printf(f->out, "<g class=\"f\" data-x=\"%.2f\" data-w=\"%.2f\" data-depth=\"%u\" data-fill=\"%s\" ",
				  x * f->scale, w * f->scale, depth, fill);
	if (fn)
	{
		hp_buf_printf(f->out, "data-self=\"%.0f\" data-f=\"%u\" onmouseover=\"info(this)\" "
					  "onmouseout=\"clear_info()\" onclick=\"zoom(this)\"><title>", self, f->ids[fn - f->g->funcs]);
		hp_sink_buf(f->out, HP_SINK_XML, fn->name, TITLE_MAX);
	}
	else
		hp_buf_printf(f->out, "data-self=\"0\" data-f=\"-1\" data-name=\"%zu narrower frame%s\" "
					  "onmouseover=\"info(this)\" onmouseout=\"clear_info()\"><title>%zu narrower frame%s",
					  narrower, narrower == 1 ? "" : "s", narrower, narrower == 1 ? "" : "s");
	hp_buf_printf(f->out, " (%s)</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" "
				  "fill=\"%s\" rx=\"2\"/><text y=\"%d\"></text></g>\n",
				  amount, PAD_SIDE + x * f->scale,
				  f->height - PAD_BOTTOM - (int) (depth + 1) * FRAME_H, w * f->scale, FRAME_H - 1,
				  fill, f->height - PAD_BOTTOM - (int) depth * FRAME_H - 4);
}

typedef struct placed
{
	uint32_t	node;
	double		x;
} placed;

/*
 * The children of parent (NONE: the roots) that are drawn, placed left to
 * right from x and pushed; those narrower than dcut become one box after
 * them when it is MIN_PX wide.  Returns the width of all children.
 */
static double
place_children(flame *f, bool emit, uint32_t parent, double x, placed *stack, size_t *sp)
{
	tree	   *t = &f->t;
	uint32_t	depth = parent == NONE ? 0 : t->nodes[parent].depth + 1;
	double		sum = 0, narrow = 0;
	size_t		nnarrow = 0;

	for (uint32_t c = parent == NONE ? t->roots : t->nodes[parent].first_child; c != NONE;
		 c = t->nodes[c].next_sibling)
	{
		double		w = t->nodes[c].width;

		hp_work(f->a->env, 1);
		if (w <= 0)
			continue;
		sum += w;
		if (w >= f->dcut)
		{
			stack[(*sp)++] = (placed) {c, x};
			x += w;
		}
		else
		{
			narrow += w;
			nnarrow++;
		}
	}
	if (nnarrow > 0 && narrow >= f->px)
		box(f, emit, x, narrow, depth, "rgb(200,200,200)", 0, 0, NULL, nnarrow);
	return sum;
}

/* Depth-first from the roots, every drawn frame; without emit only the depth drawn. */
static void
draw(flame *f, bool emit, placed *stack)
{
	size_t		sp = 0;

	place_children(f, emit, NONE, 0, stack, &sp);
	while (sp > 0)
	{
		placed		p = stack[--sp];
		node	   *nd = &f->t.nodes[p.node];
		double		self = nd->width - place_children(f, emit, p.node, p.x, stack, &sp);
		char		color[48];

		frame_color(f->o, &f->g->funcs[nd->func], nd->delta, f->max_delta, f->diff, color, sizeof(color));
		box(f, emit, p.x, nd->width, nd->depth, color, self, nd->delta, &f->g->funcs[nd->func], 0);
	}
}

void
hp_render_flamegraph(hp_arena *a, const hp_graph *g, const hp_options *o,
					 const char *title, bool diff, hp_buf *out)
{
	flame		f = {.a = a, .g = g, .o = o, .diff = diff, .out = out};
	double		minw = HUGE_VAL;
	size_t		ndrawn = 0;
	placed	   *stack;
	char		cov[160];

	f.unit = o->measure == HP_INUSE_OBJECTS ? "objects" : "bytes";
	build_tree(a, g, diff, &f.t, &f.total);
	hp_work(a->env, f.t.n);
	for (size_t i = 0; i < f.t.n; i++)
	{
		f.max_delta = fmax(f.max_delta, fabs(f.t.nodes[i].delta));
		if (f.t.nodes[i].width > 0)
			minw = fmin(minw, f.t.nodes[i].width);
	}
	/* each function's cum, counted once per path however often it recurs */
	{
		uint32_t   *seen = hp_alloc(a, (g->nfuncs ? g->nfuncs : 1) * sizeof(uint32_t));

		f.cum = hp_alloc(a, (g->nfuncs ? g->nfuncs : 1) * sizeof(double));
		for (size_t k = 0; k < g->npaths; k++)
		{
			const hp_path *path = &g->paths[k];
			double		w = diff ? path->current : path->value;

			hp_work(a->env, path->nframes + 1);
			for (uint32_t j = 0; j < path->nframes && w > 0; j++)
				if (seen[path->frames[j]] != k + 1)
				{
					seen[path->frames[j]] = (uint32_t) k + 1;
					f.cum[path->frames[j]] += w;
				}
		}
	}
	f.scale = f.total > 0 ? (WIDTH - 2 * PAD_SIDE) / f.total : 0;
	f.tcut = f.dcut = f.px = HUGE_VAL;
	if (f.total > 0)
	{
		cut_cost	c = {g, true, hp_alloc(a, (g->nfuncs ? g->nfuncs : 1) * sizeof(uint32_t)), 0};

		/* the search table within its budget; drawn, what it holds at least MIN_PX wide */
		f.px = MIN_PX / f.scale;
		f.tcut = find_cut(&f.t, minw, fmin(2 * f.total, DBL_MAX), TABLE_BYTES, &c);
		c.table = false;
		f.dcut = find_cut(&f.t, fmax(f.px, f.tcut), fmin(2 * f.total, DBL_MAX), MAX_FRAMES, &c);
	}
	for (size_t i = 0; i < f.t.n; i++)
		ndrawn += f.t.nodes[i].width > 0 && f.t.nodes[i].width >= f.dcut;
	stack = hp_alloc(a, (ndrawn + 1) * sizeof(placed));
	draw(&f, false, stack);
	f.height = PAD_TOP + (int) (f.max_depth + 1) * FRAME_H + PAD_BOTTOM;

	hp_buf_printf(out,
				  "<?xml version=\"1.0\" standalone=\"no\"?>\n"
				  "<svg version=\"1.1\" width=\"%d\" height=\"%d\" onload=\"init()\" "
				  "viewBox=\"0 0 %d %d\" xmlns=\"http://www.w3.org/2000/svg\">\n",
				  WIDTH, f.height, WIDTH, f.height);
	hp_buf_printf(out, "<style>text { font-family: Verdana, sans-serif; font-size: 12px; fill: #000; }"
				  " .f:hover rect { stroke: #000; stroke-width: 0.5; cursor: pointer; }"
				  " .b { cursor: pointer; fill: #235; }</style>\n");
	write_table(&f);
	/* T is JavaScript: a number printf cannot spell there is none */
	hp_buf_printf(out, script, WIDTH, f.unit, isfinite(f.total) ? f.total : f.total > 0 ? DBL_MAX : 0, PAD_SIDE, PAD_SIDE, PAD_SIDE, PAD_SIDE, PAD_SIDE);
	hp_buf_printf(out, "<rect width=\"100%%\" height=\"100%%\" fill=\"#f8f8f4\"/>\n"
				  "<text x=\"%d\" y=\"24\" text-anchor=\"middle\" style=\"font-size:17px\">",
				  WIDTH / 2);
	hp_sink_buf(out, HP_SINK_XML, title, TITLE_MAX);
	hp_buf_printf(out, "</text>\n<text x=\"%d\" y=\"44\" text-anchor=\"middle\" style=\"fill:#555\">"
				  "%s%.0f %s%s", WIDTH / 2, diff ? "growth against the base; widths: now " : "total ",
				  f.total, f.unit, diff ? " (red grew, blue shrank)" : "");
	if (hp_coverage_line(g, cov, sizeof(cov)))
		hp_buf_printf(out, ". %s", cov);
	hp_buf_printf(out, "</text>\n");
	hp_buf_printf(out, "<text id=\"unzoom\" class=\"b\" x=\"%d\" y=\"24\" style=\"opacity:0\" "
				  "onclick=\"unzoom()\">Reset Zoom</text>\n", PAD_SIDE);
	hp_buf_printf(out, "<text class=\"b\" x=\"%d\" y=\"24\" text-anchor=\"end\" onclick=\"search()\">"
				  "Search</text>\n", WIDTH - PAD_SIDE);
	hp_buf_printf(out, "<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> </text>\n",
				  WIDTH - PAD_SIDE, f.height - 12);
	hp_buf_printf(out, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", PAD_SIDE, f.height - 12);
	draw(&f, true, stack);
	hp_buf_printf(out, "</svg>\n");
}
