/*
 * output.c -- everything pg_heapprof prints and writes, from the main
 * thread once every server has answered: messages, the tables of --list,
 * --captures, --setup and --growth, and each process's report (and
 * --timeline's SVG) as a file or on standard output (through write.c).
 *
 * A report is the server's rendering, or with --client-symbols the
 * engine's rendering here of the process's raw dump (named from this
 * machine's files and debuginfod), with the arguments the server would
 * have used, so that both read the same.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_engine.h"
#include "fold_names.h"
#include "pg_heapprof.h"

/* Print it, naming where when several servers answer; true if there was one. */
bool
report_problem(const problem *pr, const char *where)
{
	if (pr->msg == NULL)
		return false;
	fprintf(stderr, "%s: error: %s%s%s\n", progname, hp_cli_shown(where ? where : "", false), where ? ": " : "",
			hp_cli_shown(pr->msg, true));
	if (pr->hint)
		fprintf(stderr, "%s: hint: %s\n", progname, hp_cli_shown(pr->hint, true));
	return true;
}

/* A result's cell as a terminal may show it (a server's text can hold any byte). */
static const char *
shown(const PGresult *res, int row, int col)
{
	return hp_cli_shown(cell(res, row, col), false);
}

/* A server's name as part of a file name: the file-name sink, [A-Za-z0-9.-] and '_' for the rest. */
static void
file_label(const char *label, char *buf, size_t size)
{
	size_t		i;

	for (i = 0; label[i] && i + 1 < size; i++)
		buf[i] = (label[i] >= 'a' && label[i] <= 'z') || (label[i] >= 'A' && label[i] <= 'Z') ||
			(label[i] >= '0' && label[i] <= '9') || label[i] == '.' || label[i] == '-' ? label[i] : '_';
	buf[i] = '\0';
}

/*
 * A percentage of a top row, as the merge prints it (hp_percent): the
 * server's number, rounded to 0.1, with "%"; a share of a zero total
 * (which the server leaves NULL) is nan, +inf or -inf by its value's sign.
 */
static void
top_pct(char *buf, size_t len, bool known, double pct, double value)
{
	if (known)
		snprintf(buf, len, "%.1f%%", pct);
	else
		hp_percent(value, 0, buf, len);
}

/* heapprof_top's rows, as top lines. */
static void
top_from_server(FILE *f, PGresult *res)
{
	fprintf(f, TOP_LINE, "rank", "flat", "flat%", "cum", "cum%", "function");
	for (int i = 0; i < PQntuples(res); i++)
	{
		char		fp[16];
		char		cp[16];

		top_pct(fp, sizeof(fp), !PQgetisnull(res, i, 2), strtod(cell(res, i, 2), NULL),
				strtod(cell(res, i, 1), NULL));
		top_pct(cp, sizeof(cp), !PQgetisnull(res, i, 4), strtod(cell(res, i, 4), NULL),
				strtod(cell(res, i, 3), NULL));
		fprintf(f, TOP_LINE, shown(res, i, 0), shown(res, i, 1), fp, shown(res, i, 3), cp,
				shown(res, i, 5));
	}
}

/* The engine's top rows, as the server would have returned them, as top lines. */
static void
top_from_engine(FILE *f, const hp_result *r)
{
	double		total = r->graph.local_total;

	fprintf(f, TOP_LINE, "rank", "flat", "flat%", "cum", "cum%", "function");
	for (size_t i = 0; i < r->nrows; i++)
	{
		const hp_row *row = &r->rows[i];
		double		fpct = row->flat * 100.0 / total;
		double		cpct = row->cum * 100.0 / total;
		char		rank[24], flat[24], fp[16], cum[24], cp[16];

		snprintf(rank, sizeof(rank), "%zu", i + 1);
		snprintf(flat, sizeof(flat), "%lld", row->whole_flat);
		snprintf(cum, sizeof(cum), "%lld", hp_whole_cum(row));
		top_pct(fp, sizeof(fp), total != 0 && isfinite(fpct), round(fpct * 10) / 10, row->flat);
		top_pct(cp, sizeof(cp), total != 0 && isfinite(cpct), round(cpct * 10) / 10, row->cum);
		fprintf(f, TOP_LINE, rank, flat, fp, cum, cp, hp_cli_shown(row->func->name, false));
	}
}

