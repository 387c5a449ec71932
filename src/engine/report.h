/*
 * report.h -- the whole pipeline in one call: parse, unsample, locate
 * (symbolize), graph and render a heap_v2 dump.  Everything the result
 * points to lives in the arena; the caller frees it with hp_arena_free,
 * also after an error raised through the arena's env.
 */
#ifndef HEAPPROF_REPORT_H
#define HEAPPROF_REPORT_H

#include "labels.h"
#include "render.h"

typedef enum hp_report_kind
{
	HP_REPORT_TEXT,
	HP_REPORT_DOT,
	HP_REPORT_COLLAPSED,
	HP_REPORT_TOP,				/* rows, no text */
	HP_REPORT_STACKS,			/* graph paths, no text */
	HP_REPORT_PPROF,			/* gzip'ed profile.proto in text (binary) */
	HP_REPORT_FLAMEGRAPH,		/* SVG */
	HP_REPORT_QUERIES			/* query rows (labels.h), not symbolized */
} hp_report_kind;

typedef struct hp_result
{
	hp_profile	profile;
	hp_located	located;		/* the profile's addresses and their symbols */
	hp_graph	graph;
	hp_buf		text;
	hp_row	   *rows;
	size_t		nrows;
	hp_query_row *queries;
	size_t		nqueries;
} hp_result;

/*
 * base (NULL if none) is subtracted per symbolized stack, or joined with
 * o->join_base; see graph.h.
 * Every failure -- a malformed dump or base ("base profile: ..."), memory,
 * the symbolizer, zlib -- is raised through a->env and does not return.
 */
extern void hp_analyze(hp_arena *a, hp_symbolizer *s,
					   const char *dump, size_t len,
					   const char *base, size_t base_len,
					   const hp_options *o, hp_report_kind kind, size_t limit,
					   hp_result *r);

/*
 * Totals of a dump, unsampled, without symbolizing it (jeprof's Total).
 * HP_EFORMAT with a message in err for a malformed dump; running out of
 * memory is raised through env.  Its own arena is freed whenever it returns.
 */
extern hp_status hp_summarize(hp_env *env, const char *dump, size_t len,
							  double *bytes, double *objs, size_t *stacks,
							  char *err, size_t errlen);

#endif
