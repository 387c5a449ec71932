/*
 * pg_heapprof -- heap profiles of a PostgreSQL server's processes, from the shell.
 *
 * A libpq client of the heapprof extension: lists the processes it can
 * reach, switches their profiling, and writes any report of one of them to
 * a file (dot, svg, flamegraph, collapsed, pprof, raw, text, top).  Leak
 * mode takes a snapshot, waits, and writes what grew.  Connection options
 * and PG* environment variables work as for psql.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libpq-fe.h"

#include "client_report.h"

static const char *progname = "pg_heapprof";
static bool client_symbols;	/* --client-symbols */

static void
usage(FILE *f)
{
	fprintf(f,
			"%s lists PostgreSQL server processes and writes their jemalloc heap profiles.\n\n"
			"Usage:\n  %s [OPTION]... [DBNAME]\n\n"
			"Actions (default: --list):\n"
			"  -l, --list             list the processes that can be profiled\n"
			"  -e, --enable           switch profiling of process --pid on\n"
			"  -x, --disable          switch profiling of process --pid off\n"
			"  -r, --report=FORMAT    write a report of process --pid; FORMAT is dot, svg,\n"
			"                         flamegraph, collapsed, pprof, raw, text or top\n"
			"  -s, --seconds=N        leak mode: snapshot process --pid, wait N seconds,\n"
			"                         then write what grew (FORMAT from --report, default text)\n\n"
			"Options:\n"
			"  -P, --pid=PID          the server process to act on (see --list)\n"
			"  -o, --output=FILE      write the report to FILE (default: standard output)\n"
			"      --objects          count objects instead of bytes\n"
			"      --no-fold          keep PostgreSQL's allocator frames (palloc & co.)\n"
			"      --focus=REGEX      only stacks with a frame matching REGEX\n"
			"      --ignore=REGEX     leave out stacks with a frame matching REGEX\n"
			"      --client-symbols   name frames here, from this machine's files and debuginfod\n"
			"                         (DEBUGINFOD_URLS), with heapprof-report\n"
			"  -V, --version          output version information, then exit\n"
			"  -?, --help             show this help, then exit\n\n"
			"Connection options:\n"
			"  -d, --dbname=DBNAME    database name or connection string\n"
			"  -h, --host=HOSTNAME    database server host or socket directory\n"
			"  -p, --port=PORT        database server port\n"
			"  -U, --username=USER    database user name\n"
			"  -w, --no-password      never prompt for password\n"
			"  -W, --password         force password prompt\n\n"
			"The svg format is Graphviz's rendering of the dot graph when \"dot\" is\n"
			"installed, else the flame graph.  Needs the heapprof extension in the\n"
			"database, and heapprof in shared_preload_libraries to reach other processes.\n",
			progname, progname);
}

static void
fail(const char *fmt,...) __attribute__((format(printf, 1, 2), noreturn));

