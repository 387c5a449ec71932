/*
 * render_pprof.c -- profile.proto, written directly.
 *
 * The format is small enough to encode by hand: varints and length-delimited
 * fields.  Sample types are inuse_objects (count) and inuse_space (bytes),
 * as Go's heap profiles have them.  Each function of the graph becomes one
 * Function and one Location (leaf-first location ids per sample, pprof's
 * order); a location carries a representative address of the function and
 * the Mapping it lies in, with the object's build-id.  Values are whole
 * numbers, truncated as jeprof prints them; with a base they may be negative.
 *
 * Memory is the graph's plus the compressed output: each message is built
 * in scratch buffers reused for the next, and the profile goes through
 * deflate in pieces as it is written, zlib's state in the arena.
 */
#include "labels.h"
#include "maps.h"
#include "render.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* profile.proto field numbers */
enum
{
	PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4, PROFILE_FUNCTION = 5, PROFILE_STRING_TABLE = 6,
	PROFILE_PERIOD_TYPE = 11, PROFILE_PERIOD = 12, PROFILE_COMMENT = 13, PROFILE_DEFAULT_SAMPLE_TYPE = 14,
	VALUETYPE_TYPE = 1, VALUETYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3,
	LABEL_KEY = 1, LABEL_STR = 2,
	MAPPING_ID = 1, MAPPING_START = 2, MAPPING_LIMIT = 3, MAPPING_OFFSET = 4,
	MAPPING_FILENAME = 5, MAPPING_BUILD_ID = 6, MAPPING_HAS_FUNCTIONS = 7,
	LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_ADDRESS = 3, LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1, LINE_LINE = 2,
	FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3, FUNCTION_FILENAME = 4
};

typedef struct strings
{
	hp_map		map;
	hp_buf	   *out;			/* the profile: strings go straight into it */
} strings;

/* Uncompressed bytes handed to deflate at a time. */
#define PIECE (64 * 1024)

/* The profile being written: pb, deflated into out as it fills. */
typedef struct writer
{
	hp_arena   *a;
	z_stream	z;
	hp_buf		pb;
	hp_buf	   *out;
} writer;

