/*
 * summary.c -- a process's heap in a few rows, for the history (history.h).
 *
 * A tick of the history must stay small whatever the process holds: tens
 * of thousands of stacks become the total, and the few functions, statements
 * and memory contexts that hold the most, each kind's rest in one row.  A
 * function is the first one above the allocator (the graph is folded), the
 * leaf of its path; the row keeps how much of it no memory context owns
 * (a "current: NAME" context label), the split pg_backend_memory_contexts
 * cannot make.
 */
#include "history.h"
#include "labels.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One kind's names and their sums while the paths are read. */
typedef struct tally
{
	hp_map		names;
	struct sums
	{
		int64_t		bytes;
		int64_t		outside;
	}		   *sums;
	size_t		cap;
} tally;

static void
add(hp_arena *a, tally *t, const char *name, int64_t bytes, int64_t outside)
{
	bool		added;
	size_t		len = hp_hist_text_len(name);
	size_t		i;

	/* keyed as the file keeps it: a name cut is the name of its row */
	if (name[len] != '\0')
		name = hp_strndup(a, name, len);
	i = hp_map_put(&t->names, name, len + 1, &added);

	if (added)
	{
		HP_RESERVE(a, t->sums, t->cap, i);
		t->sums[i].bytes = t->sums[i].outside = 0;
	}
	t->sums[i].bytes += bytes;
	t->sums[i].outside += outside;
}

/* Rows by bytes desc, then name. */
static int
by_bytes(const void *x, const void *y)
{
	const hp_hist_row *r = x;
	const hp_hist_row *q = y;

	if (r->bytes != q->bytes)
		return r->bytes > q->bytes ? -1 : 1;
	return strcmp(r->name, q->name);
}

/* The top rows of t, then its rest, appended to out's rows. */
static void
emit(hp_arena *a, tally *t, hp_hist_kind kind, size_t top, bool known, hp_hist_proc *out, size_t *cap)
{
	size_t		n = t->names.count;
	hp_hist_row *all = hp_alloc(a, (n ? n : 1) * sizeof(*all));
	hp_hist_row rest = {.kind = kind,.name = HP_HIST_REST,.outside = known ? 0 : -1};

	for (size_t i = 0; i < n; i++)
		all[i] = (hp_hist_row) {
		.kind = kind,
			.name = t->names.keys[i].key,
			.bytes = t->sums[i].bytes,
			.outside = known ? t->sums[i].outside : -1,
	};
	hp_work(a->env, n);
	qsort(all, n, sizeof(*all), by_bytes);
	for (size_t k = 0; k < n; k++)
	{
		if (k < top)
		{
			HP_RESERVE(a, out->rows, *cap, out->nrows);
			out->rows[out->nrows++] = all[k];
			continue;
		}
		rest.bytes += all[k].bytes;
		if (known)
			rest.outside += all[k].outside;
	}
	if (n > top)
	{
		HP_RESERVE(a, out->rows, *cap, out->nrows);
		out->rows[out->nrows++] = rest;
	}
}

void
hp_hist_summarize(hp_arena *a, const hp_profile *p, const hp_graph *g, size_t top, hp_hist_proc *out)
{
	tally		kinds[HP_HIST_KINDS];
	size_t		cap = 0;
	int64_t		total = 0;
	int64_t		outside = 0;
	bool		known = false;

	memset(kinds, 0, sizeof(kinds));
	for (int k = 0; k < HP_HIST_KINDS; k++)
		hp_map_init(&kinds[k].names, a);
	out->rows = NULL;
	out->nrows = 0;
	for (size_t i = 0; i < g->npaths; i++)
	{
		const hp_path *path = &g->paths[i];
		const char *ctx = hp_labels_context(p, path);
		int64_t		bytes = (int64_t) (path->bytes + 0.5);
		int64_t		out_bytes = 0;
		char		query[32];

		hp_work(a->env, 1);
		if (bytes <= 0)
			continue;
		if (ctx)
		{
			known = true;
			if (!(path->labels & HP_OWNED))
				out_bytes = bytes;
		}
		total += bytes;
		outside += out_bytes;
		add(a, &kinds[HP_HIST_FUNCTION],
			path->nframes ? g->funcs[path->frames[0]].name : "(no frames)", bytes, out_bytes);
		if (path->labels & HP_HAS_QUERY)
			snprintf(query, sizeof(query), "%" PRId64, (int64_t) path->queryid);
		else
			snprintf(query, sizeof(query), "(none)");
		add(a, &kinds[HP_HIST_QUERY], query, bytes, out_bytes);
		if (ctx)
			add(a, &kinds[HP_HIST_CONTEXT], ctx, bytes, out_bytes);
	}
	HP_RESERVE(a, out->rows, cap, out->nrows);
	out->rows[out->nrows++] = (hp_hist_row) {
		.kind = HP_HIST_TOTAL,
			.name = "heap",
			.bytes = total,
			.outside = known ? outside : -1,
	};
	emit(a, &kinds[HP_HIST_FUNCTION], HP_HIST_FUNCTION, top, known, out, &cap);
	emit(a, &kinds[HP_HIST_QUERY], HP_HIST_QUERY, top, known, out, &cap);
	emit(a, &kinds[HP_HIST_CONTEXT], HP_HIST_CONTEXT, top, known, out, &cap);
}

void
hp_hist_copy_rows(hp_arena *a, const hp_hist_proc *from, hp_hist_proc *out)
{
	out->rows = hp_alloc(a, (from->nrows ? from->nrows : 1) * sizeof(*out->rows));
	out->nrows = from->nrows;
	for (size_t i = 0; i < from->nrows; i++)
	{
		hp_work(a->env, 1);
		out->rows[i] = from->rows[i];
		out->rows[i].name = hp_strdup(a, from->rows[i].name);
	}
}
