/*
 * test_timeline.c -- the heap history's timeline SVG (render_timeline.c).
 *
 * A small fixed history (two processes, ten ticks 10 s apart, ticks before
 * and after the window) draws as testdata/timeline.svg: two names that grow
 * (hp_growth's suspects, fastest first, rates in the legend), then a name
 * with every markup character, bytes that are not UTF-8 and a control byte,
 * which does not grow but holds the most bytes at the last tick (a gap at
 * one tick).  The output is well-formed XML (xmllint, when installed) and
 * valid UTF-8; every point's data-bytes is the sum of its name's rows at
 * its tick (one process's with a pid); a tick without the row is a gap,
 * not a zero; an empty window says so; extreme values and times stay
 * well-formed; the work is counted (an interrupt gets in).
 */
#include "test.h"
#include "engine/history.h"
#include "engine/sink.h"

#include <math.h>
#include <unistd.h>

#define T0 INT64_C(1795773600000000)	/* 2026-11-27 10:00:00 UTC, microseconds */
#define STEP INT64_C(10000000)	/* 10 s */
#define NTICKS 12				/* one before the window, ten in it, one after */
#define WEIRD "we<&\"'ird\xff\x01name"
#define WEIRD_XML "we&lt;&amp;&quot;&apos;ird?name"
#define GAP 5					/* the window's tick where WEIRD has no row */

static hp_hist_tick ticks[NTICKS];

static void
add_row(hp_arena *a, hp_hist_proc *p, hp_hist_kind kind, const char *name, int64_t bytes)
{
	hp_hist_row *rows = hp_alloc(a, (p->nrows + 1) * sizeof(hp_hist_row));

	if (p->nrows)
		memcpy(rows, p->rows, p->nrows * sizeof(hp_hist_row));
	rows[p->nrows++] = (hp_hist_row) {kind, name, bytes, -1};
	p->rows = rows;
}

/*
 * Tick k (0..NTICKS-1) at T0 + (k - 1) * STEP: the window is ticks 1..10,
 * position i = k - 1.  Process 101: leaky_alloc grows 100 kB a tick, 4 MB of
 * WEIRD, "(the rest)" and "small"; process 202: leaky_alloc flat at 500 kB,
 * cache_fill grows 20 kB a tick, 1 MB of WEIRD.  Outside the window,
 * everything is huge.
 */
static void
build(hp_arena *a)
{
	for (int k = 0; k < NTICKS; k++)
	{
		hp_hist_tick *t = &ticks[k];
		int64_t		i = k - 1;
		bool		out = k == 0 || k == NTICKS - 1;
		int64_t		big = out ? INT64_C(1) << 40 : 0;

		t->time = T0 + i * STEP;
		t->interval = STEP;
		t->nprocs = 2;
		t->procs = hp_alloc(a, 2 * sizeof(hp_hist_proc));
		t->procs[0] = (hp_hist_proc) {.pid = 101, .start = T0 - 3600 * INT64_C(1000000), .backend_type = "client backend"};
		t->procs[1] = (hp_hist_proc) {.pid = 202, .start = T0 - 7200 * INT64_C(1000000), .backend_type = "client backend"};
		add_row(a, &t->procs[0], HP_HIST_TOTAL, "heap", 9000000 + 100000 * i + big);
		add_row(a, &t->procs[0], HP_HIST_FUNCTION, "leaky_alloc", 1000000 + 100000 * i + big);
		if (i != GAP)
			add_row(a, &t->procs[0], HP_HIST_FUNCTION, WEIRD, 4000000 + big);
		add_row(a, &t->procs[0], HP_HIST_FUNCTION, HP_HIST_REST, 300000 + big);
		add_row(a, &t->procs[0], HP_HIST_FUNCTION, "small", 1000 + big);
		add_row(a, &t->procs[0], HP_HIST_CONTEXT, "TopMemoryContext", 7000000 + big);
		add_row(a, &t->procs[1], HP_HIST_TOTAL, "heap", 3000000 + 20000 * i + big);
		add_row(a, &t->procs[1], HP_HIST_FUNCTION, "leaky_alloc", 500000 + big);
		add_row(a, &t->procs[1], HP_HIST_FUNCTION, "cache_fill", 2000000 + 20000 * i + big);
		if (i != GAP)
			add_row(a, &t->procs[1], HP_HIST_FUNCTION, WEIRD, 1000000 + big);
	}
}

