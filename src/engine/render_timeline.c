/*
 * render_timeline.c -- the heap history as a self-contained SVG: the bytes
 * of the fastest growers over time, one line per name.
 *
 * The series are growth.c's suspects of one kind in the window (any rate,
 * fastest first; with a pid, that process's), filled up when too few grow
 * with the names holding the most bytes at the last tick that has any.  A
 * series' value at a tick is the sum of its rows over the tick's processes
 * (or the one pid's); a tick where none has the row is a gap in its line,
 * not a zero.
 *
 * Everything a test or a script needs is in attributes: each series is a
 * <g class="series" data-series="K" data-name="NAME" data-rate="B/h"
 * data-grows="0|1">, each point a <circle class="pt" data-series="K"
 * data-time="UNIX_USEC" data-bytes="B"> with a <title> (name, UTC time,
 * value).  A small inline script highlights the series under the mouse,
 * shows a point's title on the details line, and searches the names (the
 * Search button, or ?s=REGEX in the URL), reading them from data-name, so
 * no name ever reaches the script's text.  Names pass sink.h's XML sink
 * only; numbers are printf's.
 */
#include "history.h"
#include "sink.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WIDTH 1200
#define PAD_LEFT 90				/* room for the bytes labels */
#define PAD_RIGHT 30
#define PLOT_TOP 64
#define PLOT_H 360
#define PLOT_BOTTOM (PLOT_TOP + PLOT_H)
#define LEGEND_TOP (PLOT_BOTTOM + 56)
#define LEGEND_ROW 18
#define EMPTY_HEIGHT 160
#define DEFAULT_SERIES 10		/* o->series 0 */
#define MAX_SERIES 50
#define NAME_MAX_BYTES 1000		/* of a name in data-name */
#define TITLE_MAX 300			/* of a name in a point's tooltip, and of the title */
#define LEGEND_MAX 120			/* of a name in the legend */
#define X_LABELS 8				/* about the most time labels */

static const char *const kind_names[HP_HIST_KINDS] = {
	"total", "function", "statement", "memory context"
};

static const char *const palette[] = {
	"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
	"#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
	"#aec7e8", "#ff9896", "#98df8a", "#ffbb78", "#c5b0d5",
	"#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5",
};

/* a + b, held at the ends of int64_t instead of overflowing */
static int64_t
add_sat(int64_t a, int64_t b)
{
	if (b > 0 && a > INT64_MAX - b)
		return INT64_MAX;
	if (b < 0 && a < INT64_MIN - b)
		return INT64_MIN;
	return a + b;
}

/* ---- numbers and times as text ---- */

static const char *const units[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};

/* The power of 1024 to show v in: its index in units. */
static int
unit_of(double v)
{
	int			k = 0;

	v = fabs(v);
	while (v >= 1024 && k < (int) (sizeof(units) / sizeof(units[0])) - 1)
	{
		v /= 1024;
		k++;
	}
	return k;
}

/* bytes as pg_size_pretty's units with a decimal: "512 B", "12.3 MB" */
static void
human(double v, char *buf, size_t len)
{
	int			k = unit_of(v);

	if (!isfinite(v))
		v = 0;
	if (k == 0)
		snprintf(buf, len, "%.0f B", v);
	else
		snprintf(buf, len, "%.1f %s", v / pow(1024, k), units[k]);
}

/* a rate in bytes per hour: "+12.3 MB/h", "-1.0 kB/h", "0 B/h" */
static void
rate_text(double r, char *buf, size_t len)
{
	char		h[48];

	human(fabs(r), h, sizeof(h));
	snprintf(buf, len, "%s%s/h", r > 0 ? "+" : r < 0 ? "-" : "", h);
}

typedef enum
{
	T_FULL,						/* 2026-11-27 10:00:10 */
	T_DATE,						/* 2026-11-27 */
	T_HM,						/* 10:00 */
	T_HMS						/* 10:00:10 */
} time_format;

