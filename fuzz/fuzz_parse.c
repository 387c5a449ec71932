/*
 * fuzz_parse.c -- libFuzzer target for the dump parser and everything after it.
 *
 * A backend parses whatever jemalloc wrote, and heapprof-report whatever file
 * it is given: a crash in a backend restarts the whole server, so the
 * parser, unsampling, aggregation and every renderer must survive any input.
 * The maps section is not handed to libdwfl (it would open files named by
 * the input); frames then get address labels, which exercises the same code.
 *
 * Build and run: make -C fuzz run SECONDS=60 (clang, ASan, UBSan).
 */
#include "engine/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static hp_symbolizer *symbolizer;

static bool
substring_match(void *pattern, const char *s)
{
	return strstr(s, pattern) != NULL;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	hp_arena	arena;
	hp_profile	p;
	hp_graph	g;
	hp_buf		out;
	hp_row	   *rows;
	char		err[256];
	hp_options	o = HP_OPTIONS_DEFAULT;

	if (symbolizer == NULL && (symbolizer = hp_symbolizer_new()) == NULL)
		abort();
	hp_arena_init(&arena);
	if (setjmp(arena.oom) == 0 &&
		hp_parse(&arena, (const char *) data, size, &p, err, sizeof(err)) == HP_OK)
	{
		hp_unsample(&p);
		/* no maps: libdwfl must not open files the input names */
		p.maps = NULL;
		p.maps_len = 0;
		o.measure = size % 2 ? HP_INUSE_OBJECTS : HP_INUSE_SPACE;
		o.show_bytes = size % 3 == 0;
		o.focus = size % 5 == 0 ? "0x" : NULL;
		o.ignore = size % 7 == 0 ? "f" : NULL;
		o.match = substring_match;
		o.fold_names = size % 11 == 0 ? hp_postgres_allocator : NULL;
		o.drop_negative = size % 13 == 0;
		/* odd sizes subtract the profile from itself: a diff of every stack */
		if (hp_build_graph(&arena, &p, size % 2 ? &p : NULL, symbolizer, &o, &g, err, sizeof(err)) == HP_OK)
		{
			hp_buf_init(&out, &arena);
			hp_render_text(&arena, &g, &o, SIZE_MAX, &out);
			hp_render_dot(&arena, &g, &o, &out);
			hp_render_collapsed(&arena, &g, &out);
			hp_top(&arena, &g, 20, &rows);
		}
	}
	hp_arena_free(&arena);
	return 0;
}
