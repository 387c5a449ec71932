/*
 * labels.c -- labels in reports (see labels.h).
 *
 * The label lines are the writer's word and the frames anyone's: a context
 * slot no line names is shown as "#SLOT", a queryid no line explains has
 * no text.  Grouping adds functions of its own to the graph rather than
 * names to the symbolizer's, so no symbol, whatever its name, is mistaken
 * for a label.
 */
#include "labels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Name of slot in q's label lines, or "#SLOT". */
static const char *
slot_name(hp_arena *a, hp_profile *q, uint32_t slot)
{
	char		buf[16];
	bool		added;
	size_t		i;

	if (q->label_slots.arena != NULL && q->label_slots.count > 0)
	{
		i = hp_map_put(&q->label_slots, &slot, sizeof(slot), &added);
		if (!added && i < q->slot_names_cap && q->slot_names[i] != NULL)
			return q->slot_names[i];
	}
	snprintf(buf, sizeof(buf), "#%x", slot);
	return hp_strdup(a, buf);
}

/* q's samples' context slots become indexes into p->contexts, by name. */
static void
name_contexts(hp_arena *a, hp_profile *p, hp_profile *q, hp_map *names, size_t *cap)
{
	for (size_t i = 0; i < q->nsamples; i++)
	{
		hp_sample  *s = &q->samples[i];
		const char *name;
		char		current[sizeof(HP_CURRENT_PREFIX) + HP_LABEL_NAME_MAX + 16];
		bool		added;
		size_t		k;

		hp_work(a->env, 1);
		if (!(s->labels & HP_HAS_CONTEXT))
			continue;
		name = slot_name(a, q, s->context);
		/* a block no context owns: named by the context current at malloc */
		if (!(s->labels & HP_OWNED))
		{
			snprintf(current, sizeof(current), "%s%s", HP_CURRENT_PREFIX, name);
			name = current;
		}
		k = hp_map_put(names, name, strlen(name), &added);
		if (added)
		{
			HP_RESERVE(a, p->contexts, *cap, k);
			p->contexts[k] = name == current ? hp_strdup(a, current) : name;
			p->ncontexts = k + 1;
		}
		s->context = (uint32_t) k;
	}
}

/* Keep the samples of q that o's filters let through; without keep, unlabelled. */
static void
filter(hp_arena *a, const hp_profile *p, hp_profile *q, const hp_options *o, bool keep)
{
	size_t		kept = 0;

	for (size_t i = 0; i < q->nsamples; i++)
	{
		const hp_sample *s = &q->samples[i];

		hp_work(a->env, 1);
		if (o->with_queryid && (!(s->labels & HP_HAS_QUERY) || s->queryid != o->queryid))
			continue;
		if (o->context && (!(s->labels & HP_HAS_CONTEXT) || strcmp(p->contexts[s->context], o->context) != 0))
			continue;
		q->samples[kept] = *s;
		if (!keep)
		{
			q->samples[kept].labels = 0;
			q->samples[kept].context = 0;
			q->samples[kept].queryid = 0;
		}
		kept++;
	}
	q->nsamples = kept;
}

void
hp_labels_prepare(hp_arena *a, hp_profile *p, hp_profile *base, const hp_options *o, bool keep)
{
	hp_map		names;
	size_t		cap = 0;

	hp_map_init(&names, a);
	p->contexts = NULL;
	p->ncontexts = 0;
	name_contexts(a, p, p, &names, &cap);
	if (base)
		name_contexts(a, p, base, &names, &cap);
	if (keep && !o->with_queryid && o->context == NULL)
		return;
	filter(a, p, p, o, keep);
	if (base)
		filter(a, p, base, o, keep);
}

const char *
hp_labels_context(const hp_profile *p, const hp_path *path)
{
	if (!(path->labels & HP_HAS_CONTEXT) || path->context >= p->ncontexts)
		return NULL;
	return p->contexts[path->context];
}

const char *
hp_labels_query_text(hp_profile *p, uint64_t queryid)
{
	bool		added;
	size_t		i;

	if (p->label_queries.arena == NULL || p->label_queries.count == 0)
		return NULL;
	i = hp_map_put(&p->label_queries, &queryid, sizeof(queryid), &added);
	return !added && i < p->query_texts_cap ? p->query_texts[i] : NULL;
}

