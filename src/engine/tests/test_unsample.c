/*
 * test_unsample.c -- jeprof's AdjustSamples, to the last bit.
 *
 * The expected numbers were computed by Perl with jeprof's own expressions
 * ($ratio = (($s * 1.0) / $n) / $rate; $scale = 1 / (1 - exp(-$ratio)))
 * and printed with %.17g, so they are exactly jeprof's doubles.
 */
#include "test.h"

static const struct
{
	double		n, s, en, es;
}			cases[] = {
	{1, 100, 5243.3800158950908, 524338.00158950908},
	{3, 3000, 1574.3644768370841, 1574364.4768370842},
	{10, 10485760, 11.565176427496658, 12126966.437638735},
	{2, 48, 43691.666674295884, 1048600.0001831013},
	{7, 700000, 40.31135460049326, 4031135.4600493265},
};

int
main(void)
{
	t_env		env;
	hp_arena	a;
	hp_profile	p;
	char		text[4096];
	char		err[256];
	size_t		len = 0;
	size_t		n = sizeof(cases) / sizeof(cases[0]);

	t_env_init(&env);
	hp_arena_init(&a, &env.env);
	len += (size_t) sprintf(text + len, "heap_v2/524288\n");
	for (size_t i = 0; i < n; i++)
		len += (size_t) sprintf(text + len, "@ 0x%zx\nt*: %.0f: %.0f [%.0f: %.0f]\n",
								i + 1, cases[i].n, cases[i].s, cases[i].n, cases[i].s);
	len += (size_t) sprintf(text + len, "@ 0x99\nt*: 0: 0 [5: 0]\n");
	(void) len;
	if (t_parse(&a, text, &p, err, sizeof(err)) != HP_OK || p.nsamples != n + 1)
	{
		t_fail("unsample input", "%s", err);
		return t_exit();
	}
	hp_unsample(&p);
	for (size_t i = 0; i < n; i++)
	{
		char		name[64];

		snprintf(name, sizeof(name), "unsample %.0f objects of %.0f bytes", cases[i].n, cases[i].s);
		T_CHECK(name, p.samples[i].objs == cases[i].en && p.samples[i].bytes == cases[i].es &&
				p.samples[i].acc_objs == cases[i].en && p.samples[i].acc_bytes == cases[i].es,
				"%.17g %.17g, jeprof %.17g %.17g", p.samples[i].objs, p.samples[i].bytes,
				cases[i].en, cases[i].es);
	}
	/* jeprof would divide by zero; left as it is */
	T_CHECK("unsample leaves a pair without bytes alone",
			p.samples[n].objs == 0 && p.samples[n].bytes == 0 && p.samples[n].acc_objs == 5,
			"%g %g", p.samples[n].objs, p.samples[n].acc_objs);
	hp_arena_free(&a);
	return t_exit();
}