static void
fail(const char *fmt,...)
{
	va_list		ap;

	fprintf(stderr, "%s: error: ", progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* A server error: message and hint, as psql shows them; exits. */
static void
fail_result(PGresult *res)
{
	const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	const char *hint = PQresultErrorField(res, PG_DIAG_MESSAGE_HINT);

	fprintf(stderr, "%s: error: %s\n", progname, msg ? msg : PQresultErrorMessage(res));
	if (hint)
		fprintf(stderr, "%s: hint: %s\n", progname, hint);
	PQclear(res);
	exit(1);
}

/* The report's arguments, as named parameters $1.. of every report function. */
typedef struct params
{
	const char *values[6];		/* pid, fold, objects, focus, ignore, base */
} params;

#define REPORT_ARGS "pid => $1::int, fold => $2::bool, objects => $3::bool, " \
	"focus => $4, ignore => $5, base => $6"

/* The extension's schema, quoted; "@x." in a query stands for it. */
static char ext_schema[2 * 64 + 3];

/*
 * Send sql with "@x." replaced by the extension's schema: with search_path
 * empty (see main), every name is pg_catalog's or the extension's, so no
 * object another role creates can stand in for one of them.
 */
static PGresult *
exec(PGconn *conn, const char *sql, int nparams, const char *const *values, int binary)
{
	char		buf[2048];
	size_t		n = 0;

	for (const char *c = sql; *c; c++)
	{
		const char *part = c;
		size_t		len = 1;

		if (strncmp(c, "@x.", 3) == 0)
		{
			part = ext_schema;
			len = strlen(ext_schema);
			c += 2;
		}
		if (n + len + 2 > sizeof(buf))
			fail("query too long");
		memcpy(buf + n, part, len);
		n += len;
		if (part == ext_schema)
			buf[n++] = '.';
	}
	buf[n] = '\0';
	return PQexecParams(conn, buf, nparams, NULL, values, NULL, NULL, binary);
}

static PGresult *
run(PGconn *conn, const char *sql, const params *p, int nparams, int binary)
{
	PGresult   *res = exec(conn, sql, nparams, p ? p->values : NULL, binary);

	if (PQresultStatus(res) != PGRES_TUPLES_OK && PQresultStatus(res) != PGRES_COMMAND_OK)
		fail_result(res);
	return res;
}

static FILE *
open_output(const char *path)
{
	FILE	   *f;

	if (path == NULL || strcmp(path, "-") == 0)
		return stdout;
	f = fopen(path, "wb");
	if (f == NULL)
		fail("could not open \"%s\" for writing: %s", path, strerror(errno));
	return f;
}

static void
close_output(FILE *f, const char *path)
{
	bool		failed = ferror(f) != 0;

	if ((f != stdout && fclose(f) != 0) || (f == stdout && fflush(f) != 0) || failed)
		fail("could not write \"%s\": %s", path ? path : "standard output", strerror(errno));
}

/* Every row's first column, one per line (the SETOF text reports). */
static void
write_rows(PGresult *res, FILE *f)
{
	for (int i = 0; i < PQntuples(res); i++)
		fprintf(f, "%s\n", PQgetvalue(res, i, 0));
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

static void
write_report(PGconn *conn, const char *format, const params *p, const char *path)
{
	char		sql[512];
	PGresult   *res;
	FILE	   *f;

	if (client_symbols && strcmp(format, "raw") != 0)
	{
		res = run(conn, "SELECT @x.heapprof_dump_portable(pid => $1::int)", p, 1, 0);
		if (hp_client_report(progname, PQgetvalue(res, 0, 0), (size_t) PQgetlength(res, 0, 0), format, &p->values[1], path) != 0)
			exit(1);
		PQclear(res);
		return;
	}
	if (strcmp(format, "svg") == 0 && have_dot())
	{
		/* Graphviz draws the dot graph, fed through a pipe: no shell, no file */
		char	   *argv[] = {"dot", "-Tsvg", "-o", (char *) (path ? path : "/dev/stdout"), NULL};
		int			fds[2];
		int			rc;
		FILE	   *to_dot;
		pid_t		child;
		int			status;
		bool		ok;

		res = run(conn, "SELECT * FROM @x.heapprof_dump_dot(" REPORT_ARGS ")", p, 6, 0);
		if (path && strcmp(path, "-") == 0)
			argv[3] = "/dev/stdout";
		if (pipe(fds) < 0)
			fail("could not create a pipe: %s", strerror(errno));
		child = fork();
		if (child < 0)
			fail("could not start dot: %s", strerror(errno));
		if (child == 0)
		{
			close(fds[1]);
			exit(run_program(argv, fds[0]) == 0 ? 0 : 1);
		}
		close(fds[0]);
		to_dot = fdopen(fds[1], "w");
		signal(SIGPIPE, SIG_IGN);
		if (to_dot == NULL)
			fail("could not write to dot: %s", strerror(errno));
		write_rows(res, to_dot);
		PQclear(res);
		ok = !ferror(to_dot);
		rc = fclose(to_dot);
		while (waitpid(child, &status, 0) < 0 && errno == EINTR)
			;
		if (!ok || rc != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
			fail("dot could not draw the graph into \"%s\"", argv[3]);
		return;
	}
	if (strcmp(format, "svg") == 0 || strcmp(format, "flamegraph") == 0)
		snprintf(sql, sizeof(sql), "SELECT @x.heapprof_dump_flamegraph(%s)", REPORT_ARGS);
	else if (strcmp(format, "pprof") == 0)
		snprintf(sql, sizeof(sql), "SELECT @x.heapprof_dump_pprof(%s)", REPORT_ARGS);
	else if (strcmp(format, "raw") == 0)
		snprintf(sql, sizeof(sql), "SELECT @x.heapprof_dump_raw(pid => $1::int)");
	else if (strcmp(format, "dot") == 0 || strcmp(format, "collapsed") == 0 || strcmp(format, "text") == 0)
		snprintf(sql, sizeof(sql), "SELECT * FROM @x.heapprof_dump_%s(%s)", format, REPORT_ARGS);
	else if (strcmp(format, "top") == 0)
		snprintf(sql, sizeof(sql),
				 "SELECT rank, flat_bytes, flat_pct, cum_bytes, cum_pct, function FROM @x.heapprof_top(30, %s)",
				 REPORT_ARGS);
	else
	{
		fprintf(stderr, "%s: error: unknown format \"%s\"\n", progname, format);
		fprintf(stderr, "%s: hint: use dot, svg, flamegraph, collapsed, pprof, raw, text or top\n", progname);
		exit(2);
	}
	res = run(conn, sql, p, strcmp(format, "raw") == 0 ? 1 : 6, strcmp(format, "pprof") == 0);
	f = open_output(path);
	if (strcmp(format, "pprof") == 0)
		fwrite(PQgetvalue(res, 0, 0), 1, (size_t) PQgetlength(res, 0, 0), f);
	else if (strcmp(format, "top") == 0)
	{
		fprintf(f, "%4s %14s %7s %14s %7s  %s\n", "rank", "flat", "flat%", "cum", "cum%", "function");
		for (int i = 0; i < PQntuples(res); i++)
			fprintf(f, "%4s %14s %7s %14s %7s  %s\n", PQgetvalue(res, i, 0), PQgetvalue(res, i, 1),
					PQgetvalue(res, i, 2), PQgetvalue(res, i, 3), PQgetvalue(res, i, 4),
					PQgetvalue(res, i, 5));
	}
	else
		write_rows(res, f);
	PQclear(res);
	close_output(f, path);
}

static void
list(PGconn *conn)
{
	PGresult   *res = run(conn, "SELECT pid, backend_type, coalesce(usename, ''), application_name, "
							"coalesce(state, ''), CASE active WHEN true THEN 'on' WHEN false THEN 'off' ELSE '' END, "
							"coalesce(pg_catalog.pg_size_pretty(allocated_bytes), '') FROM @x.heapprof_backends() ORDER BY pid",
							NULL, 0, 0);

	printf("%8s  %-22s %-12s %-18s %-14s %-9s %s\n", "pid", "backend_type", "user",
		   "application", "state", "profiling", "allocated");
	for (int i = 0; i < PQntuples(res); i++)
		printf("%8s  %-22s %-12s %-18s %-14s %-9s %s\n", PQgetvalue(res, i, 0), PQgetvalue(res, i, 1),
			   PQgetvalue(res, i, 2), PQgetvalue(res, i, 3), PQgetvalue(res, i, 4),
			   PQgetvalue(res, i, 5), PQgetvalue(res, i, 6));
	PQclear(res);
}

static volatile sig_atomic_t interrupted;

static void
on_signal(int sig)
{
	interrupted = sig;
}

/* Leak mode: snapshot, wait with a progress line, report the growth, drop it. */
static void
leak(PGconn *conn, int seconds, const char *format, params *p, const char *path)
{
	char		name[64];
	const char *snap[2];
	PGresult   *res;
	bool		tty = isatty(fileno(stderr));

	snprintf(name, sizeof(name), "pg_heapprof_%s_%ld", p->values[0], (long) time(NULL));
	snap[0] = name;
	snap[1] = p->values[0];
	res = exec(conn, "SELECT @x.heapprof_snapshot($1, pid => $2::int)", 2, snap, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		fail_result(res);
	PQclear(res);

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	for (int s = 0; s < seconds && !interrupted; s++)
	{
		if (tty)
			fprintf(stderr, "\r%s: watching process %s for growth: %d/%d s ", progname, p->values[0], s, seconds);
		else if (s % 10 == 0)
			fprintf(stderr, "%s: watching process %s for growth: %d/%d s\n", progname, p->values[0], s, seconds);
		sleep(1);
	}
	if (tty)
		fprintf(stderr, "\r%s: watched process %s for %d s%20s\n", progname, p->values[0], seconds, "");
	p->values[5] = name;
	if (interrupted)
	{
		res = exec(conn, "SELECT @x.heapprof_drop_snapshot($1)", 1, snap, 0);
		PQclear(res);
		fail("interrupted; nothing written");
	}
	write_report(conn, format, p, path);
	res = exec(conn, "SELECT @x.heapprof_drop_snapshot($1)", 1, snap, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		fprintf(stderr, "%s: warning: could not drop snapshot \"%s\": %s", progname, name,
				PQresultErrorMessage(res));
	PQclear(res);
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
		{"pid", required_argument, NULL, 'P'},
		{"output", required_argument, NULL, 'o'},
		{"objects", no_argument, NULL, 1},
		{"no-fold", no_argument, NULL, 2},
		{"focus", required_argument, NULL, 3},
		{"ignore", required_argument, NULL, 4},
		{"client-symbols", no_argument, NULL, 5},
		{"dbname", required_argument, NULL, 'd'},
		{"host", required_argument, NULL, 'h'},
		{"port", required_argument, NULL, 'p'},
		{"username", required_argument, NULL, 'U'},
		{"no-password", no_argument, NULL, 'w'},
		{"password", no_argument, NULL, 'W'},
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, '?'},
		{NULL, 0, NULL, 0}
	};
	const char *keywords[8];
	const char *values[8];
	int			nkw = 0;
	const char *host = NULL;
	const char *port = NULL;
	const char *user = NULL;
	char	   *password = NULL;
	char		action = 'l';
	const char *format = NULL;
	const char *output = NULL;
	const char *dbname = NULL;
	int			seconds = 0;
	bool		prompt = false;
	bool		never_prompt = false;
	params		p = {{NULL, "true", "false", NULL, NULL, NULL}};
	PGconn	   *conn;
	PGresult   *res;
	int			c;

	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-?") == 0))
	{
		usage(stdout);
		return 0;
	}
	while ((c = getopt_long(argc, argv, "lexr:s:P:o:d:h:p:U:wWV?", longopts, NULL)) != -1)
	{
		switch (c)
		{
			case 'l':
			case 'e':
			case 'x':
				action = (char) c;
				break;
			case 'r':
				format = optarg;
				if (action == 'l')
					action = 'r';
				break;
			case 's':
				seconds = atoi(optarg);
				if (seconds <= 0 || seconds > 86400 || strspn(optarg, "0123456789") != strlen(optarg))
				{
					fprintf(stderr, "%s: error: --seconds must be between 1 and 86400\n", progname);
					return 2;
				}
				action = 's';
				break;
			case 'P':
				if (strspn(optarg, "0123456789") != strlen(optarg) || strlen(optarg) > 10 ||
					strtoll(optarg, NULL, 10) <= 0 || strtoll(optarg, NULL, 10) > INT_MAX)
				{
					fprintf(stderr, "%s: error: invalid pid \"%s\"\n", progname, optarg);
					return 2;
				}
				p.values[0] = optarg;
				break;
			case 'o':
				output = optarg;
				break;
			case 1:
				p.values[2] = "true";
				break;
			case 2:
				p.values[1] = "false";
				break;
			case 3:
				p.values[3] = optarg;
				break;
			case 4:
				p.values[4] = optarg;
				break;
			case 5:
				client_symbols = true;
				break;
			case 'd':
				dbname = optarg;
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
			case 'V':
				printf("pg_heapprof (heapprof) 1.0\n");
				return 0;
			default:
				fprintf(stderr, "Try \"%s --help\" for more information.\n", progname);
				return 2;
		}
	}
	if (optind < argc && dbname == NULL)
		dbname = argv[optind++];
	if (optind < argc)
	{
		fprintf(stderr, "%s: error: too many command-line arguments (first is \"%s\")\n", progname, argv[optind]);
		return 2;
	}
	if (action != 'l' && p.values[0] == NULL)
	{
		fprintf(stderr, "%s: error: --pid is required\n%s: hint: %s --list shows the processes\n",
				progname, progname, progname);
		return 2;
	}
	/* at most 6 settings and the terminator: keywords has room for 8 */
	if (host)
	{
		keywords[nkw] = "host";
		values[nkw++] = host;
	}
	if (port)
	{
		keywords[nkw] = "port";
		values[nkw++] = port;
	}
	if (user)
	{
		keywords[nkw] = "user";
		values[nkw++] = user;
	}
	if (dbname)
	{
		keywords[nkw] = "dbname";
		values[nkw++] = dbname;
	}
	keywords[nkw] = "fallback_application_name";
	values[nkw++] = progname;
	if (prompt)
		password = getpass("Password: ");
	keywords[nkw] = password ? "password" : NULL;
	values[nkw] = password;
	keywords[nkw + 1] = NULL;
	values[nkw + 1] = NULL;

	conn = PQconnectdbParams(keywords, values, true);
	if (PQstatus(conn) == CONNECTION_BAD && PQconnectionNeedsPassword(conn) && !never_prompt && !prompt &&
		isatty(fileno(stdin)))
	{
		PQfinish(conn);
		keywords[nkw] = "password";
		values[nkw] = getpass("Password: ");
		conn = PQconnectdbParams(keywords, values, true);
	}
	if (PQstatus(conn) != CONNECTION_OK)
	{
		char	   *msg = PQerrorMessage(conn);
		size_t		len = strlen(msg);

		while (len > 0 && msg[len - 1] == '\n')
			msg[--len] = '\0';
		fail("%s", msg);
	}

	/* as PostgreSQL's client tools do since CVE-2018-1058 */
	PQclear(run(conn, "SELECT pg_catalog.set_config('search_path', '', false)", NULL, 0, 0));
	res = run(conn, "SELECT pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_extension e "
			  "JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace "
			  "WHERE e.extname OPERATOR(pg_catalog.=) 'heapprof'", NULL, 0, 0);
	if (PQntuples(res) == 0)
	{
		fprintf(stderr, "%s: error: the heapprof extension is not installed in database \"%s\"\n",
				progname, PQdb(conn));
		fprintf(stderr, "%s: hint: run CREATE EXTENSION heapprof; in that database\n", progname);
		PQclear(res);
		PQfinish(conn);
		return 1;
	}
	snprintf(ext_schema, sizeof(ext_schema), "%s", PQgetvalue(res, 0, 0));
	PQclear(res);

	switch (action)
	{
		case 'l':
			list(conn);
			break;
		case 'e':
		case 'x':
			res = run(conn, action == 'e' ? "SELECT @x.heapprof_enable(pid => $1::int)" :
					  "SELECT @x.heapprof_disable(pid => $1::int)", &p, 1, 0);
			printf("profiling of process %s is %s\n", p.values[0],
				   strcmp(PQgetvalue(res, 0, 0), "t") == 0 ? "on" : "off");
			PQclear(res);
			break;
		case 'r':
			write_report(conn, format, &p, output);
			break;
		case 's':
			leak(conn, seconds, format ? format : "text", &p, output);
			break;
	}
	PQfinish(conn);
	return 0;
}