/* A server's report as the bytes of its file; malloc'ed. */
static char *
server_bytes(const char *format, PGresult *res, size_t *len)
{
	char	   *buf = NULL;
	FILE	   *f = open_memstream(&buf, len);

	if (f == NULL)
		fail("out of memory");
	if (strcmp(format, "pprof") == 0)
		fwrite(cell(res, 0, 0), 1, (size_t) PQgetlength(res, 0, 0), f);
	else if (strcmp(format, "top") == 0)
		top_from_server(f, res);
	else
		for (int i = 0; i < PQntuples(res); i++)
			fprintf(f, "%s\n", terminal_format(format) ? shown(res, i, 0) : cell(res, i, 0));
	if (fclose(f) != 0)
		fail("out of memory");
	return buf;
}

/* The engine of --client-symbols, opened for the first report and kept for the next. */
static hp_cli_engine engine;
static bool engine_open;

/*
 * --client-symbols: t's raw dump (heapprof_dump_portable) rendered here,
 * with what the server's report of process pid sets (run_report, args.c);
 * malloc'ed.  A malformed dump ends the program (cli_engine.c).
 */
static char *
client_bytes(const cli_opts *o, const target *t, size_t *len)
{
	hp_options	opt = HP_OPTIONS_DEFAULT;
	hp_report_kind kind = HP_REPORT_TEXT;
	char		program[64];
	char		title[64];
	char		subject[64];
	char	   *buf = NULL;
	FILE	   *f;
	hp_arena	a;
	hp_result	r;

	if (!engine_open && !(engine_open = hp_cli_engine_open(&engine, progname, "error: ")))
		exit(1);
	snprintf(subject, sizeof(subject), "process %s", t->pid);
	engine.subject = subject;
	opt.fold = strcmp(o->fold, "true") == 0;
	opt.fold_names = opt.fold ? hp_postgres_allocator : NULL;
	opt.measure = o->objects ? HP_INUSE_OBJECTS : HP_INUSE_SPACE;
	opt.focus = o->focus_re;
	opt.ignore = o->ignore_re;
	opt.home_object = "postgres";
	snprintf(program, sizeof(program), "postgres (pid %s)", t->pid);
	snprintf(title, sizeof(title), "heapprof: live heap of process %s", t->pid);
	opt.program = program;
	if (strcmp(o->format, "dot") == 0 || (strcmp(o->format, "svg") == 0 && o->svg_dot))
		kind = HP_REPORT_DOT;
	else if (strcmp(o->format, "svg") == 0 || strcmp(o->format, "flamegraph") == 0)
	{
		kind = HP_REPORT_FLAMEGRAPH;
		opt.program = title;
	}
	else if (strcmp(o->format, "collapsed") == 0)
		kind = HP_REPORT_COLLAPSED;
	else if (strcmp(o->format, "pprof") == 0)
		kind = HP_REPORT_PPROF;
	else if (strcmp(o->format, "top") == 0)
		kind = HP_REPORT_TOP;
	hp_arena_init(&a, &engine.env);
	hp_analyze(&a, engine.sym, cell(t->res, 0, 0), (size_t) PQgetlength(t->res, 0, 0), NULL, 0,
			   &opt, kind, kind == HP_REPORT_TOP ? 30 : SIZE_MAX, &r);
	if ((f = open_memstream(&buf, len)) == NULL)
		fail("out of memory");
	if (kind == HP_REPORT_TOP)
		top_from_engine(f, &r);
	else
		fwrite(r.text.data ? r.text.data : "", 1, r.text.len, f);
	/* the server's flame graph is one value, which server_bytes ends as a line */
	if (kind == HP_REPORT_FLAMEGRAPH)
		fputc('\n', f);
	if (fclose(f) != 0)
		fail("out of memory");
	hp_arena_free(&a);
	return buf;
}

