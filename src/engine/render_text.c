/*
 * render_text.c -- text, top, dot and collapsed reports with jeprof's exact
 * layout.
 *
 * Numbers are formatted as jeprof's Unparse and Percent do (MB with one
 * decimal, or truncated integers for bytes and objects), so a report can be
 * compared with jeprof's character by character.  Where jeprof depends on
 * Perl hash order (equal dot edges, collapsed lines) the order here is fixed.
 */
#include "render.h"
#include "sink.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

long long
hp_whole(double v)
{
	if (!(v == v))
		return 0;
	if (v >= 9.2e18)
		return 9200000000000000000LL;
	if (v <= -9.2e18)
		return -9200000000000000000LL;
	return (long long) v;
}

long long
hp_whole_next(hp_wholes *w, double v)
{
	long long	before = w->printed;
	long long	d;

	w->sum += v;
	w->printed = hp_whole(w->sum);
	/* from one clamp to the other (1e300, then -inf) is beyond a long long */
	if (__builtin_sub_overflow(w->printed, before, &d))
		return w->printed > before ? LLONG_MAX : LLONG_MIN;
	return d;
}

long long
hp_whole_cum(const hp_row *r)
{
	long long	cum = hp_whole(r->cum);

	return r->flat >= 0 && r->cum >= 0 && cum < r->whole_flat ? r->whole_flat : cum;
}

static void
unparse(const hp_options *o, double v, char *buf, size_t len)
{
	if (o->measure == HP_INUSE_OBJECTS || o->show_bytes)
		snprintf(buf, len, "%lld", hp_whole(v));
	else
		snprintf(buf, len, "%.1f", v / 1048576.0);
}

static const char *
units(const hp_options *o)
{
	if (o->measure == HP_INUSE_OBJECTS)
		return "objects";
	return o->show_bytes ? "B" : "MB";
}

void
hp_percent(double n, double total, char *buf, size_t len)
{
	if (total != 0)
		snprintf(buf, len, "%.1f%%", n * 100.0 / total);
	else
		snprintf(buf, len, "%s", n == 0 ? "nan" : n > 0 ? "+inf" : "-inf");
}

bool
hp_coverage_line(const hp_graph *g, char *buf, size_t len)
{
	const hp_coverage *c = &g->coverage;
	double		pct = c->allocated > 0 ? g->profile_bytes * 100.0 / (double) c->allocated : 0;
	char		when[64];
	time_t		t = (time_t) (c->since / 1000000);
	struct tm	tm;

	if (!c->known)
		return false;
	if (c->since == 0 || gmtime_r(&t, &tm) == NULL)
		snprintf(when, sizeof(when), "Not sampled since the process started or was reset");
	else
		strftime(when, sizeof(when), "Sampled since %Y-%m-%d %H:%M:%S UTC", &tm);
	snprintf(buf, len, "%s: %.1f MB of the %.1f MB allocated (%.0f%%)", when,
			 g->profile_bytes / 1048576.0, (double) c->allocated / 1048576.0, pct);
	return true;
}

/* jeprof's order: signed value desc (not abs), then name byte-wise */
static int
by_values(double x, double y, const hp_row *a, const hp_row *b)
{
	if (x != y)
		return x > y ? -1 : 1;
	return strcmp(a->func->name, b->func->name);
}

static int
flat_cmp(const void *a, const void *b)
{
	return by_values(((const hp_row *) a)->flat, ((const hp_row *) b)->flat, a, b);
}

static int
cum_cmp(const void *a, const void *b)
{
	return by_values(((const hp_row *) a)->cum, ((const hp_row *) b)->cum, a, b);
}

