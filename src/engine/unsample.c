/*
 * unsample.c -- undo jemalloc's sampling, exactly as jeprof does.
 *
 * jemalloc samples an allocation of size s with probability
 * 1 - exp(-s / R).  jeprof's AdjustSamples (v2) divides each count pair by
 * that probability, computed from the pair's average size, in doubles and
 * without rounding.  The operations are kept in jeprof's order so results
 * match to the last bit.  A pair with objects but no bytes (never written by
 * jemalloc) would divide by zero in jeprof; it is left unscaled here.
 */
#include "profile.h"

#include <math.h>

static void
adjust(double *n, double *s, double rate)
{
	double		ratio;
	double		scale;

	if (*n == 0 || *s == 0)
		return;
	ratio = ((*s * 1.0) / *n) / rate;
	scale = 1 / (1 - exp(-ratio));
	*n *= scale;
	*s *= scale;
}

void
hp_unsample(hp_profile *p)
{
	double		rate = (double) p->rate;

	for (size_t i = 0; i < p->nsamples; i++)
	{
		adjust(&p->samples[i].objs, &p->samples[i].bytes, rate);
		adjust(&p->samples[i].acc_objs, &p->samples[i].acc_bytes, rate);
	}
}