/*
 * t's report: to --output (standard output by default), or with
 * --backend-type to a file of its own in that directory, named on a line.
 */
static bool
write_report(const server *s, const target *t)
{
	const cli_opts *o = s->o;
	size_t		len;
	char	   *data = o->client_symbols ? client_bytes(o, t, &len) : server_bytes(o->format, t->res, &len);
	char		name[256];
	char		path[4096];
	bool		ok;

	if (t->type == NULL)
		ok = put(o, data, len, o->output);
	else
	{
		file_label(s->label, name, sizeof(name));
		snprintf(path, sizeof(path), "%s/%s-%s.%s", o->output, name, t->pid, format_extension(o->format));
		if ((ok = put(o, data, len, path)))
			printf("%s  %s (%s): %s\n", hp_cli_shown(s->label, false), t->pid, hp_cli_shown(t->type, false),
				   hp_cli_shown(path, false));
	}
	free(data);
	return ok;
}

#define LIST_LINE "%8s  %-22s %-12s %-18s %-14s %-9s %-10s %-19s"

/* One table over every server; with --merge, each process's share of the sum. */
static void
list(const fleet *f)
{
	const cli_opts *o = f->sv[0].o;
	double		sum = 0;
	double	   *totals = o->merge ? merge_totals(f, &sum) : NULL;
	size_t		nt = 0;

	printf(LIST_LINE, "pid", "backend_type", "user", "application", "state", "profiling", "allocated",
		   "sampling since");
	if (o->merge)
		printf(" %12s %6s", o->objects ? "objects" : "profiled", "share");
	printf("  %-24s %s\n", "server", "role");
	for (int i = 0; i < f->n; i++)
	{
		const server *s = &f->sv[i];
		const char *role = s->conn && PQstatus(s->conn) == CONNECTION_OK ?
			(s->standby ? "standby" : "primary") : "down";

		if (s->procs == NULL)
		{
			printf(LIST_LINE, "-", PQstatus(s->conn) == CONNECTION_OK ? "(error)" : "(unreachable)",
				   "", "", "", "", "", "");
			if (o->merge)
				printf(" %12s %6s", "", "");
			printf("  %-24s %s\n", hp_cli_shown(s->label, false), role);
			continue;
		}
		for (int r = 0; r < PQntuples(s->procs); r++)
		{
			printf(LIST_LINE, shown(s->procs, r, 0), shown(s->procs, r, 1),
				   shown(s->procs, r, 2), shown(s->procs, r, 3), shown(s->procs, r, 4),
				   shown(s->procs, r, 5), shown(s->procs, r, 6),
				   shown(s->procs, r, 7));
			if (o->merge && s->t[r].res)
			{
				double		v = s->t[r].base && totals[nt] != 0 ? -totals[nt] : totals[nt];
				char		share[16];

				hp_percent(v, sum, share, sizeof(share));
				printf(" %12lld %6s", hp_whole(v), share);
			}
			else if (o->merge)
				printf(" %12s %6s", "error", "");
			nt += o->merge;
			printf("  %-24s %s\n", hp_cli_shown(s->label, false), role);
		}
	}
	free(totals);
}

#define CAPTURE_LINE "%-40s %8s %-12s %-12s %20s %10s %-19s  %-24s %s\n"

/* --captures: one table over every server, the query's first line last. */
static void
list_captures(const fleet *f)
{
	printf(CAPTURE_LINE, "name", "pid", "user", "database", "queryid", "growth", "captured at", "server",
		   "query");
	for (int i = 0; i < f->n; i++)
	{
		const server *s = &f->sv[i];

		if (s->procs == NULL)
		{
			printf(CAPTURE_LINE, PQstatus(s->conn) == CONNECTION_OK ? "(error)" : "(unreachable)",
				   "-", "", "", "", "", "", hp_cli_shown(s->label, false), "");
			continue;
		}
		for (int r = 0; r < PQntuples(s->procs); r++)
			printf(CAPTURE_LINE, shown(s->procs, r, 0), shown(s->procs, r, 1),
				   shown(s->procs, r, 2), shown(s->procs, r, 3), shown(s->procs, r, 4),
				   shown(s->procs, r, 5), shown(s->procs, r, 6), hp_cli_shown(s->label, false),
				   shown(s->procs, r, 7));
	}
}

