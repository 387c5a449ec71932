/*
 * fleet.c -- what pg_heapprof asks its servers, each in a thread of its own.
 *
 * One server or several (a primary and its standbys), a fleet of one or
 * more: each server is contacted by its own thread with a connect timeout,
 * so one that is down delays nobody (one server is asked from the main
 * thread).  A thread only talks to its server and keeps what it answered
 * in its server and targets; everything is printed and written by the main
 * thread afterwards (output.c).  The chosen processes are the one of
 * --pid, the stored profile of --stored, or every process of --backend-type
 * (never a pg_heapprof session: this one, or another reading the same
 * server meanwhile), and each operation -- enable, disable, report, leak,
 * the stacks of a merge -- is asked of each of them the same way.  The heap
 * history the server keeps is asked of the server itself: --growth's
 * suspects, --timeline's SVG.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/sink.h"
#include "pg_heapprof.h"

/* The report's arguments, as named parameters $1.. of every report function. */
#define REPORT_ARGS "pid => $1::int, fold => $2::bool, objects => $3::bool, " \
	"focus => $4, ignore => $5, base => $6, @stored => $7, peak => $8::boolean, " \
	"seconds => $9::double precision"

/* The processes of the types $1 and $2 ("all" or comma lists), or with $1 NULL every process. */
#define LIST_SQL "SELECT pid, backend_type, coalesce(usename, ''), application_name, coalesce(state, ''), " \
	"CASE active WHEN true THEN 'on' WHEN false THEN 'off' ELSE '' END, " \
	"coalesce(pg_catalog.pg_size_pretty(allocated_bytes), ''), " \
	"coalesce(pg_catalog.to_char(sampling_since, 'YYYY-MM-DD HH24:MI:SS'), '') FROM @x.heapprof_backends() " \
	"WHERE $1::text IS NULL OR ($1 OPERATOR(pg_catalog.=) 'all' " \
	"OR backend_type OPERATOR(pg_catalog.=) ANY (pg_catalog.string_to_array($1, ',')) " \
	"OR backend_type OPERATOR(pg_catalog.=) ANY (pg_catalog.string_to_array($2, ','))) " \
	"AND pid OPERATOR(pg_catalog.<>) pg_catalog.pg_backend_pid() " \
	"AND coalesce(application_name, '') OPERATOR(pg_catalog.<>) 'pg_heapprof' " \
	"ORDER BY pid"

/*
 * One row per frame (stack number, bytes, objects, frame; a stack without
 * frames has one NULL frame).  Grouped by query or context ($7), the stack
 * gets a root frame named as the server's own grouped reports name it.
 */
#define STACKS_SQL "SELECT s.n, s.bytes, s.objects, f.name FROM (SELECT pg_catalog.row_number() OVER () AS n, " \
	"t.bytes, t.objects, t.frames FROM @x.heapprof_stacks(focus => $3, ignore => $4, fold => $2::bool, " \
	"pid => $1::int, peak => $5::boolean, seconds => $6::double precision) t) s " \
	"LEFT JOIN LATERAL pg_catalog.unnest(s.frames) WITH ORDINALITY AS f(name, i) " \
	"ON true ORDER BY s.n, f.i"
#define STACKS_GROUPED_SQL "SELECT s.n, s.bytes, s.objects, f.name FROM (SELECT pg_catalog.row_number() OVER () AS n, " \
	"t.bytes, t.objects, t.frames OPERATOR(pg_catalog.||) CASE $7::pg_catalog.text WHEN 'query' " \
	"THEN pg_catalog.concat('query ', coalesce(t.queryid::pg_catalog.text, '(none)')) " \
	"ELSE pg_catalog.concat('context ', coalesce(t.context, '(none)')) END AS frames " \
	"FROM @x.heapprof_stacks(focus => $3, ignore => $4, fold => $2::bool, " \
	"pid => $1::int, peak => $5::boolean, seconds => $6::double precision) t) s " \
	"LEFT JOIN LATERAL pg_catalog.unnest(s.frames) WITH ORDINALITY AS f(name, i) " \
	"ON true ORDER BY s.n, f.i"