size_t
hp_top(hp_arena *a, const hp_graph *g, size_t limit, bool by_cum, hp_row **rows)
{
	hp_row	   *r = hp_alloc(a, (g->nfuncs ? g->nfuncs : 1) * sizeof(*r));
	size_t		n = 0;
	size_t		out = 0;
	double		running = 0;
	hp_wholes	wholes = {0};

	for (size_t f = 0; f < g->nfuncs; f++)
		if (g->funcs[f].seen)
		{
			r[n].func = &g->funcs[f];
			r[n].flat = g->funcs[f].flat;
			r[n].cum = g->funcs[f].cum;
			n++;
		}
	hp_work(a->env, g->nfuncs + n);
	qsort(r, n, sizeof(*r), by_cum ? cum_cmp : flat_cmp);
	for (size_t i = 0; i < n && out < limit; i++)
	{
		running += r[i].flat;
		r[i].whole_flat = hp_whole_next(&wholes, r[i].flat);
		if (r[i].flat == 0 && r[i].cum == 0)
			continue;
		r[i].running = running;
		r[out++] = r[i];
	}
	*rows = r;
	return out;
}

void
hp_render_text(hp_arena *a, const hp_graph *g, const hp_options *o, size_t limit, hp_buf *out)
{
	hp_row	   *rows;
	size_t		n = hp_top(a, g, limit, o->by_cum, &rows);
	char		v1[64], v2[64], v3[64], p1[32], p2[32], p3[32];
	char		cov[160];
	double		grew = 0;
	double		shrank = 0;

	if (g->total != 0)
	{
		unparse(o, g->total, v1, sizeof(v1));
		hp_buf_printf(out, "Total: %s %s\n", v1, units(o));
		if (hp_coverage_line(g, cov, sizeof(cov)))
			hp_buf_printf(out, "%s\n", cov);
	}
	hp_work(a->env, g->npaths);
	for (size_t k = 0; k < g->npaths; k++)
		if (g->paths[k].nframes > 0)
			*(g->paths[k].value < 0 ? &shrank : &grew) += g->paths[k].value;
	/* a diff that shrinks somewhere: jeprof's shares of the net can pass 100% or flip sign */
	if (shrank < 0)
	{
		unparse(o, grew, v1, sizeof(v1));
		unparse(o, -shrank, v2, sizeof(v2));
		unparse(o, g->local_total, v3, sizeof(v3));
		hp_buf_printf(out, "Diff: %s %s grew, %s %s shrank (negative rows); "
					  "percentages are of the net change, %s %s, as in jeprof --base\n",
					  v1, units(o), v2, units(o), v3, units(o));
	}
	for (size_t i = 0; i < n; i++)
	{
		hp_work(a->env, 1);
		if (o->measure == HP_INUSE_OBJECTS || o->show_bytes)
			snprintf(v1, sizeof(v1), "%lld", rows[i].whole_flat);
		else
			unparse(o, rows[i].flat, v1, sizeof(v1));
		if (o->measure == HP_INUSE_OBJECTS || o->show_bytes)
			snprintf(v2, sizeof(v2), "%lld", hp_whole_cum(&rows[i]));
		else
			unparse(o, rows[i].cum, v2, sizeof(v2));
		hp_percent(rows[i].flat, g->local_total, p1, sizeof(p1));
		hp_percent(rows[i].running, g->local_total, p2, sizeof(p2));
		hp_percent(rows[i].cum, g->local_total, p3, sizeof(p3));
		hp_buf_printf(out, "%8s %6s %6s %8s %6s ", v1, p1, p2, v2, p3);
		hp_sink_buf(out, HP_SINK_TERM, rows[i].func->name, SIZE_MAX);
		hp_buf_append(out, "\n", 1);
	}
}

/* Node order: |cum| desc, name asc. */
static int
node_cmp(const void *a, const void *b)
{
	const hp_func *x = *(const hp_func *const *) a;
	const hp_func *y = *(const hp_func *const *) b;

	if (fabs(x->cum) != fabs(y->cum))
		return fabs(x->cum) > fabs(y->cum) ? -1 : 1;
	return strcmp(x->name, y->name);
}

typedef struct edge
{
	uint32_t	src;			/* node numbers, 1-based */
	uint32_t	dst;
	double		value;
	bool		dashed;
} edge;

static int
edge_cmp(const void *a, const void *b)
{
	const edge *x = a;
	const edge *y = b;

	if (x->value != y->value)
		return x->value > y->value ? -1 : 1;
	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	return (x->dst > y->dst) - (x->dst < y->dst);
}

