/*
 * fuzz_history.c -- libFuzzer target for the heap history's tick files.
 *
 * The history folder may hold any file, cut short or not a tick at all,
 * and history.c's reader is the one gate before the stages that trust a
 * tick, so: each input is read, and a tick it accepts must be written back
 * byte for byte as the input (the format is canonical; anything else means
 * the reader let through what the writer never makes), then go through
 * hp_growth, alone and as eight ticks a minute apart whose bytes grow with
 * the copy (per process or across, kinds chosen by the input's size).  The
 * suspects must be in hp_growth_functions_first's order (the rows of other
 * kinds than functions fastest first; no row more than a tenth faster than
 * a function before it), steady within 0..1 and above the rate asked, else
 * abort.  The environment is harness.h's: errors longjmp back here, and
 * on some sizes allocation fails or an interrupt jumps out.
 *
 * Build and run: make -C fuzz run SECONDS=60 (clang, ASan, UBSan).
 */
#include <math.h>

#include "harness.h"

#include "engine/history.h"

#define COPIES 8
#define MINUTE INT64_C(60000000)

static void
check(const hp_suspect *x, size_t n, const hp_growth_options *o)
{
	double		last = INFINITY;	/* of the other kinds */
	double		slowest_function = INFINITY;

	for (size_t i = 0; i < n; i++)
	{
		double		r = x[i].bytes_per_hour;
		bool		function = x[i].kind == HP_HIST_FUNCTION;

		if (x[i].name == NULL || !(x[i].steadiness >= 0 && x[i].steadiness <= 1) ||
			!(r > 0) || r < o->min_rate ||
			x[i].processes < 1 || x[i].points < 6 || (unsigned) x[i].kind >= HP_HIST_KINDS ||
			(o->per_process ? x[i].processes != 1 : x[i].pid != 0))
			abort();
		if ((!function && r > last) || 0.9 * r > slowest_function)
			abort();
		if (function)
			slowest_function = fmin(slowest_function, r);
		else
			last = r;
	}
}

static void
grow(hp_arena *a, const hp_hist_tick *t, size_t size)
{
	hp_hist_tick *ticks = hp_alloc(a, COPIES * sizeof(hp_hist_tick));
	int64_t		base = t->time > INT64_MAX - COPIES * MINUTE ? t->time - COPIES * MINUTE : t->time;
	hp_growth_options o = {INT64_MIN, INT64_MAX, size % 2 == 0, (double) (size % 7) * 1000,
		(int) (size % 17)};
	hp_suspect *x;
	size_t		n;

	n = hp_growth(a, t, 1, &o, &x);
	if (n != 0)
		abort();
	for (int c = 0; c < COPIES; c++)
	{
		ticks[c] = *t;
		ticks[c].time = base + c * MINUTE;
		ticks[c].procs = hp_alloc(a, t->nprocs * sizeof(hp_hist_proc) + 1);
		for (size_t i = 0; i < t->nprocs; i++)
		{
			hp_hist_proc *p = &ticks[c].procs[i];

			*p = t->procs[i];
			p->rows = hp_alloc(a, p->nrows * sizeof(hp_hist_row) + 1);
			for (size_t k = 0; k < p->nrows; k++)
			{
				p->rows[k] = t->procs[i].rows[k];
				if (p->rows[k].bytes <= INT64_MAX / 2)
					p->rows[k].bytes += c * (p->rows[k].bytes / 8 + (int64_t) (k % 3));
			}
		}
	}
	n = hp_growth(a, ticks, COPIES, &o, &x);
	check(x, n, &o);
}

static void
run(hp_arena *a, const char *text, size_t size)
{
	hp_hist_tick t;
	hp_buf		out;
	char		err[256];

	if (hp_hist_read(a, text, size, &t, err, sizeof(err)) != HP_OK)
		return;
	hp_buf_init(&out, a);
	hp_hist_write(&out, &t);
	if (out.len != size || memcmp(out.data, text, size) != 0)
		abort();
	grow(a, &t, size);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static harness h;
	static hp_arena arena;		/* modified after setjmp */

	harness_init(&h, size, NULL);
	hp_arena_init(&arena, &h.env);
	if (setjmp(h.jump) == 0)
		run(&arena, (const char *) data, size);
	hp_arena_free(&arena);
	return 0;
}