#define GROWTH_LINE "%-8s %14s %14s %-7s %10s %-19s %14s %9s"
#define GROWTH_PROCESS " %10s %-19s"

/* A time of the heap history (Unix seconds) in this machine's time zone; "" for none. */
static const char *
when(const char *epoch, bool null, char *buf, size_t size)
{
	double		t = strtod(epoch, NULL);
	time_t		secs;
	struct tm	tm;

	buf[0] = '\0';
	if (null || !isfinite(t) || t < 0 || t > 253402300799.0)
		return buf;
	secs = (time_t) t;
	if (localtime_r(&secs, &tm) == NULL || strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm) == 0)
		buf[0] = '\0';
	return buf;
}

/* outside_contexts as a word */
static const char *
yes_no(const PGresult *res, int row, int col)
{
	const char *v = cell(res, row, col);

	return strcmp(v, "t") == 0 ? "yes" : strcmp(v, "f") == 0 ? "no" : shown(res, row, col);
}

static void
growth_header(bool per_process, bool merged)
{
	printf(GROWTH_LINE, "kind", "bytes/hour", "outside/hour", "outside", "steadiness", "growing since",
		   "bytes", "processes");
	if (per_process)
		printf(GROWTH_PROCESS, "pid", "backend start");
	if (merged)
		printf(" %7s  %s\n", "servers", "name");
	else
		printf("  %-24s %s\n", "server", "name");
}

/*
 * --growth: heapprof_growth()'s suspects, fastest first, in one table over
 * every server as --captures has them, the server before the name (any
 * bytes: a symbol, a memory context, a statement's queryid); a server that
 * did not answer has a row saying so.
 */
static void
list_growth(const fleet *f)
{
	const cli_opts *o = f->sv[0].o;

	growth_header(o->per_process, false);
	for (int i = 0; i < f->n; i++)
	{
		const server *s = &f->sv[i];
		const PGresult *res = s->procs;

		if (res == NULL)
		{
			printf(GROWTH_LINE, PQstatus(s->conn) == CONNECTION_OK ? "(error)" : "(unreachable)",
				   "", "", "", "", "", "", "");
			if (o->per_process)
				printf(GROWTH_PROCESS, "", "");
			printf("  %-24s %s\n", hp_cli_shown(s->label, false), "");
			continue;
		}
		for (int r = 0; r < PQntuples(res); r++)
		{
			char		steady[32];
			char		since[32];
			char		start[32];

			snprintf(steady, sizeof(steady), "%.2f", strtod(cell(res, r, G_STEADINESS), NULL));
			printf(GROWTH_LINE, shown(res, r, G_KIND), shown(res, r, G_RATE), shown(res, r, G_OUTSIDE_RATE),
				   yes_no(res, r, G_OUTSIDE), steady,
				   when(cell(res, r, G_SINCE), PQgetisnull(res, r, G_SINCE), since, sizeof(since)),
				   shown(res, r, G_BYTES), shown(res, r, G_PROCESSES));
			if (o->per_process)
				printf(GROWTH_PROCESS, shown(res, r, G_PID),
					   when(cell(res, r, G_START), PQgetisnull(res, r, G_START), start, sizeof(start)));
			printf("  %-24s %s\n", hp_cli_shown(s->label, false), shown(res, r, G_NAME));
		}
	}
}