/* Graphviz label text: whitespace runs and "::" become line breaks. */
static void
dot_label(hp_buf *out, const char *name)
{
	for (const char *p = name; *p;)
	{
		if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f')
		{
			while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f')
				p++;
			hp_buf_append(out, "\\n", 2);
		}
		else if (p[0] == ':' && p[1] == ':')
		{
			hp_buf_append(out, "\\n", 2);
			p += 2;
		}
		else
		{
			char		e[HP_SINK_MAX];
			size_t		n;

			p += hp_sink_char(HP_SINK_DOT, p, strnlen(p, 4), e, &n);
			hp_buf_append(out, e, n);
		}
	}
}

void
hp_render_dot(hp_arena *a, const hp_graph *g, const hp_options *o, hp_buf *out)
{
	double		L = g->local_total;
	double		nodelimit = hp_whole(o->nodefraction * L);
	double		edgelimit = hp_whole(o->edgefraction * L);
	const hp_func **nodes = hp_alloc(a, (g->nfuncs ? g->nfuncs : 1) * sizeof(*nodes));
	uint32_t   *node_of = hp_alloc(a, (g->nfuncs ? g->nfuncs : 1) * sizeof(uint32_t));
	size_t		n = 0;
	size_t		last;
	hp_map		edges;
	edge	   *ev = NULL;
	size_t		ecap = 0;
	uint32_t   *indeg;
	uint32_t   *outdeg;
	char		v1[64], v2[64], p1[32];
	char		cov[160];

	for (size_t f = 0; f < g->nfuncs; f++)
		if (g->funcs[f].seen)
			nodes[n++] = &g->funcs[f];
	hp_work(a->env, g->nfuncs + n);
	qsort(nodes, n, sizeof(*nodes), node_cmp);
	last = n < (size_t) o->nodecount ? n : (size_t) o->nodecount;
	while (last > 0 && fabs(nodes[last - 1]->cum) <= nodelimit)
		last--;

	unparse(o, g->total, v1, sizeof(v1));
	hp_buf_printf(out, "digraph \"");
	hp_sink_buf(out, HP_SINK_DOT, o->program, SIZE_MAX);
	hp_buf_printf(out, "; %s %s\" {\n", v1, units(o));
	hp_buf_printf(out, "node [width=0.375,height=0.25];\n");
	hp_buf_printf(out, "Legend [shape=box,fontsize=24,shape=plaintext,label=\"");
	hp_sink_buf(out, HP_SINK_DOT, o->program, SIZE_MAX);
	hp_buf_printf(out, "\\lTotal %s: %s\\l", units(o), v1);
	if (g->total != 0 && hp_coverage_line(g, cov, sizeof(cov)))
	{
		hp_sink_buf(out, HP_SINK_DOT, cov, SIZE_MAX);
		hp_buf_printf(out, "\\l");
	}
	unparse(o, L, v1, sizeof(v1));
	hp_buf_printf(out, "Focusing on: %s\\l", v1);
	unparse(o, nodelimit, v1, sizeof(v1));
	unparse(o, edgelimit, v2, sizeof(v2));
	hp_buf_printf(out, "Dropped nodes with <= %s abs(%s)\\lDropped edges with <= %s %s\\l\"];\n",
				  v1, units(o), v2, units(o));
	/* a larger drawing is scaled down to 10x7 inches: its SVG opens whole in a browser window */
	hp_buf_printf(out, "size=\"10,7\";\n");

	for (size_t i = 0; i < last; i++)
	{
		const hp_func *fn = nodes[i];
		double		fs = L > 0 ? 8 + (50.0 * sqrt(fabs(fn->flat * 1.0 / L))) : 8;

		hp_work(a->env, 1);
		node_of[fn - g->funcs] = (uint32_t) (i + 1);
		hp_buf_printf(out, "N%zu [label=\"", i + 1);
		dot_label(out, fn->name);
		unparse(o, fn->flat, v1, sizeof(v1));
		hp_percent(fn->flat, L, p1, sizeof(p1));
		hp_buf_printf(out, "\\n%s (%s)", v1, p1);
		if (fn->flat != fn->cum)
		{
			unparse(o, fn->cum, v1, sizeof(v1));
			hp_percent(fn->cum, L, p1, sizeof(p1));
			hp_buf_printf(out, "\\rof %s (%s)", v1, p1);
		}
		hp_buf_printf(out, "\\r\",shape=box,fontsize=%.1f];\n", fs);
	}

	/* edges from unreduced paths: caller -> callee for each adjacent pair */
	hp_map_init(&edges, a);
	for (size_t k = 0; k < g->npaths; k++)
	{
		const hp_path *path = &g->paths[k];

		hp_work(a->env, path->nframes + 1);
		for (uint32_t j = 1; j < path->nframes; j++)
		{
			uint32_t	callee = node_of[path->frames[j - 1]];
			uint32_t	node = node_of[path->frames[j]];
			uint32_t	key[2] = {node, callee};
			bool		added;
			size_t		e;

			if (callee == 0 || node == 0)
				continue;
			e = hp_map_put(&edges, key, sizeof(key), &added);
			if (added)
			{
				HP_RESERVE(a, ev, ecap, e);
				ev[e] = (edge) {node, callee, 0,
				strstr(nodes[callee - 1]->name, "(inline)") != NULL};
			}
			ev[e].value += path->value;
		}
	}
	hp_work(a->env, edges.count);
	if (edges.count)
		qsort(ev, edges.count, sizeof(*ev), edge_cmp);
	indeg = hp_alloc(a, (last + 1) * sizeof(uint32_t));
	outdeg = hp_alloc(a, (last + 1) * sizeof(uint32_t));
	for (size_t e = 0; e < edges.count; e++)
	{
		double		v = ev[e].value;
		double		fraction;
		double		weight;

		hp_work(a->env, 1);
		if (indeg[ev[e].dst] != 0 &&
			(fabs(v) <= edgelimit || outdeg[ev[e].src] >= 8 || indeg[ev[e].dst] >= 8))
			continue;
		outdeg[ev[e].src]++;
		indeg[ev[e].dst]++;
		fraction = fabs(L != 0 ? (3 * (v / L)) : 0);
		if (fraction > 1)
			fraction = 1;
		weight = pow(fabs(v), 0.7);
		if (weight > 100000)
			weight = 100000;
		unparse(o, v, v1, sizeof(v1));
		hp_buf_printf(out, "N%u -> N%u [label=%s, weight=%lld, style=\"setlinewidth(%f)%s\"];\n",
					  ev[e].src, ev[e].dst, v1, hp_whole(weight), fraction * 2,
					  ev[e].dashed ? ",dashed" : "");
	}
	hp_buf_printf(out, "}\n");
}

