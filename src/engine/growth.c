/*
 * growth.c -- leak suspects: what grows steadily in the heap history (see
 * history.h).
 *
 * A series is one process's (pid and start: a reused pid is another
 * process) bytes of one (kind, name) at the ticks of the window where it
 * has the row; a tick without the row is a missing point, not a zero.  It
 * grows when both of these say so:
 *
 *   - Mann-Kendall: S = sum over pairs i < j of sign(b_j - b_i), with the
 *     variance corrected for ties, Z >= 2.326 (a rising trend at the
 *     one-sided 1 % level).  A spike is one rank among many, so it cannot
 *     make a trend; but a fill that stopped is monotone and passes, hence:
 *   - Theil-Sen: the median of the pairwise slopes (b_j - b_i) / (t_j -
 *     t_i) is above 0.  While the fill lasts less than about 30 % of the
 *     window the flat part's zero slopes are the median, unlike a least
 *     squares line, which a fill or a spike tilts.
 *
 * A series of fewer than 6 points, or spanning less than 3 intervals (of
 * the tick of its last point), is not judged.  Both statistics take O(n^2)
 * pairs, so a longer series is thinned to 96 points evenly spaced by index
 * (the first and the last kept): 100 processes by 50 names by 1440 ticks
 * stays well under a second.  The ticks are read twice: once to name the
 * series and count their points, once to keep the points that thinning
 * keeps, so memory is 96 points a series, not one per row.
 *
 * A suspect's rate is the Theil-Sen slope in bytes per hour;
 * outside_per_hour the same of the outside bytes of its points that know
 * them (0 with fewer than 6); its steadiness Kendall's tau, S / (n (n - 1)
 * / 2), clamped to 0..1; and since the time of the last point at its least
 * bytes in the window (of all its points, not only those kept): where the
 * growth started from, without guessing a change point.
 *
 * Finding a row's series is the hot path: names are hashed once per
 * (kind, string) and then found by their pointer in a small cache (a tick
 * read by history.c shares one string per name among its rows), and a
 * process's row is first tried against the series at its position at the
 * process's last tick.
 */
#include "history.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MIN_POINTS 6			/* fewer: not judged */
#define MIN_SPAN 3				/* intervals a judged series spans at least */
#define MAX_POINTS 96			/* more: thinned to this many */
#define Z_ONE_PERCENT 2.326		/* one-sided normal quantile */
#define US_PER_HOUR 3600e6
#define CACHE_SIZE 4096			/* name pointers remembered, a power of 2 */

typedef struct point
{
	int64_t		t;
	int64_t		bytes;
	int64_t		outside;
} point;

typedef struct series
{
	uint64_t	key;			/* process << 32 | name */
	size_t		count;			/* points in the window */
	size_t		seen;			/* second pass: points met so far */
	size_t		kept;			/* ... and kept */
	point	   *pts;
	int64_t		low;			/* the least bytes of all its points */
	int64_t		low_at;			/* the time of the last point at low */
	int64_t		last;			/* bytes at its last point */
	int64_t		interval;		/* of the tick of its last point */
} series;

/* A name is kind + NAME_KINDS * (its index among that kind's names). */
#define NAME_KINDS 4

typedef struct cached
{
	const char *p;
	uint32_t	kind;
	uint32_t	id;
} cached;

typedef struct growth
{
	hp_arena   *a;
	unsigned	kinds;			/* bit per kind wanted */
	hp_map		procs;			/* (pid, start) -> index in proc */
	struct proc
	{
		int32_t		pid;
		int64_t		start;
		uint32_t   *hint;		/* the series of its rows, by position, at its last tick */
		size_t		nhint;
	}		   *proc;
	size_t		proc_cap;
	hp_map		names[NAME_KINDS];	/* name -> index, per kind */
	cached	   *cache;			/* CACHE_SIZE name pointers */
	series	   *s;
	size_t		n;
	size_t		cap;
	struct slot
	{
		uint64_t	key;
		size_t		index;		/* in s, + 1; 0 = empty */
	}		   *slots;			/* open addressing, the key kept for one cache miss */
	size_t		nslots;
	double	   *scratch;		/* pairwise slopes or sorted values */
} growth;

static uint64_t
mix(uint64_t x)
{
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	return x;
}