/* Unix microseconds as UTC text; a time gmtime cannot take as "@SECONDS". */
static void
utc(int64_t usec, time_format f, char *buf, size_t len)
{
	int64_t		s = usec / 1000000 - (usec % 1000000 < 0);
	time_t		t = (time_t) s;
	struct tm	tm;

	if ((int64_t) t != s || gmtime_r(&t, &tm) == NULL)
	{
		snprintf(buf, len, "@%lld", (long long) s);
		return;
	}
	switch (f)
	{
		case T_FULL:
			snprintf(buf, len, "%04d-%02d-%02d %02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1,
					 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
			break;
		case T_DATE:
			snprintf(buf, len, "%04d-%02d-%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
			break;
		case T_HM:
			snprintf(buf, len, "%02d:%02d", tm.tm_hour, tm.tm_min);
			break;
		case T_HMS:
			snprintf(buf, len, "%02d:%02d:%02d", tm.tm_hour, tm.tm_min, tm.tm_sec);
			break;
	}
}

/* seconds as Unix microseconds, held within int64_t */
static int64_t
usec_of(double s)
{
	double		u = s * 1e6;

	if (!(u > -9.2e18))
		return -INT64_C(9200000000000000000);
	if (!(u < 9.2e18))
		return INT64_C(9200000000000000000);
	return (int64_t) u;
}

/* 1, 2 or 5 times a power of ten, at least v > 0 */
static double
nice(double v)
{
	double		p = pow(10, floor(log10(v)));
	double		f = v / p;

	return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
}

/* ---- the data ---- */

typedef struct at
{
	int64_t		time;
	size_t		tick;
} at;

static int
at_cmp(const void *x, const void *y)
{
	const at   *a = x,
			   *b = y;

	if (a->time != b->time)
		return a->time < b->time ? -1 : 1;
	return a->tick < b->tick ? -1 : a->tick > b->tick;
}

/* A name of the kind: its bytes at the last tick it has (pass one). */
typedef struct name_info
{
	const char *name;
	size_t		last;			/* position of its last tick, + 1; 0: none yet */
	int64_t		bytes;			/* its sum there */
	int			series;			/* -1: not drawn */
} name_info;

typedef struct candidate
{
	size_t		name;
	bool		at_end;			/* it has the last tick with data */
	int64_t		bytes;
	const char *s;
} candidate;

static int
candidate_cmp(const void *x, const void *y)
{
	const candidate *a = x,
			   *b = y;

	if (a->at_end != b->at_end)
		return a->at_end ? -1 : 1;
	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	return strcmp(a->s, b->s);
}

typedef struct series
{
	size_t		name;			/* in the names */
	double		rate;			/* bytes per hour; 0 when filled up */
	bool		grows;			/* a suspect of hp_growth */
} series;

typedef struct timeline
{
	hp_arena   *a;
	const hp_hist_tick *ticks;
	size_t		nticks;
	const hp_timeline_options *o;
	hp_buf	   *out;
	at		   *pos;			/* the window's ticks by time */
	size_t		npos;
	hp_map		map;			/* names of the kind */
	name_info  *names;
	size_t		nnames;
	size_t		names_cap;
	size_t		last_data;		/* position of the last tick with a row of the kind, + 1 */
	series	   *series;
	size_t		nseries;
	int64_t    *value;			/* [series * npos + position] */
	bool	   *has;
	size_t		first,
				end;			/* the positions drawn: from the first to the last with a point */
} timeline;

static bool
proc_wanted(const timeline *t, const hp_hist_proc *p)
{
	return t->o->pid == 0 || p->pid == t->o->pid;
}

/*
 * Call fn for every row of the kind in the window's processes, by position.
 * fn gets the row's name index in the map.
 */
static void
each_row(timeline *t, bool add, void (*fn) (timeline *t, size_t pos, size_t name, int64_t bytes))
{
	for (size_t k = 0; k < t->npos; k++)
	{
		const hp_hist_tick *tick = &t->ticks[t->pos[k].tick];

		hp_work(t->a->env, tick->nprocs + 1);
		for (size_t p = 0; p < tick->nprocs; p++)
		{
			const hp_hist_proc *proc = &tick->procs[p];

			if (!proc_wanted(t, proc))
				continue;
			hp_work(t->a->env, proc->nrows);
			for (size_t r = 0; r < proc->nrows; r++)
			{
				const hp_hist_row *row = &proc->rows[r];
				const char *name = row->name ? row->name : "";
				size_t		len = strlen(name);
				size_t		i;

				if (row->kind != t->o->kind)
					continue;
				if (add)
				{
					bool		added;

					i = hp_map_put(&t->map, name, len, &added);
					if (added)
					{
						HP_RESERVE(t->a, t->names, t->names_cap, i);
						t->names[i] = (name_info) {t->map.keys[i].key, 0, 0, -1};
						t->nnames = i + 1;
					}
				}
				else
					i = hp_map_put(&t->map, name, len, NULL);
				fn(t, k, i, row->bytes);
			}
		}
	}
}

/* pass one: each name's sum at its last tick */
static void
count_name(timeline *t, size_t pos, size_t name, int64_t bytes)
{
	name_info  *n = &t->names[name];

	if (n->last != pos + 1)
	{
		n->last = pos + 1;
		n->bytes = 0;
	}
	n->bytes = add_sat(n->bytes, bytes);
	t->last_data = pos + 1;
}

/* pass two: the drawn names' sums at every tick */
static void
count_value(timeline *t, size_t pos, size_t name, int64_t bytes)
{
	int			s = name < t->nnames ? t->names[name].series : -1;

	if (s < 0)
		return;
	t->value[(size_t) s * t->npos + pos] = add_sat(t->value[(size_t) s * t->npos + pos], bytes);
	t->has[(size_t) s * t->npos + pos] = true;
}


/*
 * The series, at most want: growth's suspects of the kind first (with a
 * pid, that process's), fastest first, each name once; then the names with
 * the most bytes at the last tick that has any (and after them the others
 * by their bytes at their own last tick), shown as not growing.
 */
static void
choose_series(timeline *t, size_t want)
{
	const hp_timeline_options *o = t->o;
	hp_growth_options g = {o->from, o->to, o->pid != 0, 0, 1 << o->kind};
	hp_suspect *rows = NULL;
	size_t		nrows = hp_growth(t->a, t->ticks, t->nticks, &g, &rows);

	t->series = hp_alloc(t->a, want * sizeof(series));
	for (size_t i = 0; i < nrows && t->nseries < want; i++)
	{
		const hp_suspect *r = &rows[i];
		bool		added;
		size_t		k;

		hp_work(t->a->env, 1);
		if (r->kind != o->kind || (o->pid != 0 && r->pid != o->pid) || r->name == NULL)
			continue;
		k = hp_map_put(&t->map, r->name, strlen(r->name), &added);
		/* a name without a point in the window has no line to draw */
		if (added || k >= t->nnames || t->names[k].series >= 0 || t->names[k].last == 0)
			continue;
		t->names[k].series = (int) t->nseries;
		t->series[t->nseries++] = (series) {k, isfinite(r->bytes_per_hour) ? r->bytes_per_hour : 0, true};
	}
	if (t->nseries < want)
	{
		candidate  *c = hp_alloc(t->a, (t->nnames + 1) * sizeof(candidate));
		size_t		m = 0;

		hp_work(t->a->env, t->nnames);
		for (size_t k = 0; k < t->nnames; k++)
			if (t->names[k].series < 0 && t->names[k].last > 0)
				c[m++] = (candidate) {k, t->names[k].last == t->last_data, t->names[k].bytes, t->names[k].name};
		qsort(c, m, sizeof(candidate), candidate_cmp);
		for (size_t i = 0; i < m && t->nseries < want; i++)
		{
			t->names[c[i].name].series = (int) t->nseries;
			t->series[t->nseries++] = (series) {c[i].name, 0, false};
		}
	}
}

/* ---- the drawing ---- */

static const char style[] =
	"<style>text { font-family: Verdana, sans-serif; font-size: 12px; fill: #000; }"
	" .axis text { font-size: 11px; fill: #444; } .grid { stroke: #e2e2e2; stroke-width: 1; }"
	" .frame { stroke: #888; fill: none; } .line { stroke-width: 1.5; }"
	" .series.hit .line { stroke-width: 3.5; } .dim { opacity: 0.15; }"
	" .pt:hover { stroke: #000; stroke-width: 1.5; } .legend { cursor: default; }"
	" .b { cursor: pointer; fill: #235; }</style>\n";

static const char script[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"var details, matched, groups, first = ' ', hit = null;\n"
	"function init() {\n"
	"  details = document.getElementById('details'); matched = document.getElementById('matched');\n"
	"  groups = Array.prototype.slice.call(document.querySelectorAll('.series, .legend'));\n"
	"  groups.forEach(function (g) {\n"
	"    g.addEventListener('mouseover', function (e) {\n"
	"      var p = e.target.closest ? e.target.closest('.pt') : null;\n"
	"      light(+g.dataset.series);\n"
	"      details.textContent = p ? p.querySelector('title').textContent : g.textContent;\n"
	"    });\n"
	"    g.addEventListener('mouseout', function () { light(-1); details.textContent = first; });\n"
	"  });\n"
	"  var top = document.querySelector('.legend[data-grows=\"1\"]');\n"
	"  first = top ? 'Fastest growth: ' + top.textContent : 'Nothing grows steadily in this window';\n"
	"  details.textContent = first;\n"
	"  var q = /[?&]s=([^&]*)/.exec(location.search);  // a search from the URL, as the flame graph's\n"
	"  if (q) { try { q = decodeURIComponent(q[1]); } catch (e) { q = q[1]; } find(q); }\n"
	"}\n"
	"/* the series k lit and the others dimmed; k < 0: the search's matches lit, if any */\n"
	"function light(k) {\n"
	"  groups.forEach(function (g) { var s = +g.dataset.series;\n"
	"    g.classList.toggle('dim', k >= 0 ? s != k : hit !== null && !hit[s]); });\n"
	"}\n"
	"function search() {\n"
	"  var term = prompt('Search series (regular expression):', ''); if (term !== null) find(term);\n"
	"}\n"
	"function find(term) {\n"
	"  var re, n = 0, all = document.querySelectorAll('.series');\n"
	"  try { re = new RegExp(term); } catch (e) { matched.textContent = 'Bad search: ' + e.message; return; }\n"
	"  hit = term === '' ? null : {};\n"
	"  Array.prototype.forEach.call(all, function (g) {\n"
	"    var on = hit !== null && re.test(g.dataset.name);\n"
	"    if (on) { hit[+g.dataset.series] = true; n++; }\n"
	"    g.classList.toggle('hit', on);\n"
	"  });\n"
	"  matched.textContent = hit === null ? ' ' : 'Matched: ' + n + ' of ' + all.length + ' series';\n"
	"  light(-1);\n"
	"}\n"
	"]]></script>\n";

static void
color(size_t k, char *buf, size_t len)
{
	if (k < sizeof(palette) / sizeof(palette[0]))
		snprintf(buf, len, "%s", palette[k]);
	else
		/* the golden angle apart: distinct enough past the palette */
		snprintf(buf, len, "hsl(%d,65%%,42%%)", (int) fmod((double) k * 137.508, 360));
}

/* The header, title and the line under it: what is drawn, from where. */
static void
head(timeline *t, int height, bool script_too, int64_t from, int64_t to, size_t nticks)
{
	const hp_timeline_options *o = t->o;
	char		a[64],
				b[64];

	hp_buf_printf(t->out,
				  "<?xml version=\"1.0\" standalone=\"no\"?>\n"
				  "<svg version=\"1.1\" width=\"%d\" height=\"%d\"%s "
				  "viewBox=\"0 0 %d %d\" xmlns=\"http://www.w3.org/2000/svg\">\n",
				  WIDTH, height, script_too ? " onload=\"init()\"" : "", WIDTH, height);
	hp_buf_printf(t->out, "%s", style);
	if (script_too)
		hp_buf_printf(t->out, "%s", script);
	hp_buf_printf(t->out, "<rect width=\"100%%\" height=\"100%%\" fill=\"#f8f8f4\"/>\n"
				  "<text id=\"title\" x=\"%d\" y=\"24\" text-anchor=\"middle\" style=\"font-size:17px\">",
				  WIDTH / 2);
	hp_sink_buf(t->out, HP_SINK_XML, o->title ? o->title : "", TITLE_MAX);
	hp_buf_printf(t->out, "</text>\n<text id=\"subtitle\" x=\"%d\" y=\"44\" text-anchor=\"middle\" "
				  "style=\"fill:#555\">", WIDTH / 2);
	if (o->kind >= 0 && o->kind < HP_HIST_KINDS && o->kind != HP_HIST_TOTAL)
		hp_buf_printf(t->out, "bytes by %s", kind_names[o->kind]);
	else
		hp_buf_printf(t->out, "bytes of the whole heap");
	if (o->pid != 0)
		hp_buf_printf(t->out, " of process %d", (int) o->pid);
	else
		hp_buf_printf(t->out, ", every process summed");
	utc(from, T_FULL, a, sizeof(a));
	utc(to, T_FULL, b, sizeof(b));
	if (nticks > 0)
		hp_buf_printf(t->out, ": %zu tick%s from %s to %s UTC", nticks, nticks == 1 ? "" : "s", a, b);
	else
		hp_buf_printf(t->out, ", %s to %s UTC", a, b);
	hp_buf_printf(t->out, "</text>\n");
}

static void
empty(timeline *t)
{
	head(t, EMPTY_HEIGHT, false, t->o->from, t->o->to, 0);
	hp_buf_printf(t->out, "<text id=\"empty\" x=\"%d\" y=\"100\" text-anchor=\"middle\" "
				  "style=\"font-size:15px;fill:#555\">No history in this window</text>\n</svg>\n",
				  WIDTH / 2);
}

/* Where things go: time and bytes to pixels. */
typedef struct scale
{
	double		t0,
				t1;				/* Unix microseconds at the plot's left and right */
	double		unit;			/* the bytes of a label's unit */
	double		lo,
				hi,
				step;			/* the bytes axis, in units */
} scale;

static double
x_of(const scale *s, double time)
{
	return PAD_LEFT + (time - s->t0) / (s->t1 - s->t0) * (WIDTH - PAD_LEFT - PAD_RIGHT);
}

static double
y_of(const scale *s, double bytes)
{
	return PLOT_BOTTOM - (bytes / s->unit - s->lo) / (s->hi - s->lo) * PLOT_H;
}

static void
axes(timeline *t, scale *s)
{
	static const double steps[] = {
		1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200,
		86400, 172800, 604800, 1209600
	};
	double		vmin = 0,
				vmax = 0,
				span,
				tstep = 0,
				first;
	int			decimals,
				k = 0;
	char		date[64] = "",
				prev[64] = "";

	for (size_t i = 0; i < t->nseries * t->npos; i++)
		if (t->has[i])
		{
			vmin = fmin(vmin, (double) t->value[i]);
			vmax = fmax(vmax, (double) t->value[i]);
		}
	hp_work(t->a->env, t->nseries * t->npos / 64 + 1);
	if (vmax <= vmin)
		vmax = vmin + 1024;
	s->unit = pow(1024, unit_of(fmax(fabs(vmin), fabs(vmax))));
	s->step = nice((vmax - vmin) / s->unit / 5);
	s->lo = floor(vmin / s->unit / s->step) * s->step;
	s->hi = ceil(vmax / s->unit / s->step) * s->step;
	if (!(s->hi > s->lo))
		s->hi = s->lo + s->step;
	decimals = s->step >= 1 ? 0 : (int) fmin(6, ceil(-log10(s->step) - 1e-9));

	s->t0 = (double) t->pos[t->first].time;
	s->t1 = (double) t->pos[t->end - 1].time;
	if (!(s->t1 - s->t0 >= 1))
	{
		/* one tick (or all at one time): a minute either side */
		s->t0 -= 60e6;
		s->t1 += 60e6;
	}

	hp_buf_printf(t->out, "<g class=\"axis\">\n");
	for (int i = 0; i <= 50; i++)
	{
		double		v = s->lo + i * s->step;
		double		y;

		if (v > s->hi + s->step * 1e-6)
			break;
		y = y_of(s, v * s->unit);
		hp_buf_printf(t->out, "<line class=\"grid\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>"
					  "<text class=\"y\" data-bytes=\"%.0f\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">"
					  "%.*f %s</text>\n", PAD_LEFT, WIDTH - PAD_RIGHT, y, y, v * s->unit,
					  PAD_LEFT - 6, y + 4, decimals, fabs(v) < s->step * 1e-6 ? 0.0 : v,
					  units[unit_of(s->unit)]);
	}

	span = (s->t1 - s->t0) / 1e6;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]) && tstep == 0; i++)
		if (span / steps[i] <= X_LABELS)
			tstep = steps[i];
	if (tstep == 0)
		tstep = nice(span / X_LABELS / 86400) * 86400;
	first = ceil(s->t0 / 1e6 / tstep) * tstep;
	for (int i = 0; i < 4 * X_LABELS; i++)
	{
		int64_t		at = usec_of(first + i * tstep);
		double		x;
		char		label[64];

		if ((double) at > s->t1)
			break;
		if ((double) at < s->t0)
			continue;
		x = x_of(s, (double) at);
		utc(at, tstep >= 86400 ? T_DATE : tstep >= 60 ? T_HM : T_HMS, label, sizeof(label));
		utc(at, T_DATE, date, sizeof(date));
		hp_buf_printf(t->out, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\"/>"
					  "<text class=\"x\" data-time=\"%lld\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">"
					  "%s</text>\n", x, x, PLOT_TOP, PLOT_BOTTOM, (long long) at, x, PLOT_BOTTOM + 16, label);
		/* the date under a time of day, where it changes */
		if (tstep < 86400 && (k == 0 || strcmp(date, prev) != 0))
			hp_buf_printf(t->out, "<text class=\"date\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
						  x, PLOT_BOTTOM + 30, date);
		memcpy(prev, date, sizeof(prev));
		k++;
	}
	hp_buf_printf(t->out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">UTC</text>\n",
				  WIDTH - PAD_RIGHT, PLOT_BOTTOM + 44);
	hp_buf_printf(t->out, "<rect class=\"frame\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n</g>\n",
				  PAD_LEFT, PLOT_TOP, WIDTH - PAD_LEFT - PAD_RIGHT, PLOT_H);
}