static int
path_cmp(const void *a, const void *b)
{
	const hp_path *x = *(const hp_path *const *) a;
	const hp_path *y = *(const hp_path *const *) b;

	if (x->value != y->value)
		return x->value > y->value ? -1 : 1;
	return (x > y) - (x < y);
}

void
hp_render_collapsed(hp_arena *a, const hp_graph *g, hp_buf *out)
{
	const hp_path **order = hp_alloc(a, (g->npaths ? g->npaths : 1) * sizeof(*order));
	hp_wholes	wholes = {0};

	for (size_t k = 0; k < g->npaths; k++)
		order[k] = &g->paths[k];
	hp_work(a->env, g->npaths);
	qsort(order, g->npaths, sizeof(*order), path_cmp);
	for (size_t k = 0; k < g->npaths; k++)
	{
		const hp_path *path = order[k];

		hp_work(a->env, path->nframes + 1);
		/* root to leaf */
		for (uint32_t j = path->nframes; j-- > 0;)
		{
			const char *name = g->funcs[path->frames[j]].name;
			size_t		len = strlen(name);
			size_t		slen = strlen(HP_INLINE_SUFFIX);
			bool		inl = len > slen && strcmp(name + len - slen, HP_INLINE_SUFFIX) == 0;

			/* flamegraph.pl convention, as jeprof: "f[inline]" */
			if (inl)
				len -= slen;
			/* a control byte (a newline above all) would split the line, a ';' the frame */
			hp_sink_buf(out, HP_SINK_FRAME, name, len);
			if (inl)
				hp_buf_append(out, "[inline]", 8);
			if (j > 0)
				hp_buf_append(out, ";", 1);
		}
		hp_buf_printf(out, " %lld\n", hp_whole_next(&wholes, path->value));
	}
}
