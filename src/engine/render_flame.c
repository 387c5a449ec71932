/*
 * render_flame.c -- an interactive SVG flame graph, in the style of
 * flamegraph.pl.
 *
 * Paths become a tree from the root (bottom) to the allocating frames (top);
 * a frame's width is the memory below it.  The SVG is self-contained:
 * tooltips (<title>), a details line on hover, click to zoom, a search (the
 * Search button, or ?s=REGEX in the URL) that highlights matching frames and
 * tells the share of the stacks through them -- heapprof_top's cum_pct for
 * one function -- all in a few lines of script.  Colors tell the object: the program itself (o->home_object, e.g.
 * postgres) warm, its extensions purple, the C library and loader green,
 * other libraries aqua.  In a diff, widths are the current profile and
 * colors the change: red grew, blue shrank.  Names come from ELF and DWARF
 * and may hold any byte: they are escaped, and bytes that are not UTF-8
 * become '?', so the document is always well-formed XML.
 */
#include "render.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define WIDTH 1200
#define FRAME_H 16
#define PAD_TOP 56
#define PAD_BOTTOM 34
#define PAD_SIDE 10
#define MIN_WIDTH 0.1			/* narrower frames are not drawn */

typedef struct node
{
	uint32_t	func;
	uint32_t	depth;
	double		width;			/* current memory below, drawn */
	double		delta;			/* change against the base (= width without one) */
	double		x;
	uint32_t	first_child;	/* 0: none; node index + 1 */
	uint32_t	next_sibling;
} node;

static uint32_t
child_of(hp_arena *a, hp_map *index, node **nodes, size_t *cap, size_t *n,
		 uint32_t parent, uint32_t func, uint32_t depth)
{
	uint32_t	key[2] = {parent, func};
	bool		added;
	size_t		i = hp_map_put(index, key, sizeof(key), &added);

	if (added)
	{
		HP_RESERVE(a, *nodes, *cap, i);
		(*nodes)[i] = (node) {func, depth, 0, 0, 0, 0, 0};
		/* link as the last child keeps the order of first appearance */
		if (parent != UINT32_MAX)
		{
			uint32_t   *link = &(*nodes)[parent].first_child;

			while (*link)
				link = &(*nodes)[*link - 1].next_sibling;
			*link = (uint32_t) i + 1;
		}
		*n = i + 1;
	}
	return (uint32_t) i;
}

/* Length of the valid UTF-8 character XML allows at s, or 0. */
static size_t
utf8_char(const unsigned char *s)
{
	uint32_t	c;
	size_t		n;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, c = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, c = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, c = s[0] & 0x07;
	else
		return 0;
	/* a NUL ends the string before any missing continuation byte is read */
	for (size_t k = 1; k < n; k++)
	{
		if ((s[k] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[k] & 0x3f);
	}
	if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) ||
		(c >= 0xd800 && c <= 0xdfff) || c == 0xfffe || c == 0xffff)
		return 0;
	return n;
}