static void
draw_series(timeline *t, const scale *s, size_t k)
{
	const series *se = &t->series[k];
	const char *name = t->names[se->name].name;
	double		r = t->end - t->first > 300 ? 1.5 : 2.5;
	size_t		points = 0;
	bool		line = false;
	char		c[32];
	hp_buf		d;

	color(k, c, sizeof(c));
	hp_buf_init(&d, t->a);
	for (size_t p = t->first; p < t->end; p++)
		if (t->has[k * t->npos + p])
		{
			/* a line from the previous tick only when it has a point: a gap is no zero */
			bool		join = p > t->first && t->has[k * t->npos + p - 1];

			hp_buf_printf(&d, "%s%s%.1f %.1f", d.len ? " " : "", join ? "L" : "M",
						  x_of(s, (double) t->pos[p].time), y_of(s, (double) t->value[k * t->npos + p]));
			line |= join;
			points++;
		}
	hp_work(t->a->env, 1);
	hp_buf_printf(t->out, "<g class=\"series\" data-series=\"%zu\" data-name=\"", k);
	hp_sink_buf(t->out, HP_SINK_XML, name, NAME_MAX_BYTES);
	hp_buf_printf(t->out, "\" data-rate=\"%.0f\" data-grows=\"%d\" data-points=\"%zu\" fill=\"%s\">\n",
				  se->rate, se->grows ? 1 : 0, points, c);
	if (line)
		hp_buf_printf(t->out, "<path class=\"line\" fill=\"none\" stroke=\"%s\" d=\"%s\"/>\n", c, d.data);
	for (size_t p = t->first; p < t->end; p++)
	{
		int64_t		v = t->value[k * t->npos + p];
		char		when[64],
					amount[48];

		if (!t->has[k * t->npos + p])
			continue;
		hp_work(t->a->env, 1);
		utc(t->pos[p].time, T_FULL, when, sizeof(when));
		human((double) v, amount, sizeof(amount));
		hp_buf_printf(t->out, "<circle class=\"pt\" data-series=\"%zu\" data-time=\"%lld\" data-bytes=\"%lld\" "
					  "cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\"><title>", k, (long long) t->pos[p].time,
					  (long long) v, x_of(s, (double) t->pos[p].time), y_of(s, (double) v), r);
		hp_sink_buf(t->out, HP_SINK_XML, name, TITLE_MAX);
		hp_buf_printf(t->out, "  %s  %s</title></circle>\n", when, amount);
	}
	hp_buf_printf(t->out, "</g>\n");
}

