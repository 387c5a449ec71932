/*
 * render.h -- reports from a graph: jeprof's formats (render_text.c), the
 * SVG flame graph (render_flame.c) and pprof's protobuf (render_pprof.c).
 *
 * Renderers write into arena text, count their work (hp_work per frame,
 * node or edge emitted) and raise their failures through a->env.
 */
#ifndef HEAPPROF_RENDER_H
#define HEAPPROF_RENDER_H

#include "graph.h"

typedef struct hp_row
{
	const hp_func *func;
	double		flat;
	long long	whole_flat;		/* flat as a whole number: the rows add up (hp_wholes) */
	double		running;		/* flat of this row and every row above it */
	double		cum;
} hp_row;

/*
 * Functions by flat (or with by_cum, cum) desc, name asc: jeprof --text
 * order; at most limit rows.  running and whole_flat follow that order.
 */
extern size_t hp_top(hp_arena *a, const hp_graph *g, size_t limit, bool by_cum, hp_row **rows);
/* cum as a whole number, not below whole_flat where both grow (each within 1 of its value) */
extern long long hp_whole_cum(const hp_row *r);

extern void hp_render_text(hp_arena *a, const hp_graph *g, const hp_options *o,
						   size_t limit, hp_buf *out);
extern void hp_render_dot(hp_arena *a, const hp_graph *g, const hp_options *o, hp_buf *out);
extern void hp_render_collapsed(hp_arena *a, const hp_graph *g, hp_buf *out);

/*
 * Interactive SVG flame graph titled title; diff: widths are the current
 * profile, colors the growth against a base.  Names are escaped for XML and
 * bytes that are not UTF-8 become '?'.
 */
extern void hp_render_flamegraph(hp_arena *a, const hp_graph *g, const hp_options *o,
								 const char *title, bool diff, hp_buf *out);

/*
 * gzip-compressed profile.proto of g into out: mappings from p's maps and
 * build-ids, a representative address per function from pl (p's located
 * addresses).  zlib failing is raised through a->env.
 */
extern void hp_render_pprof(hp_arena *a, const hp_profile *p, const hp_located *pl,
							const hp_graph *g, const hp_options *o, hp_buf *out);

/*
 * What the profile covers, as one line without a newline: since when the
 * process sampled, and the profile's bytes next to what the process had
 * allocated.  False when the profile does not say (a raw jemalloc dump, a
 * diff).
 */
extern bool hp_coverage_line(const hp_graph *g, char *buf, size_t len);

/*
 * Whole numbers that add up: each value of a sequence becomes the whole part
 * of the running sum less what came before it, so it is within 1 of its own
 * value and the values so far sum to the whole part of their sum -- the
 * Total a report prints -- instead of falling short by up to 1 a row.
 */
typedef struct hp_wholes
{
	double		sum;
	long long	printed;
} hp_wholes;

extern long long hp_whole_next(hp_wholes *w, double v);

/* Perl's %d of a double, as jeprof prints counts: truncated toward zero, clamped, NaN = 0. */
extern long long hp_whole(double v);

/* jeprof's Percent(): "%.1f%%", or nan / +inf / -inf of a zero total. */
extern void hp_percent(double n, double total, char *buf, size_t len);

#endif
