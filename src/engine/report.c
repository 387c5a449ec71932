/*
 * report.c -- run the pipeline stages in order (see profile.h):
 * parse -> unsample -> labels -> locate -> graph -> labels -> render.
 */
#include "labels.h"
#include "report.h"

#include <string.h>

/* Parse and unsample one dump; a format error ends the analysis. */
static void
read_profile(hp_arena *a, const char *text, size_t len, const char *what, hp_profile *p)
{
	char		err[256];
	hp_status	rc = hp_parse(a, text, len, p, err, sizeof(err));

	if (rc != HP_OK)
		hp_fail(a->env, rc, "%s%s", what, err);
	hp_unsample(p);
}

void
hp_analyze(hp_arena *a, hp_symbolizer *s, const char *dump, size_t len,
		   const char *base, size_t base_len,
		   const hp_options *o, hp_report_kind kind, size_t limit,
		   hp_result *r)
{
	hp_profile	old;
	hp_located	old_located;
	bool		diff = base && !o->join_base;

	memset(r, 0, sizeof(*r));
	hp_buf_init(&r->text, a);

	read_profile(a, dump, len, "", &r->profile);
	if (base)
		read_profile(a, base, base_len, "base profile: ", &old);
	/* labels split paths only where the report shows them (a window's rows have no label columns) */
	hp_labels_prepare(a, &r->profile, base ? &old : NULL, o,
					  (kind == HP_REPORT_STACKS && !o->join_base) || kind == HP_REPORT_PPROF ||
					  kind == HP_REPORT_QUERIES || o->group_by != HP_GROUP_FUNCTION);
	if (kind == HP_REPORT_QUERIES)
	{
		r->nqueries = hp_labels_queries(a, &r->profile, base ? &old : NULL, o, &r->queries);
		return;
	}
	/* the current profile first: its modules get the identity checks */
	hp_symbolize_profile(a, s, &r->profile, &r->located);
	if (base)
		hp_symbolize_profile(a, s, &old, &old_located);
	hp_build_graph(a, &r->profile, &r->located, base ? &old : NULL,
				   base ? &old_located : NULL, o, &r->graph);
	if (!diff)
	{
		r->graph.coverage = r->profile.coverage;
		for (size_t i = 0; i < r->profile.nsamples; i++)
			r->graph.profile_bytes += r->profile.samples[i].bytes;
	}
	hp_labels_group(a, &r->profile, o, &r->graph);

	switch (kind)
	{
		case HP_REPORT_TEXT:
			hp_render_text(a, &r->graph, o, limit, &r->text);
			break;
		case HP_REPORT_DOT:
			hp_render_dot(a, &r->graph, o, &r->text);
			break;
		case HP_REPORT_COLLAPSED:
			hp_render_collapsed(a, &r->graph, &r->text);
			break;
		case HP_REPORT_TOP:
			r->nrows = hp_top(a, &r->graph, limit, o->by_cum, &r->rows);
			break;
		case HP_REPORT_STACKS:
		case HP_REPORT_QUERIES:
			break;
		case HP_REPORT_FLAMEGRAPH:
			hp_render_flamegraph(a, &r->graph, o, o->program, diff, &r->text);
			break;
		case HP_REPORT_PPROF:
			hp_render_pprof(a, &r->profile, &r->located, &r->graph, o, &r->text);
			break;
	}
}

hp_status
hp_summarize(hp_env *env, const char *dump, size_t len, double *bytes, double *objs,
			 size_t *stacks, char *err, size_t errlen)
{
	hp_arena	arena;
	hp_profile	p;
	hp_status	rc;

	hp_arena_init(&arena, env);
	*bytes = *objs = 0;
	*stacks = 0;
	rc = hp_parse(&arena, dump, len, &p, err, errlen);
	if (rc == HP_OK)
	{
		hp_unsample(&p);
		for (size_t i = 0; i < p.nsamples; i++)
		{
			*bytes += p.samples[i].bytes;
			*objs += p.samples[i].objs;
		}
		*stacks = p.nsamples;
	}
	hp_arena_free(&arena);
	return rc;
}