/* --growth --merge: one suspect per kind and name over every server that answered (merge.c). */
static void
list_growth_merged(const fleet *f)
{
	suspect    *v;
	size_t		n = merge_growth(f, &v);

	growth_header(false, true);
	for (size_t i = 0; i < n; i++)
	{
		char		rate[24], outside[24], steady[32], since[32], bytes[24], procs[24], epoch[64];

		snprintf(rate, sizeof(rate), "%lld", v[i].rate);
		snprintf(outside, sizeof(outside), "%lld", v[i].outside_rate);
		snprintf(steady, sizeof(steady), "%.2f", v[i].steadiness);
		snprintf(epoch, sizeof(epoch), "%.6f", v[i].since);
		snprintf(bytes, sizeof(bytes), "%lld", v[i].bytes);
		snprintf(procs, sizeof(procs), "%lld", v[i].processes);
		printf(GROWTH_LINE, hp_cli_shown(v[i].kind, false), rate, outside, v[i].outside ? "yes" : "no", steady,
			   when(epoch, isnan(v[i].since), since, sizeof(since)), bytes, procs);
		printf(" %7d  %s\n", v[i].servers, hp_cli_shown(v[i].name, false));
	}
	free(v);
}

/*
 * --setup: heapprof_status()'s hint on standard output exactly as the
 * server wrote it (psql's aligned output adds a "+" to every line, which
 * breaks an environment file); the advice on names goes to standard error.
 */
static void
print_setup(const server *s)
{
	if (s->procs == NULL)
		return;
	if (PQgetisnull(s->procs, 0, 0))
		fprintf(stderr, "%s: nothing to set up: profiling is usable and heapprof is preloaded\n", progname);
	else
		printf("%s\n", hp_cli_shown(cell(s->procs, 0, 0), true));
	if (!PQgetisnull(s->procs, 0, 1))
		fprintf(stderr, "%s: note: %s\n", progname, hp_cli_shown(cell(s->procs, 0, 1), true));
}

/*
 * Every server's and process's problem, naming the server when there are
 * several and the process when it was chosen by type; and a type that
 * chose none.  True if there was any.
 */
bool
print_problems(const fleet *f)
{
	const cli_opts *o = f->sv[0].o;
	bool		failed = false;
	int			chosen = 0;

	for (int i = 0; i < f->n; i++)
	{
		const server *s = &f->sv[i];

		failed |= report_problem(&s->pr, f->n > 1 ? s->label : NULL);
		for (int j = 0; j < s->nt; j++)
		{
			char		where[320];

			snprintf(where, sizeof(where), "%s: process %s", s->label, s->t[j].pid);
			failed |= report_problem(&s->t[j].pr, s->t[j].type ? where : NULL);
		}
		chosen += s->nt;
	}
	if (o->type && o->action != ACT_LIST && chosen == 0)
	{
		fprintf(stderr, "%s: error: no %s%sprocess on %s\n", progname,
				strcmp(o->type, "all") == 0 ? "" : o->type, strcmp(o->type, "all") == 0 ? "" : " ",
				f->n > 1 ? "any server" : "the server");
		failed = true;
	}
	return failed;
}

/* What the action brought back, printed and written; false if anything could not be. */
bool
print_results(const fleet *f)
{
	const cli_opts *o = f->sv[0].o;
	bool		ok = true;

	if (o->action == ACT_LIST)
		list(f);
	else if (o->action == ACT_CAPTURES)
		list_captures(f);
	else if (o->action == ACT_SETUP)
		print_setup(&f->sv[0]);
	else if (o->action == ACT_GROWTH && o->merge)
		list_growth_merged(f);
	else if (o->action == ACT_GROWTH)
		list_growth(f);
	else if (o->merge)
		ok = write_merged(f);
	else
		for (int i = 0; i < f->n; i++)
			for (int j = 0; j < f->sv[i].nt; j++)
			{
				const server *s = &f->sv[i];
				const target *t = &s->t[j];

				if (t->res == NULL)
					continue;
				if (o->action == ACT_REPORT || o->action == ACT_LEAK || o->action == ACT_TIMELINE)
					ok &= write_report(s, t);
				else if (t->type == NULL)
					printf("profiling of process %s is %s\n", t->pid,
						   strcmp(cell(t->res, 0, 0), "t") == 0 ? "on" : "off");
				else
					printf("profiling of process %s (%s) on %s is %s\n", t->pid, hp_cli_shown(t->type, false),
						   hp_cli_shown(s->label, false),
						   strcmp(cell(t->res, 0, 0), "t") == 0 ? "on" : "off");
			}
	if (engine_open)
		hp_cli_engine_close(&engine);
	return ok;
}