static void
put_varint(hp_buf *b, uint64_t v)
{
	char		tmp[10];
	size_t		n = 0;

	do
	{
		tmp[n++] = (char) ((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	hp_buf_append(b, tmp, n);
}

static void
put_uint(hp_buf *b, int field, uint64_t v)
{
	put_varint(b, (uint64_t) field << 3);
	put_varint(b, v);
}

/* int64 fields are plain varints of the two's complement */
static void
put_int(hp_buf *b, int field, int64_t v)
{
	put_uint(b, field, (uint64_t) v);
}

static void
put_bytes(hp_buf *b, int field, const char *data, size_t len)
{
	put_varint(b, ((uint64_t) field << 3) | 2);
	put_varint(b, len);
	hp_buf_append(b, data, len);
}

static void
put_message(hp_buf *b, int field, const hp_buf *msg)
{
	put_bytes(b, field, msg->data ? msg->data : "", msg->len);
}

/* Index of s in the string table, added (to the profile) when new. */
static int64_t
string_index(strings *st, const char *s)
{
	bool		added;
	size_t		i = hp_map_put(&st->map, s, strlen(s), &added);

	if (added)
		put_bytes(st->out, PROFILE_STRING_TABLE, s, strlen(s));
	return (int64_t) i;
}

static void
value_type(hp_buf *out, strings *st, int field, const char *type, const char *unit, hp_buf *m)
{
	m->len = 0;
	put_int(m, VALUETYPE_TYPE, string_index(st, type));
	put_int(m, VALUETYPE_UNIT, string_index(st, unit));
	put_message(out, field, m);
}

/* zlib's state in the arena: freed with it, whatever ends the report */
static void *
z_alloc(void *opaque, unsigned items, unsigned size)
{
	return hp_alloc(opaque, (size_t) items * size);
}

static void
z_free(void *opaque, void *p)
{
}

/*
 * Deflate what pb holds into out (all of it, and the gzip trailer, when
 * finish), then empty pb.  deflate allocates nothing after deflateInit2, so
 * an error raised between calls leaves nothing outside the arena.
 */
static void
deflate_some(writer *w, bool finish)
{
	int			rc;

	if (!finish && w->pb.len < PIECE)
		return;
	hp_work(w->a->env, w->pb.len / 64);
	w->z.next_in = (Bytef *) (w->pb.data ? w->pb.data : "");
	w->z.avail_in = (uInt) w->pb.len;
	do
	{
		size_t		room;

		hp_buf_reserve(w->out, PIECE);
		room = w->out->cap - w->out->len - 1;
		if (room > UINT32_MAX / 2)
			room = UINT32_MAX / 2;
		w->z.next_out = (Bytef *) w->out->data + w->out->len;
		w->z.avail_out = (uInt) room;
		rc = deflate(&w->z, finish ? Z_FINISH : Z_NO_FLUSH);
		w->out->len += room - w->z.avail_out;
		if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
			hp_fail(w->a->env, HP_ENOMEM, "zlib could not compress the pprof profile");
	} while (w->z.avail_in > 0 || (finish && rc != Z_STREAM_END));
	w->pb.len = 0;
}

/* An executable mapping of the dumped process, from its maps text. */
typedef struct mapping
{
	uint64_t	start;
	uint64_t	limit;
	uint64_t	offset;
	uint64_t	base;			/* where the object's first segment starts: its bias */
	const char *path;			/* in the arena */
	uint64_t	id;				/* its place in the table, from 1 */
} mapping;

static size_t
read_mappings(hp_arena *a, const hp_profile *p, mapping **out)
{
	const char *s = p->maps;
	const char *end = s ? s + p->maps_len : NULL;
	hp_mapping m;
	mapping    *v = NULL;
	size_t		n = 0;
	size_t		cap = 0;
	uint64_t	base = 0;
	const char *last = NULL;
	size_t		lastlen = 0;

	while (hp_maps_next(&s, end, &m))
	{
		hp_work(a->env, 1 + m.linelen / 64);
		if (m.path == NULL)
			continue;
		if (m.offset == 0 && (last == NULL || lastlen != m.pathlen ||
							  memcmp(last, m.path, m.pathlen) != 0))
			base = m.start;
		last = m.path;
		lastlen = m.pathlen;
		if (!m.exec)
			continue;
		HP_RESERVE(a, v, cap, n);
		v[n] = (mapping) {m.start, m.end, m.offset, base, hp_strndup(a, m.path, m.pathlen), n + 1};
		n++;
	}
	*out = v;
	return n;
}

static int
start_cmp(const void *x, const void *y)
{
	const mapping *a = x;
	const mapping *b = y;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return (a->id > b->id) - (a->id < b->id);
}

/* A copy of maps[0..n) sorted by start address. */
static mapping *
by_start(hp_arena *a, const mapping *maps, size_t n)
{
	mapping    *v = hp_alloc(a, (n ? n : 1) * sizeof(*v));

	if (n > 0)
		memcpy(v, maps, n * sizeof(*v));
	hp_work(a->env, n);
	qsort(v, n, sizeof(*v), start_cmp);
	return v;
}

/*
 * The id of the mapping holding addr, 0 if none: the one that starts last at
 * or before addr (a process's mappings do not overlap), by binary search.
 */
static uint64_t
mapping_of(const mapping *sorted, size_t n, uint64_t addr)
{
	size_t		lo = 0;

	while (n > 0)
	{
		size_t		half = n / 2;

		if (sorted[lo + half].start <= addr)
		{
			lo += half + 1;
			n -= half + 1;
		}
		else
			n = half;
	}
	return lo > 0 && addr < sorted[lo - 1].limit ? sorted[lo - 1].id : 0;
}

/* A sample's labels as pprof's (go tool pprof -tags, -tagfocus=queryid=ID, -tagroot=context). */
static void
put_labels(hp_buf *msg, hp_buf *label, strings *st, const hp_profile *p, const hp_path *path)
{
	const char *ctx = hp_labels_context(p, path);
	char		id[24];

	/*
	 * A string: pprof shows numeric labels as doubles, which would round the
	 * queryid.  (-tagfocus takes a bare number for a numeric range: select
	 * one statement with a regular expression, queryid=^ID$.)
	 */
	if (path->labels & HP_HAS_QUERY)
	{
		snprintf(id, sizeof(id), "%lld", (long long) path->queryid);
		label->len = 0;
		put_int(label, LABEL_KEY, string_index(st, "queryid"));
		put_int(label, LABEL_STR, string_index(st, id));
		put_message(msg, SAMPLE_LABEL, label);
	}
	if (ctx && *ctx)			/* pprof drops an empty value */
	{
		label->len = 0;
		put_int(label, LABEL_KEY, string_index(st, "context"));
		put_int(label, LABEL_STR, string_index(st, ctx));
		put_message(msg, SAMPLE_LABEL, label);
	}
}

void
hp_render_pprof(hp_arena *a, const hp_profile *p, const hp_located *pl,
				const hp_graph *g, const hp_options *o, hp_buf *out)
{
	writer		w = {.a = a, .out = out};
	hp_buf	   *pb = &w.pb;
	hp_buf		msg;
	hp_buf		sub;
	hp_buf		vals;
	strings		st;
	mapping    *maps;
	size_t		nmaps = read_mappings(a, p, &maps);
	mapping    *byaddr = by_start(a, maps, nmaps);
	uint64_t   *address = hp_alloc(a, (g->nfuncs ? g->nfuncs : 1) * sizeof(uint64_t));
	uint32_t   *line = hp_alloc(a, (g->nfuncs ? g->nfuncs : 1) * sizeof(uint32_t));
	char		cov[160];
	hp_wholes	objs = {0};
	hp_wholes	bytes = {0};

	hp_buf_init(out, a);
	hp_buf_init(pb, a);
	hp_buf_init(&msg, a);
	hp_buf_init(&sub, a);
	hp_buf_init(&vals, a);
	/* gzip (windowBits 15 + 16) */
	w.z.zalloc = z_alloc;
	w.z.zfree = z_free;
	w.z.opaque = a;
	if (deflateInit2(&w.z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		hp_fail(a->env, HP_ENOMEM, "zlib could not compress the pprof profile");
	hp_map_init(&st.map, a);
	st.out = pb;
	string_index(&st, "");		/* string 0 is always "" */

	value_type(pb, &st, PROFILE_SAMPLE_TYPE, "inuse_objects", "count", &msg);
	value_type(pb, &st, PROFILE_SAMPLE_TYPE, "inuse_space", "bytes", &msg);
	value_type(pb, &st, PROFILE_PERIOD_TYPE, "space", "bytes", &msg);
	put_int(pb, PROFILE_PERIOD, (int64_t) p->rate);
	put_int(pb, PROFILE_DEFAULT_SAMPLE_TYPE,
			string_index(&st, o->measure == HP_INUSE_OBJECTS ? "inuse_objects" : "inuse_space"));
	/* go tool pprof -comments shows it */
	if (hp_coverage_line(g, cov, sizeof(cov)))
		put_int(pb, PROFILE_COMMENT, string_index(&st, cov));

	/* each function: the first of the profile's addresses that names it */
	for (size_t i = 0; i < pl->npcs; i++)
	{
		hp_work(a->env, 1);
		for (uint32_t u = g->pc_first[i]; u < g->pc_first[i + 1]; u++)
			if (address[g->pc_funcs[u]] == 0)
			{
				int			ln;

				address[g->pc_funcs[u]] = pl->pcs[i];
				line[g->pc_funcs[u]] = hp_symbol_location(&pl->syms[i], u - g->pc_first[i], &ln) && ln > 0 ?
					(uint32_t) ln : 0;
			}
	}

	for (size_t m = 0; m < nmaps; m++)
	{
		char		id[160] = "";

		hp_work(a->env, 1 + p->nids);
		for (size_t k = 0; k < p->nids; k++)
			if (p->ids[k].bias == maps[m].base)
				for (size_t j = 0; j < p->ids[k].len && j < 64; j++)
					snprintf(id + 2 * j, sizeof(id) - 2 * j, "%02x", p->ids[k].id[j]);
		msg.len = 0;
		put_uint(&msg, MAPPING_ID, m + 1);
		put_uint(&msg, MAPPING_START, maps[m].start);
		put_uint(&msg, MAPPING_LIMIT, maps[m].limit);
		put_uint(&msg, MAPPING_OFFSET, maps[m].offset);
		put_int(&msg, MAPPING_FILENAME, string_index(&st, maps[m].path));
		put_int(&msg, MAPPING_BUILD_ID, string_index(&st, id));
		put_uint(&msg, MAPPING_HAS_FUNCTIONS, 1);
		put_message(pb, PROFILE_MAPPING, &msg);
		deflate_some(&w, false);
	}

	for (size_t f = 0; f < g->nfuncs; f++)
	{
		const hp_func *fn = &g->funcs[f];
		char		file[512] = "";
		const char *colon;
		uint64_t	mapping_id = 0;

		hp_work(a->env, 1);
		if (fn->location && (colon = strrchr(fn->location, ':')) != NULL)
			snprintf(file, sizeof(file), "%.*s", (int) (colon - fn->location), fn->location);
		msg.len = 0;
		put_uint(&msg, FUNCTION_ID, f + 1);
		put_int(&msg, FUNCTION_NAME, string_index(&st, fn->name));
		put_int(&msg, FUNCTION_SYSTEM_NAME, string_index(&st, fn->name));
		put_int(&msg, FUNCTION_FILENAME, string_index(&st, file));
		put_message(pb, PROFILE_FUNCTION, &msg);

		mapping_id = mapping_of(byaddr, nmaps, address[f]);
		sub.len = 0;
		put_uint(&sub, LINE_FUNCTION_ID, f + 1);
		put_int(&sub, LINE_LINE, line[f]);
		msg.len = 0;
		put_uint(&msg, LOCATION_ID, f + 1);
		put_uint(&msg, LOCATION_MAPPING_ID, mapping_id);
		put_uint(&msg, LOCATION_ADDRESS, address[f]);
		put_message(&msg, LOCATION_LINE, &sub);
		put_message(pb, PROFILE_LOCATION, &msg);
		deflate_some(&w, false);
	}

	for (size_t k = 0; k < g->npaths; k++)
	{
		const hp_path *path = &g->paths[k];

		hp_work(a->env, path->nframes + 1);
		if (path->nframes == 0)
			continue;
		sub.len = 0;
		for (uint32_t j = 0; j < path->nframes; j++)
			put_varint(&sub, path->frames[j] + 1);
		vals.len = 0;
		put_varint(&vals, (uint64_t) hp_whole_next(&objs, path->objs));
		put_varint(&vals, (uint64_t) hp_whole_next(&bytes, path->bytes));
		msg.len = 0;
		put_message(&msg, SAMPLE_LOCATION_ID, &sub);	/* packed */
		put_message(&msg, SAMPLE_VALUE, &vals);
		put_labels(&msg, &sub, &st, p, path);	/* sub is free again: a scratch */
		put_message(pb, PROFILE_SAMPLE, &msg);
		deflate_some(&w, false);
	}
	deflate_some(&w, true);
	deflateEnd(&w.z);
}