static hp_timeline_options
window(void)
{
	return (hp_timeline_options) {
		.from = T0, .to = T0 + 9 * STEP, .pid = 0, .kind = HP_HIST_FUNCTION, .series = 3,
		.title = "Heap <&> \"growth\" \xff\x02 of 'a'"
	};
}

static char *
render(hp_arena *a, const hp_hist_tick *t, size_t n, const hp_timeline_options *o, size_t *len)
{
	hp_buf		out;

	hp_buf_init(&out, a);
	hp_render_timeline(a, t, n, o, &out);
	*len = out.len;
	return out.data;
}

static size_t
count(const char *s, const char *what)
{
	size_t		n = 0;

	while ((s = strstr(s, what)) != NULL)
		n++, s++;
	return n;
}

static bool
valid_utf8(const unsigned char *s, size_t len)
{
	for (size_t i = 0; i < len;)
	{
		size_t		n = s[i] < 0x80 ? 1 : (s[i] & 0xe0) == 0xc0 ? 2 : (s[i] & 0xf0) == 0xe0 ? 3 :
			(s[i] & 0xf8) == 0xf0 ? 4 : 0;
		uint32_t	c = n == 1 ? s[i] : n == 2 ? s[i] & 0x1f : n == 3 ? s[i] & 0x0f : s[i] & 0x07;

		if (n == 0 || i + n > len)
			return false;
		for (size_t k = 1; k < n; k++)
		{
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			c = (c << 6) | (s[i + k] & 0x3f);
		}
		if ((n == 2 && c < 0x80) || (n == 3 && c < 0x800) || (n == 4 && c < 0x10000) ||
			c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff) || (c < 0x20 && c != '\n' && c != '\t' && c != '\r'))
			return false;
		i += n;
	}
	return true;
}

/* xmllint --noout on the text: ok, FAIL, or ok and skipped without xmllint. */
static void
xml_check(const char *name, const char *text, size_t len)
{
	char		path[] = "/tmp/hp_timeline_XXXXXX";
	char		cmd[256];
	int			fd, rc;

	if (access("/usr/bin/xmllint", X_OK) != 0)
	{
		printf("ok %s # skipped: no /usr/bin/xmllint\n", name);
		t_passed++;
		return;
	}
	fd = mkstemp(path);
	if (fd < 0 || write(fd, text, len) != (ssize_t) len)
	{
		t_fail(name, "could not write %s", path);
		if (fd >= 0)
			close(fd);
		return;
	}
	close(fd);
	snprintf(cmd, sizeof(cmd), "/usr/bin/xmllint --noout %s", path);
	rc = system(cmd);
	unlink(path);
	T_CHECK(name, rc == 0, "xmllint exit status %d", rc);
}

/* ---- the SVG read back ---- */

#define MAXS 64

typedef struct drawn
{
	size_t		nseries;
	char		names[MAXS][256];	/* data-name, as escaped */
	double		rate[MAXS];
	int			grows[MAXS];
	long		points[MAXS];	/* data-points */
	long		circles[MAXS];
	char		path[MAXS][4096];	/* d of the series' line, "" without one */
	size_t		npts;
	struct
	{
		long		series;
		long long	time;
		long long	bytes;
	}			pts[2048];
} drawn;

/* the value of attribute attr in the tag at p (up to its '>') into buf */
static bool
attr(const char *p, const char *attr, char *buf, size_t len)
{
	const char *end = strchr(p, '>');
	char		key[64];
	const char *v;
	size_t		n;

	snprintf(key, sizeof(key), " %s=\"", attr);
	v = strstr(p, key);
	if (v == NULL || end == NULL || v > end)
		return false;
	v += strlen(key);
	n = strcspn(v, "\"");
	if (n >= len)
		n = len - 1;
	memcpy(buf, v, n);
	buf[n] = '\0';
	return true;
}

