/*
 * render.h -- reports from an aggregated graph, in jeprof's formats.
 */
#ifndef HEAPPROF_RENDER_H
#define HEAPPROF_RENDER_H

#include "graph.h"

typedef struct hp_row
{
	const hp_func *func;
	double		flat;
	double		running;		/* flat of this row and every row above it */
	double		cum;
} hp_row;

/* Functions by flat desc, name asc (jeprof --text order); at most limit rows. */
extern size_t hp_top(hp_arena *a, const hp_graph *g, size_t limit, hp_row **rows);

extern void hp_render_text(hp_arena *a, const hp_graph *g, const hp_options *o,
						   size_t limit, hp_buf *out);
extern void hp_render_dot(hp_arena *a, const hp_graph *g, const hp_options *o, hp_buf *out);
extern void hp_render_collapsed(hp_arena *a, const hp_graph *g, hp_buf *out);

/* Perl's %d of a double, as jeprof prints counts: truncated toward zero, clamped, NaN = 0. */
extern long long hp_whole(double v);

/* jeprof's Percent(): "%.1f%%", or nan / +inf / -inf of a zero total. */
extern void hp_percent(double n, double total, char *buf, size_t len);

#endif