/*
 * One row per statement capture: the query's first line, at most 80
 * characters ("..." where cut).
 */
#define CAPTURES_SQL "SELECT c.name, c.pid, coalesce(c.usename, ''), coalesce(c.datname, ''), " \
	"coalesce(c.queryid::text, ''), pg_catalog.pg_size_pretty(c.growth_bytes), " \
	"pg_catalog.to_char(c.captured_at, 'YYYY-MM-DD HH24:MI:SS'), " \
	"CASE WHEN l.more OR pg_catalog.length(l.line) OPERATOR(pg_catalog.>) 80 " \
	"THEN pg_catalog.concat(pg_catalog.\"left\"(l.line, 77), '...') ELSE l.line END " \
	"FROM @x.heapprof_captures() c, LATERAL (SELECT pg_catalog.split_part(t.q, E'\\n', 1) AS line, " \
	"pg_catalog.strpos(t.q, E'\\n') OPERATOR(pg_catalog.>) 0 AS more " \
	"FROM pg_catalog.btrim(coalesce(c.query, ''), E' \\t\\r\\n') AS t(q)) l " \
	"ORDER BY c.captured_at, c.name"

/*
 * --growth: the leak suspects of the heap history (in the columns G_*);
 * times as Unix seconds, which the client shows in its own time zone, so
 * that servers in several zones compare.
 */
#define GROWTH_SQL "SELECT kind, name, bytes_per_hour, outside_contexts, outside_bytes_per_hour, steadiness, " \
	"pg_catalog.date_part('epoch', growing_since), bytes, processes, pid, " \
	"pg_catalog.date_part('epoch', backend_start) " \
	"FROM @x.heapprof_growth(since => $1::interval, per_process => $2::boolean, " \
	"min_rate => pg_catalog.pg_size_bytes($3), kinds => $4)"

/* --timeline: the SVG */
#define TIMELINE_SQL "SELECT @x.heapprof_dump_timeline(since => $1::interval, pid => $2::int, kind => $3, " \
	"series => $4::int)"

/* --setup: names_hint is read through to_jsonb so that a 1.0 database answers too */
#define SETUP_SQL "SELECT h.hint, pg_catalog.to_jsonb(h) OPERATOR(pg_catalog.->>) 'names_hint' " \
	"FROM @x.heapprof_status() h"

/* The servers whose allocation windows Ctrl-C cancels (PQcancel is safe here). */
static fleet *cancel_fleet;

static void
on_signal(int sig)
{
	interrupted = sig;
	for (int i = 0; cancel_fleet && i < cancel_fleet->n; i++)
	{
		PGcancel   *c = cancel_fleet->sv[i].cancel;
		char		err[256];

		if (c)
			(void) PQcancel(c, err, sizeof(err));
	}
}

/* The query of a report in format; its number of parameters. */
static int
report_sql(const cli_opts *o, char *sql, size_t size)
{
	const char *format = o->format;

	if (o->client_symbols)
	{
		snprintf(sql, size, "SELECT @x.heapprof_dump_portable(pid => $1::int)");
		return 1;
	}
	if ((strcmp(format, "svg") == 0 && o->svg_dot) || strcmp(format, "dot") == 0 ||
		strcmp(format, "collapsed") == 0 || strcmp(format, "text") == 0)
		snprintf(sql, size, "SELECT * FROM @x.heapprof_dump_%s(%s)",
				 strcmp(format, "svg") == 0 ? "dot" : format, REPORT_ARGS);
	else if (strcmp(format, "svg") == 0 || strcmp(format, "flamegraph") == 0)
		snprintf(sql, size, "SELECT @x.heapprof_dump_flamegraph(%s)", REPORT_ARGS);
	else if (strcmp(format, "pprof") == 0)
		snprintf(sql, size, "SELECT @x.heapprof_dump_pprof(%s)", REPORT_ARGS);
	else if (strcmp(format, "raw") == 0)
	{
		snprintf(sql, size, "SELECT @x.heapprof_dump_raw(pid => $1::int)");
		return 1;
	}
	else
		snprintf(sql, size,
				 "SELECT rank, flat_bytes, flat_pct, cum_bytes, cum_pct, function FROM @x.heapprof_top(30, %s)",
				 REPORT_ARGS);
	return 9;
}