static bool
parse(const char *svg, drawn *d)
{
	char		v[4096];

	memset(d, 0, sizeof(*d));
	for (const char *p = svg; (p = strstr(p, "<g class=\"series\"")) != NULL; p++)
	{
		long		k;
		const char *close = strstr(p, "</g>");
		const char *path = strstr(p, "<path ");

		if (!attr(p, "data-series", v, sizeof(v)) || (k = atol(v)) < 0 || k >= MAXS || close == NULL)
			return false;
		d->nseries++;
		attr(p, "data-name", d->names[k], sizeof(d->names[k]));
		attr(p, "data-rate", v, sizeof(v));
		d->rate[k] = atof(v);
		attr(p, "data-grows", v, sizeof(v));
		d->grows[k] = atoi(v);
		attr(p, "data-points", v, sizeof(v));
		d->points[k] = atol(v);
		if (path && path < close)
			attr(path, "d", d->path[k], sizeof(d->path[k]));
	}
	for (const char *p = svg; (p = strstr(p, "<circle class=\"pt\"")) != NULL; p++)
	{
		if (d->npts == sizeof(d->pts) / sizeof(d->pts[0]))
			return false;
		if (!attr(p, "data-series", v, sizeof(v)))
			return false;
		d->pts[d->npts].series = atol(v);
		if (!attr(p, "data-time", v, sizeof(v)))
			return false;
		d->pts[d->npts].time = atoll(v);
		if (!attr(p, "data-bytes", v, sizeof(v)))
			return false;
		d->pts[d->npts].bytes = atoll(v);
		if (d->pts[d->npts].series < 0 || d->pts[d->npts].series >= (long) d->nseries)
			return false;
		d->circles[d->pts[d->npts].series]++;
		d->npts++;
	}
	return true;
}

/*
 * The sum of the rows named xml (as the XML sink writes it) of kind at the
 * tick at time, over its processes (pid's only, if not 0); *present: some
 * process had the row.
 */
static long long
expected(const hp_hist_tick *t, size_t n, int32_t pid, hp_hist_kind kind, const char *xml,
		 long long time, bool *present)
{
	long long	sum = 0;

	*present = false;
	for (size_t k = 0; k < n; k++)
		for (size_t p = 0; p < t[k].nprocs && t[k].time == time; p++)
			for (size_t r = 0; r < t[k].procs[p].nrows; r++)
			{
				const hp_hist_row *row = &t[k].procs[p].rows[r];
				char		e[1024];

				hp_sink_str(HP_SINK_XML, row->name, strlen(row->name), e, sizeof(e));
				if ((pid == 0 || t[k].procs[p].pid == pid) && row->kind == kind && strcmp(e, xml) == 0)
				{
					sum += row->bytes;
					*present = true;
				}
			}
	return sum;
}

/*
 * Every point's data-bytes is its sum, and every series has a point at
 * every tick of the window where its name has a row, and none elsewhere.
 */
static void
check_values(const char *what, const drawn *d, const hp_timeline_options *o)
{
	char		name[200];
	size_t		bad = 0, missing = 0;

	for (size_t i = 0; i < d->npts; i++)
	{
		bool		present;
		long long	want = expected(ticks, NTICKS, o->pid, o->kind, d->names[d->pts[i].series],
									d->pts[i].time, &present);

		if (!present || want != d->pts[i].bytes || d->pts[i].time < o->from || d->pts[i].time > o->to)
		{
			if (bad++ == 0)
				printf("# %s: series %ld at %lld: %lld, want %lld%s\n", what, d->pts[i].series,
					   d->pts[i].time, d->pts[i].bytes, want, present ? "" : " (no row)");
		}
	}
	snprintf(name, sizeof(name), "timeline %s: data-bytes are the sums of the rows", what);
	T_CHECK(name, bad == 0 && d->npts > 0, "%zu of %zu points wrong", bad, d->npts);
	for (size_t s = 0; s < d->nseries; s++)
	{
		long		want = 0;

		for (size_t k = 0; k < NTICKS; k++)
		{
			bool		present;

			if (ticks[k].time >= o->from && ticks[k].time <= o->to)
			{
				expected(ticks, NTICKS, o->pid, o->kind, d->names[s], ticks[k].time, &present);
				want += present;
			}
		}
		if (want != d->circles[s] || want != d->points[s])
		{
			if (missing++ == 0)
				printf("# %s: series %zu has %ld points (data-points %ld), its name %ld ticks\n",
					   what, s, d->circles[s], d->points[s], want);
		}
	}
	snprintf(name, sizeof(name), "timeline %s: a point at every tick with the row, none elsewhere", what);
	T_CHECK(name, missing == 0, "%zu series differ", missing);
}

/* the number of "M" (line starts) in a path */
static size_t
moves(const char *d)
{
	return count(d, "M");
}

