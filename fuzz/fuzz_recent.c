/*
 * fuzz_recent.c -- libFuzzer target for jemalloc's prof_recent JSON.
 *
 * A backend converts whatever jemalloc's alloc_dump wrote (recent.c) and
 * feeds the result to the same pipeline as a heap dump, so the converter
 * must survive any input and its output must be a dump the parser accepts:
 * each input is converted with a window and pick chosen by its size, and on
 * success the text, with a maps section appended as the backend does, must
 * parse, with one sample per record written (else abort), and is unsampled.
 * The environment is harness.h's: errors longjmp back here, and on some
 * sizes allocation fails or an interrupt jumps out.
 *
 * Build and run: make -C fuzz run SECONDS=60 (clang, ASan, UBSan).
 */
#include "harness.h"

#include "engine/profile.h"
#include "engine/recent.h"

static void
convert(hp_arena *a, const char *json, size_t size)
{
	static const char maps[] = "\nMAPPED_LIBRARIES:\n";
	int64_t		from = size % 4 == 0 ? INT64_MIN : 1000;
	int64_t		to = size % 5 == 0 ? INT64_MAX : 1000000;
	hp_recent_stats st;
	hp_profile	p;
	hp_buf		out;
	char		err[256];
	double		objs = 0;

	hp_buf_init(&out, a);
	if (hp_recent_to_heap(a, json, size, from, to, (hp_recent_pick) (size % 3),
						  &out, &st, err, sizeof(err)) != HP_OK)
		return;
	hp_buf_append(&out, maps, sizeof(maps) - 1);
	if (hp_parse(a, out.data, out.len, &p, err, sizeof(err)) != HP_OK ||
		p.rate != st.sample_interval || p.maps == NULL || st.picked > st.records)
		abort();
	for (size_t i = 0; i < p.nsamples; i++)
		objs += p.samples[i].objs;
	if (objs != (double) st.picked)
		abort();
	hp_unsample(&p);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static harness h;
	static hp_arena arena;		/* modified after setjmp */

	harness_init(&h, size, NULL);
	hp_arena_init(&arena, &h.env);
	if (setjmp(h.jump) == 0)
		convert(&arena, (const char *) data, size);
	hp_arena_free(&arena);
	return 0;
}
