/*
 * flame.h -- a graph as an interactive SVG flame graph.
 */
#ifndef HEAPPROF_FLAME_H
#define HEAPPROF_FLAME_H

#include "graph.h"

/* title: shown on top; diff: color by growth against a base. */
extern void hp_render_flamegraph(hp_arena *a, const hp_graph *g, const hp_options *o,
								 const char *title, bool diff, hp_buf *out);

#endif