static void
golden(hp_arena *a)
{
	hp_timeline_options o = window();
	size_t		len;
	char	   *svg = render(a, ticks, NTICKS, &o, &len);
	drawn	   *d = malloc(sizeof(drawn));

	t_golden("timeline golden", "timeline.svg", svg, len);
	xml_check("timeline is well-formed XML (xmllint)", svg, len);
	T_CHECK("timeline is valid UTF-8", valid_utf8((const unsigned char *) svg, len), "invalid UTF-8");
	T_CHECK("timeline escapes the title", strstr(svg, ">Heap &lt;&amp;&gt; &quot;growth&quot; ? of &apos;a&apos;</text>") != NULL,
			"title not escaped");
	T_CHECK("timeline escapes names, drops controls, replaces bytes that are not UTF-8",
			count(svg, "data-name=\"" WEIRD_XML "\"") == 1 && count(svg, "<title>" WEIRD_XML "  ") == 9 &&
			count(svg, ">" WEIRD_XML "<tspan") == 1 && strstr(svg, "\x01") == NULL && strstr(svg, "ird<") == NULL,
			"weird name");
	T_CHECK("timeline has no external reference", strstr(svg, "href") == NULL && strstr(svg, "http://") ==
			strstr(svg, "http://www.w3.org/2000/svg") && count(svg, "http") == 1 && strstr(svg, "@import") == NULL &&
			strstr(svg, "url(") == NULL, "something from outside");
	if (!parse(svg, d))
	{
		t_fail("timeline parses", "attributes missing");
		free(d);
		return;
	}
	T_CHECK("timeline draws the growers fastest first, then the most bytes at the end",
			d->nseries == 3 && strcmp(d->names[0], "leaky_alloc") == 0 && d->grows[0] == 1 &&
			strcmp(d->names[1], "cache_fill") == 0 && d->grows[1] == 1 &&
			strcmp(d->names[2], WEIRD_XML) == 0 && d->grows[2] == 0 && d->rate[2] == 0 &&
			strstr(svg, "data-name=\"small\"") == NULL && strstr(svg, "data-name=\"heap\"") == NULL &&
			strstr(svg, "TopMemoryContext") == NULL,
			"%zu series: %s, %s, %s", d->nseries, d->names[0], d->names[1], d->names[2]);
	/* 100 kB per 10 s is 36 MB an hour, 20 kB 7.2 MB */
	T_CHECK("timeline tells each series' rate", fabs(d->rate[0] - 36e6) < 1 && fabs(d->rate[1] - 7.2e6) < 1 &&
			strstr(svg, "leaky_alloc<tspan class=\"rate\" style=\"fill:#555\">  +34.3 MB/h</tspan>") != NULL &&
			strstr(svg, "cache_fill<tspan class=\"rate\" style=\"fill:#555\">  +6.9 MB/h</tspan>") != NULL &&
			strstr(svg, "  0 B/h (no steady growth)</tspan>") != NULL, "rates %.0f %.0f", d->rate[0], d->rate[1]);
	check_values("every process", d, &o);
	T_CHECK("timeline leaves out ticks outside the window",
			d->npts == 10 + 10 + 9 && strstr(svg, "data-bytes=\"10995") == NULL, "%zu points", d->npts);
	T_CHECK("timeline: a tick without the row is a gap, not 0",
			d->circles[2] == 9 && moves(d->path[2]) == 2 && moves(d->path[0]) == 1 &&
			count(d->path[2], "L") == 7 && count(d->path[0], "L") == 9,
			"%ld points, path %s", d->circles[2], d->path[2]);
	T_CHECK("timeline point titles: name, UTC time, value",
			strstr(svg, "<title>leaky_alloc  2026-11-27 10:01:30  2.3 MB</title>") != NULL &&
			strstr(svg, "data-series=\"0\" data-time=\"1795773690000000\" data-bytes=\"2400000\"") != NULL,
			"no such title");
	T_CHECK("timeline labels the axes", strstr(svg, ">10:00:00</text>") != NULL &&
			strstr(svg, ">2026-11-27</text>") != NULL && strstr(svg, " MB</text>") != NULL &&
			strstr(svg, ">0 MB</text>") != NULL, "labels");
	T_CHECK("timeline has a search and highlighting script in CDATA", count(svg, "<![CDATA[") == 1 &&
			strstr(svg, "function find(term)") && strstr(svg, "onload=\"init()\""), "no script");
	free(d);
}