void
hp_labels_group(hp_arena *a, const hp_profile *p, const hp_options *o, hp_graph *g)
{
	hp_map		groups;
	uint32_t   *group;
	hp_func    *funcs;
	size_t		base = g->nfuncs;

	if (o->group_by == HP_GROUP_FUNCTION)
		return;
	hp_map_init(&groups, a);
	group = hp_alloc(a, (g->npaths ? g->npaths : 1) * sizeof(uint32_t));
	for (size_t k = 0; k < g->npaths; k++)
	{
		const hp_path *path = &g->paths[k];
		const char *ctx = hp_labels_context(p, path);
		char		name[HP_LABEL_NAME_MAX + 32];

		hp_work(a->env, 1);
		if (o->group_by == HP_GROUP_QUERY)
		{
			if (path->labels & HP_HAS_QUERY)
				snprintf(name, sizeof(name), "query %lld", (long long) path->queryid);
			else
				snprintf(name, sizeof(name), "query (none)");
		}
		else
			snprintf(name, sizeof(name), "context %s", ctx ? ctx : "(none)");
		/* the key with its NUL: the map's copy is the function's name */
		group[k] = (uint32_t) hp_map_put(&groups, name, strlen(name) + 1, NULL);
	}
	if (groups.count > UINT32_MAX - base)
		hp_fail(a->env, HP_ELIMIT, "too many functions in the heap profile");
	funcs = hp_alloc(a, (base + groups.count) * sizeof(hp_func));
	if (base)
		memcpy(funcs, g->funcs, base * sizeof(hp_func));
	for (size_t i = 0; i < groups.count; i++)
		funcs[base + i].name = groups.keys[i].key;
	g->funcs = funcs;
	g->nfuncs = base + groups.count;
	for (size_t k = 0; k < g->npaths; k++)
	{
		hp_path    *path = &g->paths[k];
		uint32_t   *frames = hp_alloc(a, ((size_t) path->nframes + 1) * sizeof(uint32_t));
		hp_func    *root = &funcs[base + group[k]];

		hp_work(a->env, path->nframes + 1);
		if (path->nframes == UINT32_MAX)
			hp_fail(a->env, HP_ELIMIT, "a stack of the heap profile has too many frames");
		if (path->nframes)
			memcpy(frames, path->frames, path->nframes * sizeof(uint32_t));
		frames[path->nframes] = (uint32_t) (base + group[k]);
		if (path->nframes == 0)
		{
			/* a stack of allocator frames only: the root is its leaf too */
			root->flat += path->value;
			g->local_total += path->value;
		}
		root->cum += path->value;
		root->seen = true;
		path->frames = frames;
		path->nframes++;
	}
}

/* Add q's samples to rows by queryid with sign. */
static void
add_queries(hp_arena *a, const hp_profile *q, double sign, hp_map *ids,
			hp_query_row **rows, size_t *cap)
{
	for (size_t i = 0; i < q->nsamples; i++)
	{
		const hp_sample *s = &q->samples[i];
		bool		has = (s->labels & HP_HAS_QUERY) != 0;
		uint64_t	key[2] = {has, has ? s->queryid : 0};
		bool		added;
		size_t		k;

		hp_work(a->env, 1);
		k = hp_map_put(ids, key, sizeof(key), &added);
		if (added)
		{
			HP_RESERVE(a, *rows, *cap, k);
			(*rows)[k].has_queryid = has;
			(*rows)[k].queryid = key[1];
		}
		(*rows)[k].bytes += sign * s->bytes;
		(*rows)[k].objs += sign * s->objs;
	}
}

static int
by_bytes(const void *x, const void *y)
{
	const hp_query_row *a = x;
	const hp_query_row *b = y;

	if (a->bytes != b->bytes)
		return a->bytes < b->bytes ? 1 : -1;
	if (a->has_queryid != b->has_queryid)
		return a->has_queryid ? -1 : 1;
	return (a->queryid > b->queryid) - (a->queryid < b->queryid);
}

size_t
hp_labels_queries(hp_arena *a, hp_profile *p, const hp_profile *base,
				  const hp_options *o, hp_query_row **rows)
{
	hp_map		ids;
	size_t		cap = 0;

	hp_map_init(&ids, a);
	*rows = NULL;
	add_queries(a, p, 1, &ids, rows, &cap);
	if (base)
		add_queries(a, base, -1, &ids, rows, &cap);
	for (size_t k = 0; k < ids.count; k++)
	{
		hp_query_row *r = &(*rows)[k];

		hp_work(a->env, 1);
		if (o->drop_negative && r->bytes < 0)
			r->bytes = 0;
		if (o->drop_negative && r->objs < 0)
			r->objs = 0;
		r->text = r->has_queryid ? hp_labels_query_text(p, r->queryid) : NULL;
	}
	if (ids.count > 1)
	{
		hp_work(a->env, ids.count);
		qsort(*rows, ids.count, sizeof(hp_query_row), by_bytes);
	}
	return ids.count;
}
