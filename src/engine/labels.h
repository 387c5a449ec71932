/*
 * labels.h -- a sample's labels in reports: the statement that allocated it
 * (queryid) and the memory context it was allocated in.
 *
 * The backend's backtrace hook writes them as frames at the root of each
 * sampled stack and names them in %heapprof-label-* lines (format.h); the
 * parser takes them off into the sample (profile.h); the graph keeps paths
 * of different labels apart (graph.h).  Here they become what a report
 * shows: names, a filter and, grouped, one root per statement or context.
 */
#ifndef HEAPPROF_LABELS_H
#define HEAPPROF_LABELS_H

#include "graph.h"

/*
 * Before the graph: name the contexts of p's samples, and of base's (NULL:
 * none) with the same names, in p->contexts, so a diff compares contexts by
 * name; then drop the samples of both that o's label filters exclude.
 * Without keep, the samples lose their labels: a report that shows none
 * (a function view, not grouped) has one path per stack, as without labels.
 */
extern void hp_labels_prepare(hp_arena *a, hp_profile *p, hp_profile *base, const hp_options *o,
							  bool keep);

/*
 * After the graph (of p): with o->group_by, a root function "query ID" or
 * "context NAME" on every path, so every renderer shows one tree per
 * statement or context.  Its cum is its paths' value.
 */
extern void hp_labels_group(hp_arena *a, const hp_profile *p, const hp_options *o, hp_graph *g);

/* What a statement's allocations hold (pg_stat_statements for the heap). */
typedef struct hp_query_row
{
	bool		has_queryid;	/* false: allocated outside any statement */
	uint64_t	queryid;
	double		bytes;			/* unsampled; with a base, the difference */
	double		objs;
	const char *text;			/* as the writer saw it, or NULL */
} hp_query_row;

/*
 * After hp_labels_prepare, without symbolizing: p's bytes and objects per
 * queryid (minus base's, when not NULL; o->drop_negative applies), by bytes
 * descending.  Returns the number of rows.
 */
extern size_t hp_labels_queries(hp_arena *a, hp_profile *p, const hp_profile *base,
								const hp_options *o, hp_query_row **rows);

/*
 * A path's context name, or NULL when it has none.  A block no context owns
 * (plain malloc) is named by the context current at malloc, after this.
 */
#define HP_CURRENT_PREFIX "current: "

extern const char *hp_labels_context(const hp_profile *p, const hp_path *path);

/* The statement text that p's writer saw for queryid, or NULL. */
extern const char *hp_labels_query_text(hp_profile *p, uint64_t queryid);

#endif