/* query(), or for an allocation window ask_window() */
static PGresult *
ask(server *s, problem *pr, const char *sql, int nparams, const char *const *values, int binary)
{
	if (s->o->window)
		return ask_window(s, pr, sql, nparams, values, binary);
	return query(s, pr, sql, nparams, values, binary);
}

/* A report of t (v: its report arguments) into t->res. */
static void
report(server *s, target *t, const char *const *v)
{
	char		sql[512];
	int			n = report_sql(s->o, sql, sizeof(sql));

	t->res = ask(s, &t->pr, sql, n, v, !s->o->client_symbols && strcmp(s->o->format, "pprof") == 0);
}

/* Leak mode: snapshot, wait with a progress line, report the growth, drop the snapshot. */
static void
leak(server *s, target *t, const char **v)
{
	char		name[64];
	const char *snap[2] = {name, t->pid};
	bool		tty = isatty(fileno(stderr));
	int			seconds = s->o->seconds;
	PGresult   *res;

	snprintf(name, sizeof(name), "pg_heapprof_%s_%ld", t->pid, (long) time(NULL));
	if ((res = query(s, &t->pr, "SELECT @x.heapprof_snapshot($1, pid => $2::int)", 2, snap, 0)) == NULL)
		return;
	PQclear(res);
	for (int i = 0; i < seconds && !interrupted; i++)
	{
		if (tty)
			fprintf(stderr, "\r%s: watching process %s for growth: %d/%d s ", progname, t->pid, i, seconds);
		else if (i % 10 == 0)
			fprintf(stderr, "%s: watching process %s for growth: %d/%d s\n", progname, t->pid, i, seconds);
		sleep(1);
	}
	if (tty)
		fprintf(stderr, "\r%s: watched process %s for %d s%20s\n", progname, t->pid, seconds, "");
	v[5] = name;
	if (!interrupted)
		report(s, t, v);
	if ((res = query(s, &s->pr, "SELECT @x.heapprof_drop_snapshot($1)", 1, snap, 0)) == NULL)
	{
		char		msg[4096];

		fprintf(stderr, "%s: warning: could not drop snapshot \"%s\": %s\n", progname, name,
				hp_sink_str(HP_SINK_LINES, s->pr.msg, strlen(s->pr.msg), msg, sizeof(msg)));
		clear_problem(&s->pr);
		memset(&s->pr, 0, sizeof(s->pr));
	}
	PQclear(res);
}

/* Ask t what the action asks of every chosen process. */
static void
ask_target(server *s, target *t)
{
	const cli_opts *o = s->o;
	const char *v[9] = {t->pid, o->fold, o->objects ? "true" : "false", o->focus, o->ignore,
	NULL, o->stored, o->peak ? "true" : "false", o->window};
	const char *mv[7] = {t->pid, o->fold, o->focus, o->ignore, v[7], o->window, o->group_by};
	bool		grouped = o->group_by && strcmp(o->group_by, "function") != 0;

	if (t->pr.msg)
		return;
	if (o->merge)
		t->res = grouped ? ask(s, &t->pr, STACKS_GROUPED_SQL, 7, mv, 0) : ask(s, &t->pr, STACKS_SQL, 6, mv, 0);
	else if (o->action == ACT_ENABLE || o->action == ACT_DISABLE)
		t->res = query(s, &t->pr, o->action == ACT_ENABLE ? "SELECT @x.heapprof_enable(pid => $1::int)" :
					   "SELECT @x.heapprof_disable(pid => $1::int)", 1, v, 0);
	else if (o->action == ACT_REPORT)
		report(s, t, v);
	else if (o->action == ACT_LEAK)
		leak(s, t, v);
}

