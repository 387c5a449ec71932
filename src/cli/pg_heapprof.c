/*
 * pg_heapprof -- heap profiles of PostgreSQL servers' processes, from the shell.
 *
 * A libpq client of the heapprof extension: lists the processes it can
 * reach, switches their profiling, and writes any report of one of them to
 * a file (dot, svg, flamegraph, collapsed, pprof, raw, text, top): of the
 * heap it holds, of its peak, of what it allocates during a window, or of a
 * stored profile (a statement capture, ...).  Leak mode takes a snapshot,
 * waits, and writes what grew.  Connection options and PG* environment
 * variables work as for psql.
 *
 * Several servers (a primary and its standbys): each is contacted by a
 * thread of its own with a connect timeout, so one that is down delays
 * nobody; the threads only talk to their server, and everything is printed
 * and written by the main thread afterwards.  --merge sums the chosen
 * processes' stacks, as each server named them, with the engine's per-stack
 * arithmetic (hp_graph_from_stacks) and renders one report of them.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libpq-fe.h"
#include "engine/render.h"

#include "client_report.h"

static const char *progname = "pg_heapprof";
static bool client_symbols;	/* --client-symbols */

static void
usage(FILE *f)
{
	fprintf(f,
			"%s lists PostgreSQL server processes and writes their jemalloc heap profiles.\n\n"
			"Usage:\n  %s [OPTION]... [DBNAME|CONNINFO]...\n\n"
			"Actions (default: --list):\n"
			"  -l, --list             list the processes that can be profiled, on every server\n"
			"  -e, --enable           switch profiling of the chosen processes on\n"
			"  -x, --disable          switch profiling of the chosen processes off\n"
			"  -r, --report=FORMAT    write a report of the chosen processes; FORMAT is dot,\n"
			"                         svg, flamegraph, collapsed, pprof, raw, text or top\n"
			"  -s, --seconds=N        leak mode: snapshot process --pid, wait N seconds,\n"
			"                         then write what grew (FORMAT from --report, default text)\n"
			"      --captures         list the statements that left memory behind, on every\n"
			"                         server (heapprof.capture_min_growth)\n"
			"      --setup            print what the server needs for profiling, as lines to\n"
			"                         paste (heapprof_status()'s hint); nothing when ready\n\n"
			"What to report (default: what the chosen processes hold now):\n"
			"      --peak             the profile taken when the process held the most\n"
			"      --allocations=SECONDS  what the process allocates during a window of\n"
			"                         SECONDS (0 < SECONDS <= 3600; fractions allowed)\n"
			"      --dump=NAME        the stored profile NAME of the server (a capture, an\n"
			"                         exit dump, a persisted snapshot) instead of a process\n"
			"                         (each implies --report: any FORMAT but raw, default text)\n\n"
			"Choosing processes:\n"
			"  -P, --pid=PID          the server process to act on (one server; see --list)\n"
			"  -t, --backend-type=TYPE  every process of TYPE (e.g. startup, walsender,\n"
			"                         walreceiver) on every server; reports go to one file\n"
			"                         per process, DIR/HOST_PORT-PID.EXT (DIR from --output)\n"
			"  -m, --merge            sum the chosen processes' profiles into one report;\n"
			"                         with --list, show each process's share of the sum\n"
			"      --base-type=TYPE   with --merge: subtract the sum of the TYPE processes\n"
			"      --drop-negative    with --base-type: shrinking stacks count as 0\n\n"
			"Options:\n"
			"  -o, --output=FILE      write the report to FILE (default: standard output);\n"
			"                         with --backend-type and no --merge, a directory (default .)\n"
			"      --objects          count objects instead of bytes\n"
			"      --nofold           keep PostgreSQL's allocator frames (palloc & co.); by\n"
			"                         default (--fold) memory is charged to their callers\n"
			"      --focus=REGEX      only stacks with a frame matching REGEX\n"
			"      --ignore=REGEX     leave out stacks with a frame matching REGEX\n"
			"      --client-symbols   name frames here, from this machine's files and debuginfod\n"
			"                         (DEBUGINFOD_URLS), with heapprof-report\n"
			"  -V, --version          output version information, then exit\n"
			"  -?, --help             show this help, then exit\n\n"
			"Connection options:\n"
			"  -d, --dbname=DBNAME    database name or connection string; repeat it (or give\n"
			"                         several arguments) for several servers\n"
			"  -f, --servers=FILE     connection strings, one per line (# comments)\n"
			"  -h, --host=HOSTNAME    database server host or socket directory\n"
			"  -p, --port=PORT        database server port\n"
			"  -U, --username=USER    database user name\n"
			"  -w, --no-password      never prompt for password\n"
			"  -W, --password         force password prompt\n"
			"      --connect-timeout=SECONDS  per server (default 5; 0 waits forever)\n\n"
			"-h, -p and -U apply to every server; a connection string overrides them.  The\n"
			"svg format is Graphviz's rendering of the dot graph when \"dot\" is installed,\n"
			"else the flame graph.  Needs the heapprof extension in the database, and\n"
			"heapprof in shared_preload_libraries to reach other processes.  Exit status:\n"
			"0 when every server and process answered, 1 otherwise, 2 for bad arguments.\n",
			progname, progname);
}