static uint32_t
proc_id(growth *g, int32_t pid, int64_t start)
{
	char		key[12];
	bool		added;
	size_t		i;

	memcpy(key, &pid, 4);
	memcpy(key + 4, &start, 8);
	i = hp_map_put(&g->procs, key, sizeof(key), &added);
	if (added)
	{
		HP_RESERVE(g->a, g->proc, g->proc_cap, i);
		memset(&g->proc[i], 0, sizeof(g->proc[i]));
		g->proc[i].pid = pid;
		g->proc[i].start = start;
	}
	return (uint32_t) i;
}

static uint32_t
name_id(growth *g, unsigned kind, const char *s)
{
	cached	   *c = &g->cache[mix((uintptr_t) s ^ kind) & (CACHE_SIZE - 1)];

	if (c->p != s || c->kind != kind)
	{
		c->p = s;
		c->kind = kind;
		c->id = (uint32_t) (kind + NAME_KINDS *
							hp_map_put(&g->names[kind], s, strlen(s), NULL));
	}
	return c->id;
}

static size_t
series_slot(const growth *g, uint64_t key)
{
	size_t		mask = g->nslots - 1;
	size_t		i = mix(key) & mask;

	while (g->slots[i].index && g->slots[i].key != key)
		i = (i + 1) & mask;
	return i;
}

/* The series of a key; new ones are added in the first pass only. */
static series *
series_of(growth *g, uint64_t key, bool add)
{
	size_t		i;

	if (add && (g->n + 1) * 2 > g->nslots)
	{
		size_t		old = g->nslots;

		g->nslots = old ? old * 2 : 1024;
		g->slots = hp_grow(g->a, g->slots, old * sizeof(struct slot), g->nslots * sizeof(struct slot));
		memset(g->slots, 0, g->nslots * sizeof(struct slot));
		for (size_t k = 0; k < g->n; k++)
		{
			i = series_slot(g, g->s[k].key);
			g->slots[i].key = g->s[k].key;
			g->slots[i].index = k + 1;
		}
	}
	i = series_slot(g, key);
	if (g->slots[i].index == 0)
	{
		if (!add)
			return NULL;
		HP_RESERVE(g->a, g->s, g->cap, g->n);
		g->s[g->n].key = key;
		g->slots[i].key = key;
		g->slots[i].index = ++g->n;
	}
	return &g->s[g->slots[i].index - 1];
}

/* A point of s (second pass): kept when thinning keeps its index. */
static void
add_point(series *s, const hp_hist_tick *t, const hp_hist_row *r)
{
	size_t		k = s->seen++;

	if (k == 0 || r->bytes <= s->low)
	{
		s->low = r->bytes;
		s->low_at = t->time;
	}
	s->last = r->bytes;
	s->interval = t->interval;
	if (s->pts == NULL)
		return;
	/* index j of the thinned series is point j * (count - 1) / (MAX_POINTS - 1) */
	if (s->count > MAX_POINTS &&
		k != (uint64_t) s->kept * (s->count - 1) / (MAX_POINTS - 1))
		return;
	s->pts[s->kept].t = t->time;
	s->pts[s->kept].bytes = r->bytes;
	s->pts[s->kept].outside = r->outside;
	s->kept++;
}

/* Both passes over the ticks in the window; the second fills the points. */
static void
scan(growth *g, const hp_hist_tick *ticks, size_t n, const hp_growth_options *o, bool fill)
{
	for (size_t i = 0; i < n; i++)
	{
		const hp_hist_tick *t = &ticks[i];

		if (t->time < o->from || t->time > o->to)
			continue;
		for (size_t j = 0; j < t->nprocs; j++)
		{
			const hp_hist_proc *p = &t->procs[j];
			uint32_t	id = proc_id(g, p->pid, p->start);
			struct proc *pr = &g->proc[id];

			if (pr->nhint < p->nrows)
			{
				pr->hint = hp_grow(g->a, pr->hint, pr->nhint * sizeof(uint32_t),
								   p->nrows * sizeof(uint32_t));
				pr->nhint = p->nrows;
			}
			for (size_t k = 0; k < p->nrows; k++)
			{
				const hp_hist_row *r = &p->rows[k];
				unsigned	kind = (unsigned) r->kind;
				uint64_t	key;
				series	   *s;

				if (kind >= HP_HIST_KINDS || !(g->kinds & (1u << kind)))
					continue;
				key = (uint64_t) id << 32 | name_id(g, kind, r->name ? r->name : "");

				/*
				 * A process lists its rows in much the same order at every
				 * tick: its series there last time saves a hash lookup (and
				 * its cache miss) per row.
				 */
				if (pr->hint[k] < g->n && g->s[pr->hint[k]].key == key)
					s = &g->s[pr->hint[k]];
				else
				{
					s = series_of(g, key, !fill);
					pr->hint[k] = (uint32_t) (s - g->s);
				}
				if (!fill)
					s->count++;
				else
					add_point(s, t, r);
			}
			hp_work(g->a->env, 1 + p->nrows);
		}
	}
}