static void
pid_filter(hp_arena *a)
{
	hp_timeline_options o = window();
	size_t		len;
	char	   *svg;
	drawn	   *d = malloc(sizeof(drawn));

	o.pid = 202;
	o.series = 4;
	svg = render(a, ticks, NTICKS, &o, &len);
	xml_check("timeline of one process is well-formed XML", svg, len);
	if (!parse(svg, d))
	{
		t_fail("timeline of one process parses", "attributes missing");
		free(d);
		return;
	}
	/* in 202 only cache_fill grows; then WEIRD 1 MB, leaky_alloc 500 kB */
	T_CHECK("timeline of one process draws its growers and names",
			d->nseries == 3 && strcmp(d->names[0], "cache_fill") == 0 && d->grows[0] &&
			strcmp(d->names[1], WEIRD_XML) == 0 && !d->grows[1] &&
			strcmp(d->names[2], "leaky_alloc") == 0 && !d->grows[2] &&
			strstr(svg, "of process 202:") != NULL,
			"%zu series: %s, %s, %s", d->nseries, d->names[0], d->names[1], d->names[2]);
	check_values("pid 202", d, &o);
	o.pid = 999;
	svg = render(a, ticks, NTICKS, &o, &len);
	T_CHECK("timeline of a process not in the window is empty",
			strstr(svg, "No history in this window") != NULL && strstr(svg, "<circle") == NULL, "not empty");
	free(d);
}

static void
empty_window(hp_arena *a)
{
	hp_timeline_options o = window();
	size_t		len;
	char	   *svg;

	o.from = T0 + 100 * STEP;
	o.to = T0 + 200 * STEP;
	svg = render(a, ticks, NTICKS, &o, &len);
	T_CHECK("timeline of an empty window says so", strstr(svg, ">No history in this window</text>") != NULL &&
			strstr(svg, "<circle") == NULL && strstr(svg, "<script") == NULL, "%s", svg);
	xml_check("timeline of an empty window is well-formed XML", svg, len);
	t_golden("timeline empty golden", "timeline_empty.svg", svg, len);
	svg = render(a, NULL, 0, &o, &len);
	T_CHECK("timeline of no ticks says so", strstr(svg, "No history in this window") != NULL, "%s", svg);
	o = window();
	o.kind = HP_HIST_QUERY;
	svg = render(a, ticks, NTICKS, &o, &len);
	T_CHECK("timeline of a kind without rows says so", strstr(svg, "No history in this window") != NULL &&
			strstr(svg, "bytes by statement") != NULL, "%s", svg);
	o = window();
	o.from = o.to + 1;
	svg = render(a, ticks, NTICKS, &o, &len);
	T_CHECK("timeline of a window ending before it starts says so",
			strstr(svg, "No history in this window") != NULL, "not empty");
}

static void
fill_up(hp_arena *a)
{
	hp_timeline_options o = window();
	size_t		len;
	char	   *svg;
	drawn	   *d = malloc(sizeof(drawn));

	o.series = 5;
	svg = render(a, ticks, NTICKS, &o, &len);
	T_CHECK("timeline fills up with the most bytes at the last tick",
			parse(svg, d) && d->nseries == 5 && strcmp(d->names[3], HP_HIST_REST) == 0 &&
			strcmp(d->names[4], "small") == 0 && !d->grows[3] && !d->grows[4],
			"%zu series", d->nseries);
	o.series = 1;
	svg = render(a, ticks, NTICKS, &o, &len);
	T_CHECK("timeline draws at most o->series", parse(svg, d) && d->nseries == 1 &&
			strcmp(d->names[0], "leaky_alloc") == 0, "%zu series", d->nseries);
	o.kind = HP_HIST_TOTAL;
	o.series = 10;
	svg = render(a, ticks, NTICKS, &o, &len);
	T_CHECK("timeline of the total sums the processes' heaps", parse(svg, d) && d->nseries == 1 &&
			strcmp(d->names[0], "heap") == 0 && strstr(svg, "bytes of the whole heap") != NULL, "%zu series",
			d->nseries);
	check_values("total", d, &o);
	free(d);
}