/* The chosen processes of s: --pid's, --stored's stored profile, or those of --backend-type. */
static void
choose(server *s)
{
	const cli_opts *o = s->o;
	const char *sel[2] = {o->type, o->base_type};

	if (o->pid || o->stored)
	{
		s->t = xcalloc(1, sizeof(target));
		s->t[s->nt++].pid = o->pid;
		return;
	}
	s->procs = query(s, &s->pr, LIST_SQL, 2, sel, 0);
	if (s->procs == NULL || o->type == NULL)
		return;
	s->t = xcalloc((size_t) PQntuples(s->procs), sizeof(target));
	for (int i = 0; i < PQntuples(s->procs); i++)
	{
		target	   *t = &s->t[s->nt++];

		t->pid = cell(s->procs, i, 0);
		t->type = cell(s->procs, i, 1);
		t->base = type_in(t->type, o->base_type);
		/* the pid names a file in --output's directory: digits only */
		if (t->pid[0] == '\0' || strspn(t->pid, "0123456789") != strlen(t->pid) || strlen(t->pid) > 10)
			set_problem(&t->pr, "the server sent a process ID that is not a number", NULL);
	}
}

/* A server's thread: connect, choose the processes, ask each of them. */
static void *
serve(void *arg)
{
	server	   *s = arg;
	const cli_opts *o = s->o;

	if (!connect_server(s))
		return NULL;
	if (o->window)
		s->cancel = PQgetCancel(s->conn);
	if (o->action == ACT_CAPTURES || o->action == ACT_SETUP)
	{
		s->procs = query(s, &s->pr, o->action == ACT_SETUP ? SETUP_SQL : CAPTURES_SQL, 0, NULL, 0);
		return NULL;
	}
	if (o->action == ACT_GROWTH)
	{
		const char *v[4] = {o->since, o->per_process ? "true" : "false", o->min_rate, o->kinds};

		s->procs = query(s, &s->pr, GROWTH_SQL, 4, v, 0);
		return NULL;
	}
	if (o->action == ACT_TIMELINE)
	{
		/* one document, written as a report of one process is (output.c) */
		const char *v[4] = {o->since, o->pid, o->kind, o->series};

		s->t = xcalloc(1, sizeof(target));
		s->nt = 1;
		s->t[0].pid = o->pid;
		s->t[0].res = query(s, &s->t[0].pr, TIMELINE_SQL, 4, v, 0);
		return NULL;
	}
	choose(s);
	for (int i = 0; i < s->nt && !interrupted; i++)
		ask_target(s, &s->t[i]);
	return NULL;
}

void
fleet_init(fleet *f, const cli_opts *o)
{
	f->n = o->nconn ? o->nconn : 1;
	f->sv = xcalloc((size_t) f->n, sizeof(server));
	for (int i = 0; i < f->n; i++)
	{
		f->sv[i].o = o;
		f->sv[i].conninfo = i < o->nconn ? o->conninfos[i] : NULL;
		snprintf(f->sv[i].label, sizeof(f->sv[i].label), "server %d", i + 1);
	}
	if (o->prompt)
		ask_password();
}

/* Every server at once: a server that is down only delays its own thread. */
void
fleet_gather(fleet *f)
{
	const cli_opts *o = f->sv[0].o;

	if (o->window || o->action == ACT_LEAK)
	{
		cancel_fleet = f;
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
	}
	if (f->n == 1)
		serve(&f->sv[0]);
	else
	{
		for (int i = 0; i < f->n; i++)
			if (pthread_create(&f->sv[i].thread, NULL, serve, &f->sv[i]) != 0)
				fail("could not start a thread: %s", strerror(errno));
		for (int i = 0; i < f->n; i++)
			pthread_join(f->sv[i].thread, NULL);
	}
}

void
fleet_free(fleet *f)
{
	cancel_fleet = NULL;
	for (int i = 0; i < f->n; i++)
	{
		server	   *s = &f->sv[i];

		for (int j = 0; j < s->nt; j++)
		{
			PQclear(s->t[j].res);
			clear_problem(&s->t[j].pr);
		}
		free(s->t);
		if (s->cancel)
			PQfreeCancel(s->cancel);
		PQclear(s->procs);
		clear_problem(&s->pr);
		PQfinish(s->conn);
	}
	free(f->sv);
}