static void
legend(timeline *t, size_t k)
{
	const series *se = &t->series[k];
	const char *name = t->names[se->name].name;
	int			y = LEGEND_TOP + (int) k * LEGEND_ROW;
	char		c[32],
				rate[64];

	hp_work(t->a->env, 1);
	color(k, c, sizeof(c));
	rate_text(se->rate, rate, sizeof(rate));
	hp_buf_printf(t->out, "<g class=\"legend\" data-series=\"%zu\" data-grows=\"%d\">"
				  "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/><text x=\"%d\" y=\"%d\">",
				  k, se->grows ? 1 : 0, PAD_LEFT, y - 10, c, PAD_LEFT + 18, y);
	hp_sink_buf(t->out, HP_SINK_XML, name, LEGEND_MAX);
	if (strlen(name) > LEGEND_MAX)
		hp_buf_printf(t->out, "...");
	hp_buf_printf(t->out, "<tspan class=\"rate\" style=\"fill:#555\">  %s%s</tspan></text></g>\n",
				  rate, se->grows ? "" : " (no steady growth)");
}

void
hp_render_timeline(hp_arena *a, const hp_hist_tick *ticks, size_t n, const hp_timeline_options *o,
				   hp_buf *out)
{
	timeline	t = {.a = a, .ticks = ticks, .nticks = n, .o = o, .out = out};
	size_t		want = o->series == 0 ? DEFAULT_SERIES : o->series < MAX_SERIES ? o->series : MAX_SERIES;
	scale		s;
	int			height;

	/* the window's ticks, by time */
	t.pos = hp_alloc(a, (n ? n : 1) * sizeof(at));
	hp_work(a->env, n + 1);
	for (size_t i = 0; i < n; i++)
		if (ticks[i].time >= o->from && ticks[i].time <= o->to)
			t.pos[t.npos++] = (at) {ticks[i].time, i};
	qsort(t.pos, t.npos, sizeof(at), at_cmp);
	hp_map_init(&t.map, a);
	if (o->kind >= 0 && o->kind < HP_HIST_KINDS)
		each_row(&t, true, count_name);
	if (t.last_data == 0)
	{
		empty(&t);
		return;
	}

	choose_series(&t, want);
	t.value = hp_alloc(a, t.nseries * t.npos * sizeof(int64_t));
	t.has = hp_alloc(a, t.nseries * t.npos * sizeof(bool));
	each_row(&t, false, count_value);
	t.first = t.npos;
	t.end = 0;
	hp_work(a->env, t.nseries * t.npos / 64 + 1);
	for (size_t i = 0; i < t.nseries * t.npos; i++)
		if (t.has[i])
		{
			size_t		p = i % t.npos;

			t.first = p < t.first ? p : t.first;
			t.end = p + 1 > t.end ? p + 1 : t.end;
		}
	if (t.first >= t.end)
	{
		empty(&t);
		return;
	}

	height = LEGEND_TOP + (int) t.nseries * LEGEND_ROW + 24;
	head(&t, height, true, t.pos[t.first].time, t.pos[t.end - 1].time, t.end - t.first);
	hp_buf_printf(out, "<text class=\"b\" x=\"%d\" y=\"24\" text-anchor=\"end\" onclick=\"search()\">"
				  "Search</text>\n", WIDTH - PAD_RIGHT);
	axes(&t, &s);
	/* the fastest on top */
	for (size_t k = t.nseries; k-- > 0;)
		draw_series(&t, &s, k);
	for (size_t k = 0; k < t.nseries; k++)
		legend(&t, k);
	hp_buf_printf(out, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", PAD_LEFT, height - 10);
	hp_buf_printf(out, "<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> </text>\n",
				  WIDTH - PAD_RIGHT, height - 10);
	hp_buf_printf(out, "</svg>\n");
}
