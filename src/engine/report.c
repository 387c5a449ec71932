/*
 * report.c -- run the pipeline stages in order (see profile.h).
 */
#include "report.h"

#include <stdio.h>
#include <string.h>

hp_status
hp_analyze(hp_arena *a, hp_symbolizer *s, const char *dump, size_t len,
		   const char *base, size_t base_len,
		   const hp_options *o, hp_report_kind kind, size_t limit,
		   hp_result *r, char *err, size_t errlen)
{
	hp_status	rc;
	hp_profile	old;

	memset(r, 0, sizeof(*r));
	if (setjmp(a->oom) != 0)
	{
		snprintf(err, errlen, "out of memory while analysing the heap profile");
		return HP_ENOMEM;
	}
	hp_buf_init(&r->text, a);

	rc = hp_parse(a, dump, len, &r->profile, err, errlen);
	if (rc != HP_OK)
		return rc;
	hp_unsample(&r->profile);
	if (base)
	{
		char		berr[256];

		rc = hp_parse(a, base, base_len, &old, berr, sizeof(berr));
		if (rc != HP_OK)
		{
			snprintf(err, errlen, "base profile: %s", berr);
			return rc;
		}
		hp_unsample(&old);
	}
	rc = hp_build_graph(a, &r->profile, base ? &old : NULL, s, o, &r->graph, err, errlen);
	if (rc != HP_OK)
		return rc;

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
			r->nrows = hp_top(a, &r->graph, limit, &r->rows);
			break;
		case HP_REPORT_STACKS:
			break;
		case HP_REPORT_FLAMEGRAPH:
			hp_render_flamegraph(a, &r->graph, o, o->program, base != NULL, &r->text);
			break;
		case HP_REPORT_PPROF:
			if (!hp_render_pprof(a, &r->graph, &r->profile, o, &r->text))
			{
				snprintf(err, errlen, "zlib could not compress the pprof profile");
				return HP_ENOMEM;
			}
			break;
	}
	return HP_OK;
}

hp_status
hp_summarize(const char *dump, size_t len, double *bytes, double *objs,
			 size_t *stacks, char *err, size_t errlen)
{
	hp_arena	arena;
	hp_profile	p;
	hp_status	rc;

	hp_arena_init(&arena);
	*bytes = *objs = 0;
	*stacks = 0;
	if (setjmp(arena.oom) != 0)
	{
		hp_arena_free(&arena);
		snprintf(err, errlen, "out of memory while reading the heap profile");
		return HP_ENOMEM;
	}
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