/* "pg_heapprof: error: ..." on a line */
static void
print_error(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

static void
print_error(const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: error: ", progname);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

static void
fail(const char *fmt,...) __attribute__((format(printf, 1, 2), noreturn));

static void
fail(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	print_error(fmt, ap);
	va_end(ap);
	exit(1);
}

static void
bad_usage(const char *fmt,...) __attribute__((format(printf, 1, 2), noreturn));

static void
bad_usage(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	print_error(fmt, ap);
	va_end(ap);
	exit(2);
}

static char *
xstrdup(const char *s)
{
	char	   *d = strdup(s);

	if (d == NULL)
		fail("out of memory");
	return d;
}

static void *
xcalloc(size_t n, size_t size)
{
	void	   *p = calloc(n ? n : 1, size);

	if (p == NULL)
		fail("out of memory");
	return p;
}

/* What went wrong with a server or a process: the server's message and hint. */
typedef struct problem
{
	char	   *msg;
	char	   *hint;
} problem;

static void
set_problem(problem *pr, const char *msg, const char *hint)
{
	size_t		len = strlen(msg);

	while (len > 0 && msg[len - 1] == '\n')
		len--;
	pr->msg = strndup(msg, len);
	pr->hint = hint ? strdup(hint) : NULL;
	if (pr->msg == NULL || (hint && pr->hint == NULL))
		fail("out of memory");
}

static void
set_result_problem(problem *pr, PGresult *res)
{
	const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

	set_problem(pr, msg ? msg : PQresultErrorMessage(res), PQresultErrorField(res, PG_DIAG_MESSAGE_HINT));
}

/* Print it, naming where when several servers answer; true if there was one. */
static bool
report_problem(const problem *pr, const char *where)
{
	if (pr->msg == NULL)
		return false;
	fprintf(stderr, "%s: error: %s%s%s\n", progname, where ? where : "", where ? ": " : "", pr->msg);
	if (pr->hint)
		fprintf(stderr, "%s: hint: %s\n", progname, pr->hint);
	return true;
}

static void
clear_problem(problem *pr)
{
	free(pr->msg);
	free(pr->hint);
}

/* One chosen process of a server, and what it answered. */
typedef struct target
{
	const char *pid;
	const char *type;
	bool		base;			/* --base-type: subtracted in the merge */
	PGresult   *res;
	problem		pr;
} target;

typedef struct server
{
	const char *conninfo;		/* -d or a line of --servers; NULL: libpq's defaults */
	char		label[256];		/* host:port, or "server N" (its place on the command line) */
	PGconn	   *conn;
	bool		standby;
	PGcancel   *volatile cancel;	/* while an allocation window may run: for Ctrl-C */
	char		schema[2 * 64 + 3]; /* the extension's, quoted */
	const char *stored_arg;		/* the reports' stored-profile argument: dump before 1.2 */
	problem		pr;				/* could not connect, no extension, ... */
	PGresult   *procs;			/* heapprof_backends() rows */
	target	   *t;
	int			nt;
	pthread_t	thread;
} server;

/* The command line, read by every thread. */
static struct
{
	const char *keywords[12];	/* common to every server; dbname last */
	const char *values[12];
	int			nkw;
	bool		may_prompt;		/* one server, a terminal, neither -w nor -W */
	char		action;
	const char *format;
	const char *type;
	const char *base_type;
	bool		merge;
	bool		svg_dot;		/* svg is Graphviz's drawing of the dot graph */
	bool		several;		/* more than one server: messages name theirs */
	const char *fold;
	const char *objects;
	const char *focus;
	const char *ignore;
	const char *peak;			/* --peak: "true", else "false" */
	const char *window;			/* --allocations: seconds, as given */
	const char *dump;			/* --dump: a stored profile's name */
} cfg;

/* The report's arguments, as named parameters $1.. of every report function. */
typedef struct params
{
	const char *values[9];		/* pid, fold, objects, focus, ignore, base, dump, peak, seconds */
} params;

#define REPORT_ARGS "pid => $1::int, fold => $2::bool, objects => $3::bool, " \
	"focus => $4, ignore => $5, base => $6, @stored => $7, peak => $8::boolean, " \
	"seconds => $9::double precision"

/*
 * sql with "@x." replaced by the server's extension schema: with
 * search_path empty (see connect_server), every name is pg_catalog's or the
 * extension's, so no object another role creates can stand in for one.
 */
static void
expand(const server *s, const char *sql, char *buf, size_t size)
{
	size_t		n = 0;

	for (const char *c = sql; *c; c++)
	{
		const char *part = c;
		size_t		len = 1;

		if (strncmp(c, "@x.", 3) == 0)
		{
			part = s->schema;
			len = strlen(s->schema);
			c += 2;
		}
		else if (strncmp(c, "@stored", 7) == 0)
		{
			part = s->stored_arg;
			len = strlen(part);
			c += 6;
		}
		if (n + len + 2 > size)
			abort();			/* our own queries are all far shorter */
		memcpy(buf + n, part, len);
		n += len;
		if (part == s->schema)
			buf[n++] = '.';
	}
	buf[n] = '\0';
}

static PGresult *
exec(const server *s, const char *sql, int nparams, const char *const *values, int binary)
{
	char		buf[2048];

	expand(s, sql, buf, sizeof(buf));
	return PQexecParams(s->conn, buf, nparams, NULL, values, NULL, NULL, binary);
}

/* The result, or NULL with the server's error in pr. */
static PGresult *
query(const server *s, problem *pr, const char *sql, int nparams, const char *const *values, int binary)
{
	PGresult   *res = exec(s, sql, nparams, values, binary);

	if (PQresultStatus(res) == PGRES_TUPLES_OK || PQresultStatus(res) == PGRES_COMMAND_OK)
		return res;
	set_result_problem(pr, res);
	PQclear(res);
	return NULL;
}

/* query() for the one-server forms: an error ends the program. */
static PGresult *
run(server *s, const char *sql, const params *p, int nparams, int binary)
{
	PGresult   *res = query(s, &s->pr, sql, nparams, p ? p->values : NULL, binary);

	if (res == NULL)
	{
		report_problem(&s->pr, NULL);
		exit(1);
	}
	return res;
}

static void
connect_once(server *s, const char *password)
{
	const char *kw[16];
	const char *val[16];
	int			n = cfg.nkw;

	memcpy(kw, cfg.keywords, n * sizeof(kw[0]));
	memcpy(val, cfg.values, n * sizeof(val[0]));
	if (password)
	{
		kw[n] = "password";
		val[n++] = password;
	}
	/* last, so that a connection string overrides -h, -p, -U and the timeout */
	if (s->conninfo)
	{
		kw[n] = "dbname";
		val[n++] = s->conninfo;
	}
	kw[n] = NULL;
	val[n] = NULL;
	s->conn = PQconnectdbParams(kw, val, true);
}

static char *password;

/* Connect, empty search_path, find the extension's schema and the server's role. */
static bool
connect_server(server *s)
{
	PGresult   *res;

	connect_once(s, password);
	if (PQstatus(s->conn) == CONNECTION_BAD && PQconnectionNeedsPassword(s->conn) && cfg.may_prompt)
	{
		PQfinish(s->conn);
		password = getpass("Password: ");
		connect_once(s, password);
	}
	/* one libpq could not read keeps its "server N" label: it may hold a password */
	if (PQhost(s->conn) && *PQhost(s->conn) && PQport(s->conn) && *PQport(s->conn))
		snprintf(s->label, sizeof(s->label), "%s:%s", PQhost(s->conn), PQport(s->conn));
	if (PQstatus(s->conn) != CONNECTION_OK)
	{
		set_problem(&s->pr, PQerrorMessage(s->conn), NULL);
		return false;
	}
	/* as PostgreSQL's client tools do since CVE-2018-1058 */
	res = query(s, &s->pr, "SELECT pg_catalog.set_config('search_path', '', false), "
				"pg_catalog.pg_is_in_recovery()", 0, NULL, 0);
	if (res == NULL)
		return false;
	s->standby = strcmp(PQgetvalue(res, 0, 1), "t") == 0;
	PQclear(res);
	res = query(s, &s->pr, "SELECT pg_catalog.quote_ident(n.nspname), e.extversion FROM pg_catalog.pg_extension e "
				"JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace "
				"WHERE e.extname OPERATOR(pg_catalog.=) 'heapprof'", 0, NULL, 0);
	if (res == NULL)
		return false;
	if (PQntuples(res) == 0)
	{
		char		msg[200];

		snprintf(msg, sizeof(msg), "the heapprof extension is not installed in database \"%s\"", PQdb(s->conn));
		set_problem(&s->pr, msg, s->standby ? "create it on the primary; it reaches standbys through WAL" :
					"run CREATE EXTENSION heapprof; in that database");
		PQclear(res);
		return false;
	}
	snprintf(s->schema, sizeof(s->schema), "%s", PQgetvalue(res, 0, 0));
	s->stored_arg = strcmp(PQgetvalue(res, 0, 1), "1.0") == 0 ||
		strcmp(PQgetvalue(res, 0, 1), "1.1") == 0 ? "dump" : "stored";
	PQclear(res);
	return true;
}

/* The query of a report in format; its number of parameters, or -1 for an unknown format. */
static int
report_sql(const char *format, char *sql, size_t size)
{
	if ((strcmp(format, "svg") == 0 && cfg.svg_dot) || strcmp(format, "dot") == 0 ||
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
	else if (strcmp(format, "top") == 0)
		snprintf(sql, size,
				 "SELECT rank, flat_bytes, flat_pct, cum_bytes, cum_pct, function FROM @x.heapprof_top(30, %s)",
				 REPORT_ARGS);
	else
		return -1;
	return 9;
}

#define TOP_LINE "%4s %14s %7s %14s %7s  %s\n"

/* A report's result as the bytes of its file; malloc'ed. */
static char *
to_bytes(const char *format, PGresult *res, size_t *len)
{
	char	   *buf = NULL;
	FILE	   *f = open_memstream(&buf, len);

	if (f == NULL)
		fail("out of memory");
	if (strcmp(format, "pprof") == 0)
		fwrite(PQgetvalue(res, 0, 0), 1, (size_t) PQgetlength(res, 0, 0), f);
	else
	{
		if (strcmp(format, "top") == 0)
			fprintf(f, TOP_LINE, "rank", "flat", "flat%", "cum", "cum%", "function");
		for (int i = 0; i < PQntuples(res); i++)
			if (strcmp(format, "top") == 0)
				fprintf(f, TOP_LINE, PQgetvalue(res, i, 0), PQgetvalue(res, i, 1), PQgetvalue(res, i, 2),
						PQgetvalue(res, i, 3), PQgetvalue(res, i, 4), PQgetvalue(res, i, 5));
			else
				fprintf(f, "%s\n", PQgetvalue(res, i, 0));
	}
	if (fclose(f) != 0)
		fail("out of memory");
	return buf;
}

/* Run argv with stdin from fd_in (or inherited if < 0); its exit status, or -1. */
static int
run_program(char *const argv[], int fd_in)
{
	pid_t		child = fork();
	int			status;

	if (child < 0)
		return -1;
	if (child == 0)
	{
		if (fd_in >= 0 && dup2(fd_in, STDIN_FILENO) < 0)
			_exit(127);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (fd_in >= 0)
		close(fd_in);
	while (waitpid(child, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static bool
have_dot(void)
{
	char	   *const argv[] = {"dot", "-V", NULL};
	pid_t		child = fork();
	int			status;

	if (child == 0)
	{
		int			null = open("/dev/null", O_WRONLY);

		if (null >= 0)
		{
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	return child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) &&
		WEXITSTATUS(status) == 0;
}

/* Graphviz draws the dot graph, fed through a pipe: no shell, no file. */
static bool
draw_svg(const char *data, size_t len, const char *path)
{
	char	   *argv[] = {"dot", "-Tsvg", "-o", (char *) path, NULL};
	int			fds[2];
	pid_t		child;
	int			status;
	bool		ok;

	if (pipe(fds) < 0)
		return false;
	child = fork();
	if (child < 0)
	{
		close(fds[0]);
		close(fds[1]);
		return false;
	}
	if (child == 0)
	{
		close(fds[1]);
		exit(run_program(argv, fds[0]) == 0 ? 0 : 1);
	}
	close(fds[0]);
	signal(SIGPIPE, SIG_IGN);
	ok = true;
	for (size_t done = 0; done < len && ok;)
	{
		ssize_t		w = write(fds[1], data + done, len - done);

		if (w < 0 && errno != EINTR)
			ok = false;
		else if (w > 0)
			done += (size_t) w;
	}
	close(fds[1]);
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	return ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* Write a report's bytes to path (NULL or "-": standard output); false with errno's story printed. */
static bool
put(const char *format, const char *data, size_t len, const char *path)
{
	bool		out = path == NULL || strcmp(path, "-") == 0;
	FILE	   *f;

	if (strcmp(format, "svg") == 0 && cfg.svg_dot)
	{
		if (draw_svg(data, len, out ? "/dev/stdout" : path))
			return true;
		fprintf(stderr, "%s: error: dot could not draw the graph into \"%s\"\n", progname,
				out ? "/dev/stdout" : path);
		return false;
	}
	f = out ? stdout : fopen(path, "wb");
	if (f == NULL || fwrite(data, 1, len, f) != len || (out ? fflush(f) : fclose(f)) != 0)
	{
		fprintf(stderr, "%s: error: could not write \"%s\": %s\n", progname,
				out ? "standard output" : path, strerror(errno));
		if (f && !out)
			fclose(f);
		return false;
	}
	return true;
}

static volatile sig_atomic_t interrupted;

/* The servers whose allocation windows Ctrl-C cancels (PQcancel is safe here). */
static server *cancel_sv;
static int	cancel_nsv;

static void
on_signal(int sig)
{
	interrupted = sig;
	for (int i = 0; i < cancel_nsv; i++)
	{
		PGcancel   *c = cancel_sv[i].cancel;
		char		err[256];

		if (c)
			(void) PQcancel(c, err, sizeof(err));
	}
}

/* Ctrl-C (or SIGTERM) cancels the windows of sv's servers under way. */
static void
cancel_on_signal(server *sv, int nsv)
{
	cancel_sv = sv;
	cancel_nsv = nsv;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
}

/*
 * run() for an allocation window: the server answers when the window ends,
 * meanwhile a progress line; Ctrl-C cancels it (the server stops the
 * window and keeps nothing of it) and writes nothing.
 */
static PGresult *
run_window(server *s, const char *sql, const params *p, int nparams, int binary)
{
	char		buf[2048];
	double		seconds = strtod(p->values[8], NULL);
	bool		tty = isatty(fileno(stderr));
	const char *what = p->values[0];
	time_t		start = time(NULL);
	long		shown = -1;
	PGresult   *res = NULL;
	PGresult   *r;

	expand(s, sql, buf, sizeof(buf));
	s->cancel = PQgetCancel(s->conn);
	cancel_on_signal(s, 1);
	if (!PQsendQueryParams(s->conn, buf, nparams, NULL, p->values, NULL, NULL, binary))
		fail("%s", PQerrorMessage(s->conn));
	while (PQisBusy(s->conn))
	{
		long		elapsed = (long) (time(NULL) - start);
		struct timeval tv = {1, 0};
		fd_set		fds;

		if (interrupted)
		{
			if (tty && shown >= 0)
				fputc('\n', stderr);
			fail("interrupted; nothing written");
		}
		if (elapsed != shown && elapsed < seconds)
		{
			if (tty)
				fprintf(stderr, "\r%s: watching what process %s allocates: %ld/%g s ", progname, what,
						elapsed, seconds);
			else if (elapsed % 10 == 0)
				fprintf(stderr, "%s: watching what process %s allocates: %ld/%g s\n", progname, what,
						elapsed, seconds);
			shown = elapsed;
		}
		FD_ZERO(&fds);
		FD_SET(PQsocket(s->conn), &fds);
		if (select(PQsocket(s->conn) + 1, &fds, NULL, NULL, &tv) < 0 && errno != EINTR)
			fail("could not wait for the server: %s", strerror(errno));
		if (!PQconsumeInput(s->conn))
			break;				/* PQgetResult tells why */
	}
	if (interrupted)			/* the cancel's answer came at once */
	{
		if (tty && shown >= 0)
			fputc('\n', stderr);
		fail("interrupted; nothing written");
	}
	if (tty && shown >= 0)
		fprintf(stderr, "\r%s: watched what process %s allocates for %g s%20s\n", progname, what, seconds, "");
	while ((r = PQgetResult(s->conn)) != NULL)
		if (res == NULL)
			res = r;
		else
			PQclear(r);
	if (res == NULL)
		fail("%s", PQerrorMessage(s->conn));
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		set_result_problem(&s->pr, res);
		report_problem(&s->pr, NULL);
		exit(1);
	}
	return res;
}

/*
 * The one-server report of process p->values[0] (its heap, its peak, or a
 * window of its allocations), or of the stored profile p->values[6]; exits
 * on failure.
 */
static void
write_report(server *s, const char *format, const params *p, const char *path)
{
	char		sql[512];
	int			nparams;
	PGresult   *res;
	size_t		len;
	char	   *data;
	bool		ok;

	if (client_symbols && strcmp(format, "raw") != 0)
	{
		res = run(s, "SELECT @x.heapprof_dump_portable(pid => $1::int)", p, 1, 0);
		if (hp_client_report(progname, PQgetvalue(res, 0, 0), (size_t) PQgetlength(res, 0, 0), format,
							 &p->values[1], path) != 0)
			exit(1);
		PQclear(res);
		return;
	}
	nparams = report_sql(format, sql, sizeof(sql));
	if (p->values[8])
		res = run_window(s, sql, p, nparams, strcmp(format, "pprof") == 0);
	else
		res = run(s, sql, p, nparams, strcmp(format, "pprof") == 0);
	data = to_bytes(format, res, &len);
	PQclear(res);
	ok = put(format, data, len, path);
	free(data);
	if (!ok)
		exit(1);
}

/* Leak mode: snapshot, wait with a progress line, report the growth, drop it. */
static void
leak(server *s, int seconds, const char *format, params *p, const char *path)
{
	char		name[64];
	const char *snap[2];
	PGresult   *res;
	bool		tty = isatty(fileno(stderr));

	snprintf(name, sizeof(name), "pg_heapprof_%s_%ld", p->values[0], (long) time(NULL));
	snap[0] = name;
	snap[1] = p->values[0];
	PQclear(run(s, "SELECT @x.heapprof_snapshot($1, pid => $2::int)", &(params) {{name, p->values[0]}}, 2, 0));

	cancel_on_signal(NULL, 0);
	for (int i = 0; i < seconds && !interrupted; i++)
	{
		if (tty)
			fprintf(stderr, "\r%s: watching process %s for growth: %d/%d s ", progname, p->values[0], i, seconds);
		else if (i % 10 == 0)
			fprintf(stderr, "%s: watching process %s for growth: %d/%d s\n", progname, p->values[0], i, seconds);
		sleep(1);
	}
	if (tty)
		fprintf(stderr, "\r%s: watched process %s for %d s%20s\n", progname, p->values[0], seconds, "");
	p->values[5] = name;
	if (interrupted)
	{
		PQclear(exec(s, "SELECT @x.heapprof_drop_snapshot($1)", 1, snap, 0));
		fail("interrupted; nothing written");
	}
	write_report(s, format, p, path);
	res = exec(s, "SELECT @x.heapprof_drop_snapshot($1)", 1, snap, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		fprintf(stderr, "%s: warning: could not drop snapshot \"%s\": %s", progname, name,
				PQresultErrorMessage(res));
	PQclear(res);
}

#define LIST_SQL "SELECT pid, backend_type, coalesce(usename, ''), application_name, coalesce(state, ''), " \
	"CASE active WHEN true THEN 'on' WHEN false THEN 'off' ELSE '' END, " \
	"coalesce(pg_catalog.pg_size_pretty(allocated_bytes), ''), " \
	"coalesce(pg_catalog.to_char(sampling_since, 'YYYY-MM-DD HH24:MI:SS'), '') FROM @x.heapprof_backends() " \
	"WHERE $1::text IS NULL OR (backend_type OPERATOR(pg_catalog.=) $1 " \
	"OR backend_type OPERATOR(pg_catalog.=) $2) AND pid OPERATOR(pg_catalog.<>) pg_catalog.pg_backend_pid() " \
	"AND coalesce(application_name, '') OPERATOR(pg_catalog.<>) 'pg_heapprof' " \
	"ORDER BY pid"

/* One row per frame (stack number, bytes, objects, frame; a stack without frames has one NULL frame). */
#define STACKS_SQL "SELECT s.n, s.bytes, s.objects, f.name FROM (SELECT pg_catalog.row_number() OVER () AS n, " \
	"t.bytes, t.objects, t.frames FROM @x.heapprof_stacks(focus => $3, ignore => $4, fold => $2::bool, " \
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

/* A server's notices (an empty profile, ...) name the server. */
static void
notice(void *arg, const char *message)
{
	fprintf(stderr, "%s: %s: %s", progname, ((server *) arg)->label, message);
}

/*
 * A thread per server: connect, list, and query the chosen processes (by
 * type, never a pg_heapprof session: this one, or another reading the same
 * server meanwhile).
 */
static void *
serve(void *arg)
{
	server	   *s = arg;
	const char *sel[2] = {cfg.type, cfg.base_type};

	if (!connect_server(s))
		return NULL;
	if (cfg.several)
		PQsetNoticeProcessor(s->conn, notice, s);
	if (cfg.action == 'c')
	{
		s->procs = query(s, &s->pr, CAPTURES_SQL, 0, NULL, 0);
		return NULL;
	}
	s->procs = query(s, &s->pr, LIST_SQL, 2, sel, 0);
	if (s->procs == NULL || cfg.type == NULL)
		return NULL;
	if (cfg.window)
		s->cancel = PQgetCancel(s->conn);
	s->t = xcalloc((size_t) PQntuples(s->procs), sizeof(target));
	for (int i = 0; i < PQntuples(s->procs) && !interrupted; i++)
	{
		target	   *t = &s->t[s->nt++];
		const char *v[9] = {PQgetvalue(s->procs, i, 0), cfg.fold, cfg.objects, cfg.focus, cfg.ignore,
		NULL, NULL, cfg.peak, cfg.window};
		const char *mv[6] = {v[0], cfg.fold, cfg.focus, cfg.ignore, cfg.peak, cfg.window};
		char		sql[512];

		t->pid = v[0];
		t->type = PQgetvalue(s->procs, i, 1);
		t->base = cfg.base_type && strcmp(t->type, cfg.base_type) == 0;
		if (cfg.merge)
			t->res = query(s, &t->pr, STACKS_SQL, 6, mv, 0);
		else if (cfg.action == 'r')
			t->res = query(s, &t->pr, sql, report_sql(cfg.format, sql, sizeof(sql)), v,
						   strcmp(cfg.format, "pprof") == 0);
		else if (cfg.action == 'e' || cfg.action == 'x')
			t->res = query(s, &t->pr, cfg.action == 'e' ? "SELECT @x.heapprof_enable(pid => $1::int)" :
						   "SELECT @x.heapprof_disable(pid => $1::int)", 1, v, 0);
	}
	return NULL;
}

static void
env_error(void *ctx, hp_status code, const char *message)
{
	(void) ctx;
	(void) code;
	fail("merge: %s", message);
}

/*
 * Every chosen process's stacks as named stacks, their frames pointing into
 * the results; totals[k] is the k-th chosen process's own total, unsigned.
 * Returns the number of stacks.
 */
static size_t
collect(server *sv, int nsv, bool objects, hp_named_stack **out, const char ***frames, double **totals)
{
	size_t		rows = 0;
	size_t		n = 0;
	size_t		nf = 0;
	size_t		nt = 0;

	for (int i = 0; i < nsv; i++)
		for (int j = 0; j < sv[i].nt; j++)
		{
			rows += sv[i].t[j].res ? (size_t) PQntuples(sv[i].t[j].res) : 0;
			nt++;
		}
	*out = xcalloc(rows, sizeof(hp_named_stack));
	*frames = xcalloc(rows, sizeof(char *));
	*totals = xcalloc(nt, sizeof(double));
	nt = 0;
	for (int i = 0; i < nsv; i++)
		for (int j = 0; j < sv[i].nt; j++, nt++)
		{
			PGresult   *res = sv[i].t[j].res;
			const char *last = NULL;

			hp_named_stack *st = NULL;

			for (int r = 0; res && r < PQntuples(res); r++)
			{
				if (last == NULL || strcmp(last, PQgetvalue(res, r, 0)) != 0)
				{
					last = PQgetvalue(res, r, 0);
					st = &(*out)[n++];
					st->frames = &(*frames)[nf];
					st->base = sv[i].t[j].base;
					st->bytes = strtod(PQgetvalue(res, r, 1), NULL);
					st->objs = strtod(PQgetvalue(res, r, 2), NULL);
					(*totals)[nt] += objects ? st->objs : st->bytes;
				}
				if (!PQgetisnull(res, r, 3))
				{
					(*frames)[nf++] = PQgetvalue(res, r, 3);
					st->nframes++;
				}
			}
		}
	return n;
}

/* --merge --report: one report of the sum of every chosen process's stacks. */
static bool
write_merged(server *sv, int nsv, const char *format, const char *path, bool objects, bool drop_negative)
{
	hp_env		env = {.alloc = hp_malloc, .free = hp_free, .error = env_error};
	hp_options	o = HP_OPTIONS_DEFAULT;
	hp_named_stack *st;
	const char **frames;
	double	   *totals;
	size_t		n = collect(sv, nsv, objects, &st, &frames, &totals);
	hp_arena	a;
	hp_graph	g;
	hp_buf		b;
	bool		ok;
	char		program[64];

	env.ctx = &env;
	o.measure = objects ? HP_INUSE_OBJECTS : HP_INUSE_SPACE;
	o.drop_negative = drop_negative;
	snprintf(program, sizeof(program), "merged%s%s%s%s", strcmp(cfg.peak, "true") == 0 ? " peaks" : "",
			 cfg.window ? " allocations in " : "", cfg.window ? cfg.window : "",
			 cfg.window ? " s" : "");
	if (cfg.base_type)
		strncat(program, ", minus base", sizeof(program) - strlen(program) - 1);
	o.program = program;
	hp_arena_init(&a, &env);
	hp_graph_from_stacks(&a, st, n, &o, &g);
	hp_buf_init(&b, &a);
	if (strcmp(format, "text") == 0)
		hp_render_text(&a, &g, &o, SIZE_MAX, &b);
	else if (strcmp(format, "dot") == 0 || (strcmp(format, "svg") == 0 && cfg.svg_dot))
		hp_render_dot(&a, &g, &o, &b);
	else if (strcmp(format, "collapsed") == 0)
		hp_render_collapsed(&a, &g, &b);
	else if (strcmp(format, "flamegraph") == 0 || strcmp(format, "svg") == 0)
		hp_render_flamegraph(&a, &g, &o, o.program, cfg.base_type != NULL, &b);
	else if (strcmp(format, "pprof") == 0)
	{
		/* no addresses or mappings: the servers named every frame */
		hp_profile	p = {0};
		hp_located	l = {0};

		hp_render_pprof(&a, &p, &l, &g, &o, &b);
	}
	else
	{
		hp_row	   *rows;
		size_t		nrows = hp_top(&a, &g, 30, false, &rows);

		hp_buf_printf(&b, TOP_LINE, "rank", "flat", "flat%", "cum", "cum%", "function");
		for (size_t i = 0; i < nrows; i++)
		{
			char		r[24], f[24], fp[16], c[24], cp[16];

			snprintf(r, sizeof(r), "%zu", i + 1);
			snprintf(f, sizeof(f), "%lld", hp_whole(rows[i].flat));
			snprintf(c, sizeof(c), "%lld", hp_whole(rows[i].cum));
			hp_percent(rows[i].flat, g.local_total, fp, sizeof(fp));
			hp_percent(rows[i].cum, g.local_total, cp, sizeof(cp));
			hp_buf_printf(&b, TOP_LINE, r, f, fp, c, cp, rows[i].func->name);
		}
	}
	ok = put(format, b.data ? b.data : "", b.len, path);
	hp_arena_free(&a);
	free(st);
	free(frames);
	free(totals);
	return ok;
}

/* A server's name as part of a file name. */
static void
file_label(const char *label, char *buf, size_t size)
{
	size_t		i;

	for (i = 0; label[i] && i + 1 < size; i++)
		buf[i] = (label[i] >= 'a' && label[i] <= 'z') || (label[i] >= 'A' && label[i] <= 'Z') ||
			(label[i] >= '0' && label[i] <= '9') || label[i] == '.' || label[i] == '-' ? label[i] : '_';
	buf[i] = '\0';
}

static const char *
extension(const char *format)
{
	static const char *const ext[][2] = {{"dot", "dot"}, {"svg", "svg"}, {"flamegraph", "svg"},
	{"collapsed", "collapsed"}, {"pprof", "pb.gz"}, {"raw", "heap"}, {"text", "txt"}, {"top", "top"}};

	for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++)
		if (strcmp(ext[i][0], format) == 0)
			return ext[i][1];
	return "out";
}

#define LIST_LINE "%8s  %-22s %-12s %-18s %-14s %-9s %-10s %-19s"

/* One table over every server; with --merge, each process's share of the sum. */
static void
list(server *sv, int nsv, bool objects)
{
	hp_named_stack *st = NULL;
	const char **frames = NULL;
	double	   *totals = NULL;
	double		sum = 0;
	size_t		nt = 0;

	if (cfg.merge)
	{
		size_t		k = 0;

		collect(sv, nsv, objects, &st, &frames, &totals);
		for (int i = 0; i < nsv; i++)
			for (int j = 0; j < sv[i].nt; j++, k++)
				sum += sv[i].t[j].base ? -totals[k] : totals[k];
	}
	printf(LIST_LINE, "pid", "backend_type", "user", "application", "state", "profiling", "allocated",
		   "sampling since");
	if (cfg.merge)
		printf(" %12s %6s", objects ? "objects" : "profiled", "share");
	printf("  %-24s %s\n", "server", "role");
	for (int i = 0; i < nsv; i++)
	{
		server	   *s = &sv[i];
		const char *role = s->conn && PQstatus(s->conn) == CONNECTION_OK ?
			(s->standby ? "standby" : "primary") : "down";

		if (s->procs == NULL)
		{
			printf(LIST_LINE, "-", PQstatus(s->conn) == CONNECTION_OK ? "(error)" : "(unreachable)",
				   "", "", "", "", "", "");
			if (cfg.merge)
				printf(" %12s %6s", "", "");
			printf("  %-24s %s\n", s->label, role);
			continue;
		}
		for (int r = 0; r < PQntuples(s->procs); r++)
		{
			printf(LIST_LINE, PQgetvalue(s->procs, r, 0), PQgetvalue(s->procs, r, 1),
				   PQgetvalue(s->procs, r, 2), PQgetvalue(s->procs, r, 3), PQgetvalue(s->procs, r, 4),
				   PQgetvalue(s->procs, r, 5), PQgetvalue(s->procs, r, 6),
				   PQgetvalue(s->procs, r, 7));
			if (cfg.merge && s->t[r].res)
			{
				double		v = s->t[r].base && totals[nt] != 0 ? -totals[nt] : totals[nt];
				char		share[16];

				hp_percent(v, sum, share, sizeof(share));
				printf(" %12lld %6s", hp_whole(v), share);
			}
			else if (cfg.merge)
				printf(" %12s %6s", "error", "");
			nt += cfg.merge;
			printf("  %-24s %s\n", s->label, role);
		}
	}
	free(st);
	free(frames);
	free(totals);
}

#define CAPTURE_LINE "%-40s %8s %-12s %-12s %20s %10s %-19s  %-24s %s\n"

/* --captures: one table over every server, the query's first line last. */
static void
list_captures(server *sv, int nsv)
{
	printf(CAPTURE_LINE, "name", "pid", "user", "database", "queryid", "growth", "captured at", "server",
		   "query");
	for (int i = 0; i < nsv; i++)
	{
		server	   *s = &sv[i];

		if (s->procs == NULL)
		{
			printf(CAPTURE_LINE, PQstatus(s->conn) == CONNECTION_OK ? "(error)" : "(unreachable)",
				   "-", "", "", "", "", "", s->label, "");
			continue;
		}
		for (int r = 0; r < PQntuples(s->procs); r++)
			printf(CAPTURE_LINE, PQgetvalue(s->procs, r, 0), PQgetvalue(s->procs, r, 1),
				   PQgetvalue(s->procs, r, 2), PQgetvalue(s->procs, r, 3), PQgetvalue(s->procs, r, 4),
				   PQgetvalue(s->procs, r, 5), PQgetvalue(s->procs, r, 6), s->label,
				   PQgetvalue(s->procs, r, 7));
	}
}

/* Append a copy of s to the connection strings. */
static void
add_server(char ***list, int *n, int *cap, const char *s)
{
	if (*n == *cap)
	{
		*cap = *cap ? *cap * 2 : 8;
		*list = realloc(*list, (size_t) *cap * sizeof(char *));
		if (*list == NULL)
			fail("out of memory");
	}
	(*list)[(*n)++] = xstrdup(s);
}

/* Connection strings from a file, one per line; blank lines and # comments skipped. */
static void
read_servers(const char *path, char ***list, int *n, int *cap)
{
	FILE	   *f = fopen(path, "r");
	char	   *line = NULL;
	size_t		size = 0;

	if (f == NULL)
		bad_usage("could not read \"%s\": %s", path, strerror(errno));
	while (getline(&line, &size, f) >= 0)
	{
		char	   *s = line + strspn(line, " \t");
		size_t		len = strcspn(s, "\r\n");

		while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
			len--;
		if (len == 0 || s[0] == '#')
			continue;
		s[len] = '\0';
		add_server(list, n, cap, s);
	}
	free(line);
	fclose(f);
}

/*
 * --setup: heapprof_status()'s hint on standard output exactly as the
 * server wrote it (psql's aligned output adds a "+" to every line, which
 * breaks an environment file); the advice on names goes to standard error.
 * names_hint is read through to_jsonb so that a 1.0 database answers too.
 */
static int
setup(server *s)
{
	PGresult   *res;

	if (!connect_server(s))
	{
		report_problem(&s->pr, NULL);
		return 1;
	}
	res = run(s, "SELECT h.hint, pg_catalog.to_jsonb(h) OPERATOR(pg_catalog.->>) 'names_hint' "
			  "FROM @x.heapprof_status() h", NULL, 0, 0);
	if (PQgetisnull(res, 0, 0))
		fprintf(stderr, "%s: nothing to set up: profiling is usable and heapprof is preloaded\n", progname);
	else
		printf("%s\n", PQgetvalue(res, 0, 0));
	if (!PQgetisnull(res, 0, 1))
		fprintf(stderr, "%s: note: %s\n", progname, PQgetvalue(res, 0, 1));
	PQclear(res);
	PQfinish(s->conn);
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"list", no_argument, NULL, 'l'},
		{"enable", no_argument, NULL, 'e'},
		{"disable", no_argument, NULL, 'x'},
		{"report", required_argument, NULL, 'r'},
		{"seconds", required_argument, NULL, 's'},
		{"captures", no_argument, NULL, 10},
		{"setup", no_argument, NULL, 14},
		{"peak", no_argument, NULL, 11},
		{"allocations", required_argument, NULL, 12},
		{"dump", required_argument, NULL, 13},
		{"pid", required_argument, NULL, 'P'},
		{"backend-type", required_argument, NULL, 't'},
		{"merge", no_argument, NULL, 'm'},
		{"base-type", required_argument, NULL, 5},
		{"drop-negative", no_argument, NULL, 6},
		{"output", required_argument, NULL, 'o'},
		{"objects", no_argument, NULL, 1},
		{"fold", no_argument, NULL, 8},
		{"nofold", no_argument, NULL, 2},
		{"client-symbols", no_argument, NULL, 9},
		{"focus", required_argument, NULL, 3},
		{"ignore", required_argument, NULL, 4},
		{"dbname", required_argument, NULL, 'd'},
		{"servers", required_argument, NULL, 'f'},
		{"host", required_argument, NULL, 'h'},
		{"port", required_argument, NULL, 'p'},
		{"username", required_argument, NULL, 'U'},
		{"no-password", no_argument, NULL, 'w'},
		{"password", no_argument, NULL, 'W'},
		{"connect-timeout", required_argument, NULL, 7},
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, '?'},
		{NULL, 0, NULL, 0}
	};
	const char *host = NULL;
	const char *port = NULL;
	const char *user = NULL;
	const char *timeout = "5";
	const char *output = NULL;
	const char *pid = NULL;
	char	  **conninfos = NULL;
	int			nconn = 0;
	int			cap = 0;
	int			seconds = 0;
	bool		prompt = false;
	bool		never_prompt = false;
	bool		objects = false;
	bool		drop_negative = false;
	bool		listed = false;	/* --list, and no --report after it */
	bool		failed = false;
	const char *modifier;
	server	   *sv;
	int			nsv;
	char		sql[512];
	int			c;

	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-?") == 0))
	{
		usage(stdout);
		return 0;
	}
	cfg.action = 'l';
	cfg.fold = "true";
	cfg.objects = "false";
	cfg.peak = "false";
	while ((c = getopt_long(argc, argv, "lexr:s:P:t:mo:d:f:h:p:U:wWV?", longopts, NULL)) != -1)
	{
		switch (c)
		{
			case 'l':
			case 'e':
			case 'x':
				cfg.action = (char) c;
				listed = c == 'l';
				break;
			case 10:
				cfg.action = 'c';
				listed = false;
				break;
			case 14:
				cfg.action = 'u';
				listed = false;
				break;
			case 'r':
				cfg.format = optarg;
				if (cfg.action == 'l')
					cfg.action = 'r';
				listed = false;
				break;
			case 11:
				cfg.peak = "true";
				break;
			case 12:
				{
					size_t		whole = strspn(optarg, "0123456789");
					size_t		frac = 0;
					const char *rest = optarg + whole;
					double		v;

					if (*rest == '.')
					{
						frac = strspn(rest + 1, "0123456789");
						rest += 1 + frac;
					}
					v = strtod(optarg, NULL);
					if (*rest != '\0' || whole + frac == 0 || strlen(optarg) > 20 || !(v > 0 && v <= 3600))
						bad_usage("--allocations must be a number of seconds above 0 and at most 3600 (e.g. 10 or 0.5), not \"%s\"",
								  optarg);
					cfg.window = optarg;
				}
				break;
			case 13:
				cfg.dump = optarg;
				break;
			case 's':
				seconds = atoi(optarg);
				if (seconds <= 0 || seconds > 86400 || strspn(optarg, "0123456789") != strlen(optarg))
					bad_usage("--seconds must be between 1 and 86400");
				cfg.action = 's';
				break;
			case 'P':
				if (strspn(optarg, "0123456789") != strlen(optarg) || strlen(optarg) > 10 ||
					strtoll(optarg, NULL, 10) <= 0 || strtoll(optarg, NULL, 10) > INT_MAX)
					bad_usage("invalid pid \"%s\"", optarg);
				pid = optarg;
				break;
			case 't':
				cfg.type = optarg;
				break;
			case 'm':
				cfg.merge = true;
				break;
			case 5:
				cfg.base_type = optarg;
				break;
			case 6:
				drop_negative = true;
				break;
			case 'o':
				output = optarg;
				break;
			case 1:
				objects = true;
				cfg.objects = "true";
				break;
			case 8:
				cfg.fold = "true";
				break;
			case 2:
				cfg.fold = "false";
				break;
			case 9:
				client_symbols = true;
				break;
			case 3:
				cfg.focus = optarg;
				break;
			case 4:
				cfg.ignore = optarg;
				break;
			case 'd':
				add_server(&conninfos, &nconn, &cap, optarg);
				break;
			case 'f':
				read_servers(optarg, &conninfos, &nconn, &cap);
				break;
			case 'h':
				host = optarg;	/* the last one counts, as in psql */
				break;
			case 'p':
				port = optarg;
				break;
			case 'U':
				user = optarg;
				break;
			case 'w':
				never_prompt = true;
				break;
			case 'W':
				prompt = true;
				break;
			case 7:
				if (strspn(optarg, "0123456789") != strlen(optarg) || strlen(optarg) == 0 || strlen(optarg) > 6)
					bad_usage("invalid --connect-timeout \"%s\"", optarg);
				timeout = optarg;
				break;
			case 'V':
				printf("pg_heapprof (heapprof) 1.2\n");
				return 0;
			default:
				fprintf(stderr, "Try \"%s --help\" for more information.\n", progname);
				return 2;
		}
	}
	for (; optind < argc; optind++)
		add_server(&conninfos, &nconn, &cap, argv[optind]);
	nsv = nconn ? nconn : 1;

	/* which processes: --pid on one server, or --backend-type on all */
	if (cfg.format && report_sql(cfg.format, sql, sizeof(sql)) < 0)
	{
		fprintf(stderr, "%s: error: unknown format \"%s\"\n", progname, cfg.format);
		fprintf(stderr, "%s: hint: use dot, svg, flamegraph, collapsed, pprof, raw, text or top\n", progname);
		return 2;
	}
	if (cfg.action == 'u' && (nsv > 1 || pid || cfg.type || cfg.format || cfg.window || cfg.dump ||
							  strcmp(cfg.peak, "true") == 0))
		bad_usage("--setup takes one server and no process or report options");
	/* what to report: the heap now, its peak, a window of allocations, or a stored profile */
	modifier = strcmp(cfg.peak, "true") == 0 ? "--peak" : cfg.window ? "--allocations" : cfg.dump ? "--dump" : NULL;
	if (modifier)
	{
		if ((strcmp(cfg.peak, "true") == 0) + (cfg.window != NULL) + (cfg.dump != NULL) > 1)
			bad_usage("--peak, --allocations and --dump exclude each other");
		if (cfg.action == 's')
			bad_usage("--seconds (leak mode) reports what grew since a snapshot; it cannot be combined with %s",
					  modifier);
		if (listed || cfg.action == 'e' || cfg.action == 'x' || cfg.action == 'c')
			bad_usage("%s chooses what a report shows; use it with --report, not with --%s", modifier,
					  cfg.action == 'e' ? "enable" : cfg.action == 'x' ? "disable" :
					  cfg.action == 'c' ? "captures" : "list");
		cfg.action = 'r';
		if (cfg.format == NULL)
			cfg.format = "text";
		if (strcmp(cfg.format, "raw") == 0)
			bad_usage("the raw format is a process's live heap: heapprof_dump_raw takes no peak, seconds or dump argument; choose another format for %s",
					  modifier);
		if (client_symbols)
			bad_usage("--client-symbols names the frames of a process's live heap (heapprof_dump_portable); it cannot be combined with %s",
					  modifier);
		if (cfg.dump && (pid || cfg.type || cfg.merge || cfg.base_type))
			bad_usage("--dump reports a stored profile instead of a process; it excludes --pid, --backend-type and --merge");
		if (cfg.dump && nsv > 1)
			bad_usage("--dump names a stored profile of one server; give one server");
	}
	if (client_symbols && cfg.action == 's')
		bad_usage("--client-symbols names the frames of a process's live heap (heapprof_dump_portable); leak mode reports what grew, named by the server");
	if (cfg.action == 'c' && (pid || cfg.type || cfg.merge || cfg.base_type || cfg.format))
		bad_usage("--captures lists the statement captures of every server; it takes no --pid, --backend-type, --merge or --report");
	if (pid && cfg.type)
		bad_usage("--pid and --backend-type exclude each other");
	if (pid && nsv > 1)
		bad_usage("--pid names a process of one server; use --backend-type with several servers");
	if (cfg.action == 's' && pid == NULL)
		bad_usage("--seconds needs --pid");
	if (cfg.action != 'l' && cfg.action != 'c' && cfg.action != 'u' && pid == NULL && cfg.type == NULL && cfg.dump == NULL)
	{
		fprintf(stderr, "%s: error: --pid is required\n%s: hint: %s --list shows the processes\n",
				progname, progname, progname);
		return 2;
	}
	if ((cfg.merge || cfg.base_type) && (cfg.type == NULL || cfg.action == 'e' || cfg.action == 'x'))
		bad_usage("--merge and --base-type need --backend-type and --list or --report");
	if (cfg.base_type && (!cfg.merge || strcmp(cfg.base_type, cfg.type) == 0))
		bad_usage("--base-type needs --merge and a type other than --backend-type");
	if (drop_negative && cfg.base_type == NULL)
		bad_usage("--drop-negative needs --base-type");
	if (cfg.merge && cfg.format && strcmp(cfg.format, "raw") == 0)
		bad_usage("a raw dump cannot be merged; choose another format");
	if (cfg.action == 'r' && cfg.type && !cfg.merge)
	{
		struct stat st;

		if (output == NULL)
			output = ".";
		if (stat(output, &st) != 0 || !S_ISDIR(st.st_mode))
			bad_usage("--output must be a directory with --backend-type: \"%s\"", output);
	}
	if (cfg.format && strcmp(cfg.format, "svg") == 0)
		cfg.svg_dot = have_dot();

	/* settings every server shares; a connection string overrides them */
	if (host)
	{
		cfg.keywords[cfg.nkw] = "host";
		cfg.values[cfg.nkw++] = host;
	}
	if (port)
	{
		cfg.keywords[cfg.nkw] = "port";
		cfg.values[cfg.nkw++] = port;
	}
	if (user)
	{
		cfg.keywords[cfg.nkw] = "user";
		cfg.values[cfg.nkw++] = user;
	}
	cfg.keywords[cfg.nkw] = "connect_timeout";
	cfg.values[cfg.nkw++] = timeout;
	cfg.keywords[cfg.nkw] = "fallback_application_name";
	cfg.values[cfg.nkw++] = progname;
	if (prompt)
		password = getpass("Password: ");
	cfg.several = nsv > 1;
	cfg.may_prompt = nsv == 1 && !never_prompt && !prompt && isatty(fileno(stdin));

	sv = xcalloc((size_t) nsv, sizeof(server));
	for (int i = 0; i < nsv; i++)
	{
		sv[i].conninfo = i < nconn ? conninfos[i] : NULL;
		snprintf(sv[i].label, sizeof(sv[i].label), "server %d", i + 1);
	}

	if (cfg.action == 'u')
		return setup(&sv[0]);
	if (pid || cfg.dump)
	{
		params		p = {{pid, cfg.fold, cfg.objects, cfg.focus, cfg.ignore, NULL, cfg.dump, cfg.peak, cfg.window}};
		PGresult   *res;

		if (!connect_server(&sv[0]))
		{
			report_problem(&sv[0].pr, NULL);
			return 1;
		}
		switch (cfg.action)
		{
			case 'e':
			case 'x':
				res = run(&sv[0], cfg.action == 'e' ? "SELECT @x.heapprof_enable(pid => $1::int)" :
						  "SELECT @x.heapprof_disable(pid => $1::int)", &p, 1, 0);
				printf("profiling of process %s is %s\n", pid, strcmp(PQgetvalue(res, 0, 0), "t") == 0 ? "on" : "off");
				PQclear(res);
				break;
			case 'r':
				write_report(&sv[0], cfg.format, &p, output);
				break;
			case 's':
				leak(&sv[0], seconds, cfg.format ? cfg.format : "text", &p, output);
				break;
		}
		cancel_nsv = 0;
		if (sv[0].cancel)
			PQfreeCancel(sv[0].cancel);
		PQfinish(sv[0].conn);
		free(sv);
		for (int i = 0; i < nconn; i++)
			free(conninfos[i]);
		free(conninfos);
		return 0;
	}

	/* every server at once: a server that is down only delays its own thread */
	if (cfg.window)
		cancel_on_signal(sv, nsv);
	if (nsv == 1)
		serve(&sv[0]);
	else
	{
		for (int i = 0; i < nsv; i++)
			if (pthread_create(&sv[i].thread, NULL, serve, &sv[i]) != 0)
				fail("could not start a thread: %s", strerror(errno));
		for (int i = 0; i < nsv; i++)
			pthread_join(sv[i].thread, NULL);
	}
	if (interrupted)
		fail("interrupted; nothing written");

	for (int i = 0; i < nsv; i++)
	{
		failed |= report_problem(&sv[i].pr, nsv > 1 ? sv[i].label : NULL);
		for (int j = 0; j < sv[i].nt; j++)
		{
			char		where[320];

			snprintf(where, sizeof(where), "%s: process %s", sv[i].label, sv[i].t[j].pid);
			failed |= report_problem(&sv[i].t[j].pr, where);
		}
	}
	if (cfg.type && cfg.action != 'l')
	{
		int			chosen = 0;

		for (int i = 0; i < nsv; i++)
			chosen += sv[i].nt;
		if (chosen == 0)
		{
			fprintf(stderr, "%s: error: no %s process on %s\n", progname, cfg.type,
					nsv > 1 ? "any server" : "the server");
			failed = true;
		}
	}
	if (cfg.action == 'l')
		list(sv, nsv, objects);
	else if (cfg.action == 'c')
		list_captures(sv, nsv);
	else if (cfg.merge)
		failed |= !write_merged(sv, nsv, cfg.format, output, objects, drop_negative);
	else
		for (int i = 0; i < nsv; i++)
			for (int j = 0; j < sv[i].nt; j++)
			{
				target	   *t = &sv[i].t[j];

				if (t->res == NULL)
					continue;
				if (cfg.action == 'r')
				{
					char		name[256];
					char		path[4096];
					size_t		len;
					char	   *data = to_bytes(cfg.format, t->res, &len);

					file_label(sv[i].label, name, sizeof(name));
					snprintf(path, sizeof(path), "%s/%s-%s.%s", output, name, t->pid, extension(cfg.format));
					if (put(cfg.format, data, len, path))
						printf("%s  %s (%s): %s\n", sv[i].label, t->pid, t->type, path);
					else
						failed = true;
					free(data);
				}
				else
					printf("profiling of process %s (%s) on %s is %s\n", t->pid, t->type, sv[i].label,
						   strcmp(PQgetvalue(t->res, 0, 0), "t") == 0 ? "on" : "off");
			}

	cancel_nsv = 0;
	for (int i = 0; i < nsv; i++)
	{
		for (int j = 0; j < sv[i].nt; j++)
		{
			PQclear(sv[i].t[j].res);
			clear_problem(&sv[i].t[j].pr);
		}
		free(sv[i].t);
		if (sv[i].cancel)
			PQfreeCancel(sv[i].cancel);
		PQclear(sv[i].procs);
		clear_problem(&sv[i].pr);
		PQfinish(sv[i].conn);
	}
	free(sv);
	for (int i = 0; i < nconn; i++)
		free(conninfos[i]);
	free(conninfos);
	return failed ? 1 : 0;
}