/* ---- statistics ---- */

static int
cmp_double(const void *x, const void *y)
{
	double		a = *(const double *) x;
	double		b = *(const double *) y;

	return (a > b) - (a < b);
}

/*
 * The k-th smallest of v[0, n), v reordered around it (quickselect with a
 * three-way partition, as the zero slopes of a flat series are many equal
 * values); after too many rounds the rest is sorted, to bound the worst case.
 */
static double
select_kth(growth *g, double *v, size_t n, size_t k)
{
	size_t		lo = 0;
	size_t		hi = n;			/* the k-th lies in [lo, hi) */

	for (int round = 0; hi - lo > 1; round++)
	{
		double		pivot;
		size_t		lt = lo;
		size_t		gt = hi;
		size_t		i = lo;

		if (round == 64)
		{
			qsort(v + lo, hi - lo, sizeof(double), cmp_double);
			break;
		}
		{
			double		x = v[lo];
			double		y = v[lo + (hi - lo) / 2];
			double		z = v[hi - 1];

			pivot = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
		}
		/* [lo, lt) < pivot, [lt, i) == pivot, [gt, hi) > pivot */
		while (i < gt)
		{
			double		x = v[i];

			if (x < pivot)
			{
				v[i++] = v[lt];
				v[lt++] = x;
			}
			else if (x > pivot)
			{
				v[i] = v[--gt];
				v[gt] = x;
			}
			else
				i++;
		}
		hp_work(g->a->env, hi - lo);
		if (k < lt)
			hi = lt;
		else if (k >= gt)
			lo = gt;
		else
			return pivot;
	}
	return v[k];
}

/*
 * The Theil-Sen slope of pts[0, n) in bytes per hour, of bytes or (outside)
 * of the outside bytes of the points that know them; pairs at the same time
 * are left out, and without a pair the slope is 0.
 */
static double
theil_sen(growth *g, const point *pts, size_t n, bool outside)
{
	double	   *v = g->scratch;
	size_t		m = 0;
	double		lo;

	for (size_t i = 0; i < n; i++)
	{
		double		bi = (double) (outside ? pts[i].outside : pts[i].bytes);

		if (outside && pts[i].outside < 0)
			continue;
		for (size_t j = i + 1; j < n; j++)
		{
			double		dt = (double) pts[j].t - (double) pts[i].t;

			if (dt == 0 || (outside && pts[j].outside < 0))
				continue;
			v[m++] = ((double) (outside ? pts[j].outside : pts[j].bytes) - bi) / dt;
		}
		hp_work(g->a->env, n - i);
	}
	if (m == 0)
		return 0;
	lo = select_kth(g, v, m, (m - 1) / 2);
	if (m % 2 == 0)
	{
		/* the next one up is the least of the upper part */
		double		hi = v[m / 2];

		for (size_t i = m / 2 + 1; i < m; i++)
			if (v[i] < hi)
				hi = v[i];
		lo = (lo + hi) / 2;
	}
	return lo * US_PER_HOUR;
}

static int
cmp_int64(const void *x, const void *y)
{
	int64_t		a = *(const int64_t *) x;
	int64_t		b = *(const int64_t *) y;

	return (a > b) - (a < b);
}

/* Mann-Kendall: S into *s, and Z with the tie-corrected variance. */
static double
mann_kendall(growth *g, const point *pts, size_t n, long *s)
{
	int64_t    *sorted = (int64_t *) g->scratch;
	double		var;
	double		ties = 0;
	long		sum = 0;

	for (size_t i = 0; i < n; i++)
	{
		for (size_t j = i + 1; j < n; j++)
			sum += (pts[j].bytes > pts[i].bytes) - (pts[j].bytes < pts[i].bytes);
		sorted[i] = pts[i].bytes;
		hp_work(g->a->env, n - i);
	}
	qsort(sorted, n, sizeof(int64_t), cmp_int64);
	for (size_t i = 0; i < n;)
	{
		size_t		k = i + 1;
		double		t;

		while (k < n && sorted[k] == sorted[i])
			k++;
		t = (double) (k - i);
		ties += t * (t - 1) * (2 * t + 5);
		i = k;
	}
	*s = sum;
	var = ((double) n * (n - 1) * (2.0 * n + 5) - ties) / 18;
	if (var <= 0 || sum == 0)
		return 0;
	return (sum > 0 ? sum - 1 : sum + 1) / sqrt(var);
}

