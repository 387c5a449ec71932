/*
 * pprof.h -- a graph as a gzip-compressed pprof profile (profile.proto), for
 * `go tool pprof`, speedscope and the other tools that read that format.
 */
#ifndef HEAPPROF_PPROF_H
#define HEAPPROF_PPROF_H

#include "graph.h"

/* Encode g (and p's maps and build-ids, for mappings) into out; false if zlib fails. */
extern bool hp_render_pprof(hp_arena *a, const hp_graph *g, const hp_profile *p,
							const hp_options *o, hp_buf *out);

#endif
