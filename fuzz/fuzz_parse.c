/*
 * fuzz_parse.c -- libFuzzer target for everything that reads untrusted text.
 *
 * A backend parses whatever jemalloc wrote, and heapprof-report whatever file
 * it is given: a crash in a backend restarts the whole server, so every
 * reader and stage must survive any input.  Each input goes through:
 *  - the "%" line readers (stored-profile metadata, header length);
 *  - the maps reader, over the whole input and over the dump's maps section;
 *  - the pipeline: parse, unsample, labels (names, filters, bytes by
 *    queryid), locate, graph (with the input as its own base on odd sizes),
 *    labels (a root per query or context), and every renderer: text, top, dot, collapsed, the
 *    flame graph and pprof (whose mappings come from the maps section);
 *  - the input's lines as named stacks of any size (1e300, inf, NaN: what
 *    --merge takes from servers) through every renderer, which must end.
 * The symbolizer is not given the maps section (libdwfl would open files the
 * input names): frames get address labels, which exercises the same code.
 * The engine's environment is harness.h's: errors longjmp back here, and on
 * some sizes allocation fails or an interrupt jumps out.
 *
 * Build and run: make -C fuzz run SECONDS=60 (clang, ASan, UBSan).
 */
#include "harness.h"

#include "engine/maps.h"
#include "engine/report.h"
#include "fold_names.h"

#include <stdio.h>

static hp_symbolizer *symbolizer;

static bool
substring_match(void *ctx, void *pattern, const char *s)
{
	return strstr(s, pattern) != NULL;
}

/* Every mapping of [p, end): the reader must stay inside and terminate. */
static void
read_maps(const char *p, const char *end)
{
	hp_mapping	m;
	size_t		sum = 0;

	while (hp_maps_next(&p, end, &m))
		sum += m.pathlen + m.linelen;
	(void) sum;
}

/* The stages one by one, as hp_analyze runs them, plus every renderer. */
static void
pipeline(hp_arena *a, const char *text, size_t size, const hp_options *o)
{
	hp_profile	p;
	hp_profile	nomaps;
	hp_located	pl;
	hp_graph	g;
	hp_buf		out;
	hp_row	   *rows;
	hp_query_row *queries;
	char		err[256];

	if (hp_parse(a, text, size, &p, err, sizeof(err)) != HP_OK)
		return;
	hp_unsample(&p);
	/* once: the diff below is of the profile with itself, already named */
	hp_labels_prepare(a, &p, NULL, o, size % 29 != 0);
	hp_labels_queries(a, &p, size % 2 ? &p : NULL, o, &queries);
	read_maps(p.maps, p.maps ? p.maps + p.maps_len : NULL);
	/* no maps for libdwfl: it must not open files the input names */
	nomaps = p;
	nomaps.maps = NULL;
	nomaps.maps_len = 0;
	hp_symbolize_profile(a, symbolizer, &nomaps, &pl);
	/* odd sizes subtract the profile from itself: a diff of every stack */
	hp_build_graph(a, &p, &pl, size % 2 ? &p : NULL, size % 2 ? &pl : NULL, o, &g);
	hp_labels_group(a, &p, o, &g);
	hp_buf_init(&out, a);
	hp_render_text(a, &g, o, SIZE_MAX, &out);
	hp_render_dot(a, &g, o, &out);
	hp_render_collapsed(a, &g, &out);
	hp_top(a, &g, 20, size % 4 > 1, &rows);
	hp_render_flamegraph(a, &g, o, "fuzz", size % 2, &out);
	hp_buf_init(&out, a);
	hp_render_pprof(a, &p, &pl, &g, o, &out);
}

/*
 * The input as named stacks, as pg_heapprof --merge builds them from
 * servers' rows: each line "BYTES FRAME;FRAME;..." (strtod's BYTES: 1e300,
 * -inf, nan as well), a '-' first for a base stack; then every renderer.
 * Names hold any byte but a newline, sizes any double.
 */
static void
stacks(hp_arena *a, const char *text, size_t size, const hp_options *o)
{
	static const double extreme[] = {0, -1, 1e154, 1e300, -1e300, 1.7976931348623157e308,
	1.0 / 0.0, -1.0 / 0.0, 0.0 / 0.0, 5e-324};
	size_t		cap = 64, n = 0;
	hp_named_stack *st = hp_alloc(a, cap * sizeof(*st));
	char	   *copy = hp_alloc(a, size + 1);
	hp_graph	g;
	hp_buf		out;
	hp_profile	none = {0};
	hp_located	nowhere = {0};

	memcpy(copy, text, size);
	copy[size] = '\0';
	for (char *line = copy, *next; line && *line && n < 4096; line = next)
	{
		const char **frames = hp_alloc(a, 64 * sizeof(char *));
		uint32_t	nframes = 0;
		bool		base = *line == '-';
		char	   *end;
		double		v;

		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		v = strtod(line + base, &end);
		/* a line without a number takes an extreme size by its first byte */
		if (end == line + base)
			v = extreme[(unsigned char) *line % (sizeof(extreme) / sizeof(extreme[0]))];
		for (char *f = end; f && nframes < 64; )
		{
			char	   *semi = strchr(f, ';');

			if (semi)
				*semi = '\0';
			frames[nframes++] = f;
			f = semi ? semi + 1 : NULL;
		}
		HP_RESERVE(a, st, cap, n);
		st[n++] = (hp_named_stack) {frames, nframes, base, v, v};
	}
	hp_graph_from_stacks(a, st, n, o, &g);
	hp_buf_init(&out, a);
	hp_render_text(a, &g, o, SIZE_MAX, &out);
	hp_render_dot(a, &g, o, &out);
	hp_render_collapsed(a, &g, &out);
	hp_render_flamegraph(a, &g, o, "fuzz", size % 2, &out);
	hp_render_pprof(a, &none, &nowhere, &g, o, &out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *) data;
	static harness h;
	static hp_arena arena;	/* modified after setjmp */
	hp_options	o = HP_OPTIONS_DEFAULT;
	hp_meta		meta;
	hp_capture	capture;

	if (symbolizer == NULL && (symbolizer = hp_symbolizer_new()) == NULL)
		abort();
	harness_init(&h, size, substring_match);

	hp_read_meta(text, size, &meta);
	hp_read_capture(text, size, &capture);
	if (hp_header_length(text, size) > size)
		abort();
	read_maps(text, text + size);

	o.measure = size % 2 ? HP_INUSE_OBJECTS : HP_INUSE_SPACE;
	o.show_bytes = size % 3 == 0;
	o.focus = size % 5 == 0 ? "0x" : NULL;
	o.ignore = size % 7 == 0 ? "f" : NULL;
	o.fold = size % 11 == 0 || size % 17 == 0;
	o.fold_names = size % 11 == 0 ? hp_postgres_allocator : NULL;
	o.drop_negative = size % 13 == 0;
	o.home_object = "postgres";
	o.group_by = (hp_group) (size % 3);
	o.with_queryid = size % 19 == 0;
	o.queryid = 12345;
	o.context = size % 23 == 0 ? "CachedPlanSource" : NULL;

	hp_arena_init(&arena, &h.env);
	if (setjmp(h.jump) == 0)
		pipeline(&arena, text, size, &o);
	hp_arena_free(&arena);
	harness_init(&h, size, substring_match);
	hp_arena_init(&arena, &h.env);
	if (setjmp(h.jump) == 0)
		stacks(&arena, text, size, &o);
	hp_arena_free(&arena);
	return 0;
}