/*
 * Judge s; true when it grows, with its suspect's fields filled but
 * for the process and name.
 */
static bool
judge(growth *g, const series *s, hp_suspect *out)
{
	size_t		n = s->kept;
	long		sum;
	double		z;
	double		tau;
	size_t		known = 0;

	if (s->count < MIN_POINTS || n < MIN_POINTS ||
		(double) s->pts[n - 1].t - (double) s->pts[0].t < MIN_SPAN * (double) s->interval)
		return false;
	z = mann_kendall(g, s->pts, n, &sum);
	if (z < Z_ONE_PERCENT)
		return false;
	memset(out, 0, sizeof(*out));
	out->bytes_per_hour = theil_sen(g, s->pts, n, false);
	if (!(out->bytes_per_hour > 0))
		return false;
	for (size_t i = 0; i < n; i++)
		known += s->pts[i].outside >= 0;
	if (known >= MIN_POINTS)
		out->outside_per_hour = theil_sen(g, s->pts, n, true);
	out->outside_contexts = out->outside_per_hour >= 0.5 * out->bytes_per_hour;
	tau = (double) sum / ((double) n * (n - 1) / 2);
	out->steadiness = tau < 0 ? 0 : tau > 1 ? 1 : tau;
	out->since = s->low_at;
	out->bytes = s->last;
	out->processes = 1;
	out->points = s->count > INT32_MAX ? INT32_MAX : (int) s->count;
	return true;
}

/* ---- suspects ---- */

static int
cmp_suspect(const void *x, const void *y)
{
	const hp_suspect *a = x;
	const hp_suspect *b = y;
	int			c;

	if (a->bytes_per_hour != b->bytes_per_hour)
		return a->bytes_per_hour > b->bytes_per_hour ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if ((c = strcmp(a->name, b->name)) != 0)
		return c;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return (a->start > b->start) - (a->start < b->start);
}

/* Bytes [lo, hi) rotated so that the last size of them come first. */
static void
rotate_right(unsigned char *lo, unsigned char *hi, size_t size)
{
	/* three reversals: of the part before the last row, of that row, of all */
	unsigned char *parts[3][2] = {{lo, hi - size}, {hi - size, hi}, {lo, hi}};

	for (int k = 0; k < 3; k++)
		for (unsigned char *a = parts[k][0], *b = parts[k][1]; b - a > 1; a++)
		{
			unsigned char t = *a;

			*a = *--b;
			*b = t;
		}
}

void
hp_growth_functions_first(void *rows, size_t n, size_t size, const hp_growth_reader *r)
{
	unsigned char *v = rows;

	for (size_t i = 0; i < n; i++)
	{
		const void *x = v + i * size;

		if (r->is_function(x))
			continue;
		for (size_t j = i + 1; j < n && r->rate(v + j * size) >= 0.9 * r->rate(x); j++)
			if (r->is_function(v + j * size) && r->same_series(v + j * size, x))
			{
				rotate_right(v + i * size, v + (j + 1) * size, size);
				break;
			}
	}
}

static bool
suspect_is_function(const void *row)
{
	return ((const hp_suspect *) row)->kind == HP_HIST_FUNCTION;
}

static double
suspect_rate(const void *row)
{
	return ((const hp_suspect *) row)->bytes_per_hour;
}

static bool
suspect_same_series(const void *a, const void *b)
{
	const hp_suspect *x = a;
	const hp_suspect *y = b;

	return x->pid == y->pid && x->start == y->start;
}

/* The name of a name index, NUL-terminated in the arena. */
static const char *
name_text(growth *g, uint32_t id)
{
	const hp_map *m = &g->names[id % NAME_KINDS];
	const struct hp_map_key *k = &m->keys[id / NAME_KINDS];

	return hp_strndup(g->a, k->key, k->len);
}

/*
 * Across processes, a name's suspect adds up its growing series: rates,
 * outside rates and last bytes summed (bytes saturate at 2^63-1), since the
 * earliest, points the longest series'.  Its steadiness is the mean of
 * theirs weighted by their rates, so the processes that make most of the
 * growth say how steady it is.
 */