/* s as XML text: at most max bytes, markup escaped, control characters dropped. */
static void
xml_text(hp_buf *out, const char *s, size_t max)
{
	for (size_t i = 0; s[i] && i < max; i++)
	{
		size_t		n = utf8_char((const unsigned char *) &s[i]);

		if (n == 0)
		{
			hp_buf_append(out, "?", 1);
			continue;
		}
		if (n > 1)
		{
			if (i + n > max)
				break;
			hp_buf_append(out, &s[i], n);
			i += n - 1;
			continue;
		}
		switch (s[i])
		{
			case '&':
				hp_buf_printf(out, "&amp;");
				break;
			case '<':
				hp_buf_printf(out, "&lt;");
				break;
			case '>':
				hp_buf_printf(out, "&gt;");
				break;
			case '"':
				hp_buf_printf(out, "&quot;");
				break;
			default:
				if ((unsigned char) s[i] >= 0x20)
					hp_buf_append(out, &s[i], 1);
		}
	}
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
	"  frames.forEach(function (g) { g.ox = +g.dataset.x; g.ow = +g.dataset.w; fit(g); });\n"
	"  var top = null;\n"
	"  frames.forEach(function (g) { if (+g.dataset.self > (top ? +top.dataset.self : 0)) top = g; });\n"
	"  details.textContent = top ? 'Top frame: ' + top.dataset.name : 'Empty profile';\n"
	"  var q = /[?&]s=([^&]*)/.exec(location.search);  // a search from the URL, as flamegraph.pl's\n"
	"  if (q) { try { q = decodeURIComponent(q[1]); } catch (e) { q = q[1]; } find(q); }\n"
	"}\n"
	"function fit(g) {\n"
	"  var r = g.querySelector('rect'), t = g.querySelector('text'), w = +r.getAttribute('width');\n"
	"  var n = Math.floor((w - 6) / 7), s = g.dataset.name;\n"
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
	"/* the share of the stacks through a matching frame, each stack once (as cum): the union of spans */\n"
	"function find(term) {\n"
	"  var re, spans = [], hit = 0, end = 0;\n"
	"  try { re = new RegExp(term); } catch (e) { matched.textContent = 'Bad search: ' + e.message; return; }\n"
	"  frames.forEach(function (f) {\n"
	"    var on = term !== '' && re.test(f.dataset.name);\n"
	"    f.querySelector('rect').setAttribute('fill', on ? 'rgb(230,0,230)' : f.dataset.fill);\n"
	"    if (on) spans.push([+f.dataset.lo, +f.dataset.hi]);\n"
	"  });\n"
	"  Array.prototype.forEach.call(document.getElementsByClassName('h'), function (f) {\n"
	"    if (term !== '' && re.test(f.dataset.name)) spans.push([+f.dataset.lo, +f.dataset.hi]);\n"
	"  });\n"
	"  spans.sort(function (a, b) { return a[0] - b[0]; });\n"
	"  spans.forEach(function (s) { if (s[1] > end) { hit += s[1] - Math.max(s[0], end); end = s[1]; } });\n"
	"  matched.textContent = term === '' ? ' ' : 'Matched: ' + Math.round(hit) + ' ' + unit + ', ' +\n"
	"    (T > 0 ? (100 * hit / T).toFixed(1) : '0.0') + '%% of ' + Math.round(T);\n"
	"}\n"
	"]]></script>\n";

void
hp_render_flamegraph(hp_arena *a, const hp_graph *g, const hp_options *o,
					 const char *title, bool diff, hp_buf *out)
{
	hp_map		index;
	node	   *nodes = NULL;
	size_t		cap = 0;
	size_t		n = 0;
	double		total = 0;
	double		max_delta = 0;
	uint32_t	max_depth = 0;
	double		scale;
	int			height;
	const char *unit = o->measure == HP_INUSE_OBJECTS ? "objects" : "bytes";
	char		cov[160];
	uint32_t   *stack;
	size_t		scap;
	double	   *self;

	hp_map_init(&index, a);
	/* the tree, root (depth 0) first; widths from the current profile */
	for (size_t k = 0; k < g->npaths; k++)
	{
		const hp_path *path = &g->paths[k];
		double		w = diff ? path->current : path->value;
		uint32_t	parent = UINT32_MAX;

		hp_work(a->env, path->nframes + 1);
		if (path->nframes == 0)
			continue;
		total += w > 0 ? w : 0;
		for (uint32_t j = path->nframes, d = 0; j-- > 0; d++)
		{
			uint32_t	i = child_of(a, &index, &nodes, &cap, &n, parent, path->frames[j], d);

			nodes[i].width += w > 0 ? w : 0;
			nodes[i].delta += path->value;
			if (d > max_depth)
				max_depth = d;
			parent = i;
		}
	}
	for (size_t i = 0; i < n; i++)
		max_delta = fmax(max_delta, fabs(nodes[i].delta));
	/* each frame's own memory: what its children do not take */
	self = hp_alloc(a, (n ? n : 1) * sizeof(double));
	hp_work(a->env, 2 * n);
	for (size_t i = 0; i < n; i++)
	{
		self[i] = nodes[i].width;
		for (uint32_t c = nodes[i].first_child; c; c = nodes[c - 1].next_sibling)
			self[i] -= nodes[c - 1].width;
	}

	scale = total > 0 ? (WIDTH - 2 * PAD_SIDE) / total : 0;
	height = PAD_TOP + (int) (max_depth + 1) * FRAME_H + PAD_BOTTOM;
	hp_buf_printf(out,
				  "<?xml version=\"1.0\" standalone=\"no\"?>\n"
				  "<svg version=\"1.1\" width=\"%d\" height=\"%d\" onload=\"init()\" "
				  "viewBox=\"0 0 %d %d\" xmlns=\"http://www.w3.org/2000/svg\">\n",
				  WIDTH, height, WIDTH, height);
	hp_buf_printf(out, "<style>text { font-family: Verdana, sans-serif; font-size: 12px; fill: #000; }"
				  " .f:hover rect { stroke: #000; stroke-width: 0.5; cursor: pointer; }"
				  " .b { cursor: pointer; fill: #235; }</style>\n");
	hp_buf_printf(out, script, WIDTH, unit, total, PAD_SIDE, PAD_SIDE, PAD_SIDE, PAD_SIDE, PAD_SIDE);
	hp_buf_printf(out, "<rect width=\"100%%\" height=\"100%%\" fill=\"#f8f8f4\"/>\n"
				  "<text x=\"%d\" y=\"24\" text-anchor=\"middle\" style=\"font-size:17px\">",
				  WIDTH / 2);
	xml_text(out, title, 300);
	hp_buf_printf(out, "</text>\n<text x=\"%d\" y=\"44\" text-anchor=\"middle\" style=\"fill:#555\">"
				  "%s%.0f %s%s", WIDTH / 2, diff ? "growth against the base; widths: now " : "total ",
				  total, unit, diff ? " (red grew, blue shrank)" : "");
	if (hp_coverage_line(g, cov, sizeof(cov)))
		hp_buf_printf(out, ". %s", cov);
	hp_buf_printf(out, "</text>\n");
	hp_buf_printf(out, "<text id=\"unzoom\" class=\"b\" x=\"%d\" y=\"24\" style=\"opacity:0\" "
				  "onclick=\"unzoom()\">Reset Zoom</text>\n", PAD_SIDE);
	hp_buf_printf(out, "<text class=\"b\" x=\"%d\" y=\"24\" text-anchor=\"end\" onclick=\"search()\">"
				  "Search</text>\n", WIDTH - PAD_SIDE);
	hp_buf_printf(out, "<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> </text>\n",
				  WIDTH - PAD_SIDE, height - 12);
	hp_buf_printf(out, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", PAD_SIDE, height - 12);

	/* depth-first, children left to right from their parent's x */
	scap = n + 1;
	stack = hp_alloc(a, scap * sizeof(uint32_t));
	{
		size_t		sp = 0;
		double		x = 0;

		for (size_t i = 0; i < n; i++)
			if (nodes[i].depth == 0)
			{
				nodes[i].x = x;
				x += nodes[i].width;
				stack[sp++] = (uint32_t) i;
			}
		while (sp > 0)
		{
			node	   *nd = &nodes[stack[--sp]];
			double		cx = nd->x;
			double		w = nd->width * scale;
			const hp_func *fn = &g->funcs[nd->func];
			char		color[48];
			char		amount[96];
			double		pct = total > 0 ? 100.0 * nd->width / total : 0;

			hp_work(a->env, 1);
			for (uint32_t c = nd->first_child; c; c = nodes[c - 1].next_sibling)
			{
				nodes[c - 1].x = cx;
				cx += nodes[c - 1].width;
				stack[sp++] = c - 1;
			}
			if (nd->width <= 0)
				continue;
			/* too narrow to draw, but searched: a match must count its stacks */
			if (w < MIN_WIDTH)
			{
				hp_buf_printf(out, "<g class=\"h\" data-lo=\"%.3f\" data-hi=\"%.3f\" data-name=\"",
							  nd->x, nd->x + nd->width);
				xml_text(out, fn->name, 1000);
				hp_buf_printf(out, "\"/>\n");
				continue;
			}
			frame_color(o, fn, nd->delta, max_delta, diff, color, sizeof(color));
			if (diff)
				snprintf(amount, sizeof(amount), "%.0f %s now, %+.0f %s", nd->width, unit, nd->delta, unit);
			else
				snprintf(amount, sizeof(amount), "%.0f %s, %.2f%%", nd->width, unit, pct);
			/* lo, hi: the span in the measure's units, for search */
			hp_buf_printf(out, "<g class=\"f\" data-x=\"%.2f\" data-w=\"%.2f\" data-lo=\"%.3f\" "
						  "data-hi=\"%.3f\" data-depth=\"%u\" data-self=\"%.0f\" data-fill=\"%s\" data-name=\"",
						  nd->x * scale, w, nd->x, nd->x + nd->width, nd->depth, self[nd - nodes], color);
			xml_text(out, fn->name, 1000);
			hp_buf_printf(out, "\" onmouseover=\"info(this)\" onmouseout=\"clear_info()\" "
						  "onclick=\"zoom(this)\"><title>");
			xml_text(out, fn->name, 1000);
			hp_buf_printf(out, " (%s)</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" "
						  "fill=\"%s\" rx=\"2\"/><text y=\"%d\"></text></g>\n",
						  amount, PAD_SIDE + nd->x * scale,
						  height - PAD_BOTTOM - (int) (nd->depth + 1) * FRAME_H, w, FRAME_H - 1,
						  color, height - PAD_BOTTOM - (int) nd->depth * FRAME_H - 4);
		}
	}
	hp_buf_printf(out, "</svg>\n");
}