/* Values at the ends of int64_t, times far apart, one tick: still well-formed, no overflow. */
static void
extremes(hp_arena *a)
{
	hp_hist_tick t[3];
	hp_timeline_options o = {INT64_MIN, INT64_MAX, 0, HP_HIST_CONTEXT, 3, NULL};
	size_t		len;
	char	   *svg;

	memset(t, 0, sizeof(t));
	for (int k = 0; k < 3; k++)
	{
		t[k].time = k == 0 ? INT64_MIN : k == 1 ? 0 : INT64_MAX;
		t[k].nprocs = 2;
		t[k].procs = hp_alloc(a, 2 * sizeof(hp_hist_proc));
		for (int p = 0; p < 2; p++)
		{
			t[k].procs[p].pid = 1 + p;
			add_row(a, &t[k].procs[p], HP_HIST_CONTEXT, "max", INT64_MAX);
			add_row(a, &t[k].procs[p], HP_HIST_CONTEXT, "min", INT64_MIN);
			add_row(a, &t[k].procs[p], HP_HIST_CONTEXT, "", 0);
		}
	}
	svg = render(a, t, 3, &o, &len);
	xml_check("timeline of extreme values is well-formed XML", svg, len);
	T_CHECK("timeline holds sums at the ends of int64_t",
			strstr(svg, "data-bytes=\"9223372036854775807\"") != NULL &&
			strstr(svg, "data-bytes=\"-9223372036854775808\"") != NULL &&
			strstr(svg, "nan") == NULL && strstr(svg, "inf") == NULL, "sums");
	svg = render(a, t + 1, 1, &o, &len);
	xml_check("timeline of one tick is well-formed XML", svg, len);
	T_CHECK("timeline of one tick draws its points", count(svg, "<circle") == 3 && strstr(svg, "nan") == NULL,
			"%zu points", count(svg, "<circle"));
}

typedef struct big_arg
{
	hp_arena   *a;
	const hp_hist_tick *t;
	size_t		n;
} big_arg;

static void
big_render(void *arg)
{
	big_arg    *b = arg;
	hp_timeline_options o = {0, INT64_MAX, 0, HP_HIST_FUNCTION, 10, "big"};
	size_t		len;

	render(b->a, b->t, b->n, &o, &len);
}

/* 100 ticks of 1000 rows: the work is counted, an interrupt gets in, nothing leaks. */
static void
work(void)
{
	t_env		env;
	hp_arena	a;
	hp_hist_tick *t;
	big_arg		b;
	int			rc;

	t_env_init(&env);
	hp_arena_init(&a, &env.env);
	t = hp_alloc(&a, 100 * sizeof(hp_hist_tick));
	for (int k = 0; k < 100; k++)
	{
		t[k].time = T0 + k * STEP;
		t[k].nprocs = 1;
		t[k].procs = hp_alloc(&a, sizeof(hp_hist_proc));
		t[k].procs[0].pid = 7;
		t[k].procs[0].rows = hp_alloc(&a, 1000 * sizeof(hp_hist_row));
		t[k].procs[0].nrows = 1000;
		for (int r = 0; r < 1000; r++)
		{
			char	   *name = hp_alloc(&a, 16);

			snprintf(name, 16, "f%d", r);
			t[k].procs[0].rows[r] = (hp_hist_row) {HP_HIST_FUNCTION, name, 1000 * r + (r % 3 == 0 ? k * 10 : 0), -1};
		}
	}
	b = (big_arg) {&a, t, 100};
	env.jump_at_interrupt = 1;
	rc = t_run(&env, big_render, &b);
	T_CHECK("timeline counts its work (an interrupt gets in)", rc == 2, "t_run returned %d", rc);
	env.jump_at_interrupt = 0;
	env.interrupts = 0;
	rc = t_run(&env, big_render, &b);
	T_CHECK("timeline of 100 ticks of 1000 rows", rc == 0 && env.interrupts > 0, "rc %d, %ld interrupts", rc,
			env.interrupts);
	hp_arena_free(&a);
	T_CHECK("timeline frees everything with its arena", env.allocs == 0, "%ld blocks left", env.allocs);
}

int
main(void)
{
	t_env		env;
	hp_arena	a;

	t_env_init(&env);
	hp_arena_init(&a, &env.env);
	build(&a);
	golden(&a);
	pid_filter(&a);
	empty_window(&a);
	fill_up(&a);
	extremes(&a);
	hp_arena_free(&a);
	work();
	return t_exit();
}