static void
merge(hp_suspect *into, const hp_suspect *x)
{
	double		rate = into->bytes_per_hour + x->bytes_per_hour;

	if (into->processes == 0)
	{
		*into = *x;
		return;
	}
	into->steadiness = (into->steadiness * into->bytes_per_hour +
						x->steadiness * x->bytes_per_hour) / rate;
	into->bytes_per_hour = rate;
	into->outside_per_hour += x->outside_per_hour;
	if (x->since < into->since)
		into->since = x->since;
	into->bytes = x->bytes > INT64_MAX - into->bytes ? INT64_MAX : into->bytes + x->bytes;
	into->processes++;
	if (x->points > into->points)
		into->points = x->points;
}

size_t
hp_growth(hp_arena *a, const hp_hist_tick *ticks, size_t n, const hp_growth_options *o,
		  hp_suspect **out)
{
	growth		g;
	size_t		total = 0;
	point	   *pts;
	hp_suspect *res = NULL;
	size_t		nres = 0;
	size_t		cap = 0;
	hp_suspect *across = NULL;
	size_t		nnames = 0;

	memset(&g, 0, sizeof(g));
	g.a = a;
	g.kinds = (o->kinds ? (unsigned) o->kinds : ~(1u << HP_HIST_TOTAL)) &
		((1u << HP_HIST_KINDS) - 1);
	hp_map_init(&g.procs, a);
	for (int k = 0; k < NAME_KINDS; k++)
		hp_map_init(&g.names[k], a);
	g.cache = hp_alloc(a, CACHE_SIZE * sizeof(cached));
	*out = NULL;

	scan(&g, ticks, n, o, false);
	for (size_t i = 0; i < g.n; i++)
		if (g.s[i].count >= MIN_POINTS)
			total += g.s[i].count < MAX_POINTS ? g.s[i].count : MAX_POINTS;
	if (total == 0)
		return 0;
	pts = hp_alloc(a, total * sizeof(point));
	for (size_t i = 0; i < g.n; i++)
		if (g.s[i].count >= MIN_POINTS)
		{
			g.s[i].pts = pts;
			pts += g.s[i].count < MAX_POINTS ? g.s[i].count : MAX_POINTS;
		}
	scan(&g, ticks, n, o, true);

	g.scratch = hp_alloc(a, MAX_POINTS * (MAX_POINTS - 1) / 2 * sizeof(double));
	if (!o->per_process)
	{
		for (int k = 0; k < NAME_KINDS; k++)
			if (g.names[k].count * NAME_KINDS > nnames)
				nnames = g.names[k].count * NAME_KINDS;
		across = hp_alloc(a, nnames * sizeof(hp_suspect));
	}
	for (size_t i = 0; i < g.n; i++)
	{
		const series *s = &g.s[i];
		uint32_t	proc = (uint32_t) (s->key >> 32);
		uint32_t	name = (uint32_t) s->key;
		hp_suspect	x;

		if (!judge(&g, s, &x))
			continue;
		if (!o->per_process)
		{
			merge(&across[name], &x);
			continue;
		}
		if (x.bytes_per_hour < o->min_rate)
			continue;
		x.kind = (hp_hist_kind) (name % NAME_KINDS);
		x.name = name_text(&g, name);
		x.pid = g.proc[proc].pid;
		x.start = g.proc[proc].start;
		HP_RESERVE(a, res, cap, nres);
		res[nres++] = x;
	}
	for (size_t i = 0; i < nnames; i++)
	{
		hp_suspect *x = &across[i];

		if (x->processes == 0 || x->bytes_per_hour < o->min_rate)
			continue;
		x->outside_contexts = x->outside_per_hour >= 0.5 * x->bytes_per_hour;
		x->kind = (hp_hist_kind) (i % NAME_KINDS);
		x->name = name_text(&g, (uint32_t) i);
		x->pid = 0;
		x->start = 0;
		HP_RESERVE(a, res, cap, nres);
		res[nres++] = *x;
	}
	if (nres > 1)
	{
		static const hp_growth_reader reader = {suspect_is_function, suspect_rate, suspect_same_series};

		qsort(res, nres, sizeof(hp_suspect), cmp_suspect);
		hp_growth_functions_first(res, nres, sizeof(hp_suspect), &reader);
	}
	hp_work(a->env, nres);
	*out = res;
	return nres;
}
