/*
 * connect.c -- one server of pg_heapprof: connecting, finding the
 * extension's schema, and asking queries, each answer either a result or
 * the server's message and hint kept for the main thread to print.
 *
 * Every query runs with search_path empty and names the extension's schema
 * ("@x." in the SQL text), as PostgreSQL's client tools do since
 * CVE-2018-1058: no object another role creates can stand in for one of
 * heapprof's or pg_catalog's.  An allocation window is asked without
 * blocking, so that Ctrl-C cancels it on the server and, with one server,
 * a progress line shows how long it has left.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "engine/sink.h"
#include "pg_heapprof.h"

void
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

/* The server's error, its hint in pg_heapprof's terms (hints.c). */
static void
set_result_problem(const server *s, problem *pr, PGresult *res)
{
	const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	char	   *hint = cli_hint(s->o, res, PQuser(s->conn));

	set_problem(pr, msg ? msg : PQresultErrorMessage(res), hint);
	free(hint);
}

void
clear_problem(problem *pr)
{
	free(pr->msg);
	free(pr->hint);
}

/*
 * sql with "@x." replaced by the server's extension schema, and "@stored" by
 * the name its reports give the stored-profile argument.
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

/* The result, or NULL with the server's error in pr. */
PGresult *
query(server *s, problem *pr, const char *sql, int nparams, const char *const *values, int binary)
{
	char		buf[2048];
	PGresult   *res;

	expand(s, sql, buf, sizeof(buf));
	res = PQexecParams(s->conn, buf, nparams, NULL, values, NULL, NULL, binary);
	if (PQresultStatus(res) == PGRES_TUPLES_OK || PQresultStatus(res) == PGRES_COMMAND_OK)
		return res;
	set_result_problem(s, pr, res);
	PQclear(res);
	return NULL;
}

/* One line on a terminal, rewritten each second; else one every 10 s. */
static void
progress(const char *pid, long elapsed, double seconds, long *shown)
{
	bool		tty = isatty(fileno(stderr));

	if (elapsed == *shown || elapsed >= seconds)
		return;
	if (tty)
		fprintf(stderr, "\r%s: watching what process %s allocates: %ld/%g s ", progname, pid, elapsed, seconds);
	else if (elapsed % 10 == 0)
		fprintf(stderr, "%s: watching what process %s allocates: %ld/%g s\n", progname, pid, elapsed, seconds);
	*shown = elapsed;
}

/*
 * query() of an allocation window (--allocations; values[0] is the pid):
 * the server answers when the window ends.  NULL without a
 * problem when Ctrl-C interrupted it (the server stops the window and keeps
 * nothing of it).
 */
PGresult *
ask_window(server *s, problem *pr, const char *sql, int nparams, const char *const *values, int binary)
{
	char		buf[2048];
	double		seconds = strtod(s->o->window, NULL);
	bool		show = s->o->nconn <= 1;	/* threads print nothing */
	bool		tty = isatty(fileno(stderr));
	time_t		start = time(NULL);
	long		shown = -1;
	PGresult   *res = NULL;
	PGresult   *r;

	expand(s, sql, buf, sizeof(buf));
	if (!PQsendQueryParams(s->conn, buf, nparams, NULL, values, NULL, NULL, binary))
	{
		set_problem(pr, PQerrorMessage(s->conn), NULL);
		return NULL;
	}
	while (PQisBusy(s->conn) && !interrupted)
	{
		struct timeval tv = {1, 0};
		fd_set		fds;

		if (show)
			progress(values[0], (long) (time(NULL) - start), seconds, &shown);
		FD_ZERO(&fds);
		FD_SET(PQsocket(s->conn), &fds);
		if (select(PQsocket(s->conn) + 1, &fds, NULL, NULL, &tv) < 0 && errno != EINTR)
			fail("could not wait for the server: %s", strerror(errno));
		if (!PQconsumeInput(s->conn))
			break;				/* PQgetResult tells why */
	}
	if (tty && shown >= 0)
	{
		if (interrupted)
			fputc('\n', stderr);
		else
			fprintf(stderr, "\r%s: watched what process %s allocates for %g s%20s\n", progname, values[0],
					seconds, "");
	}
	if (interrupted)			/* maybe before the cancel's answer came */
		return NULL;
	while ((r = PQgetResult(s->conn)) != NULL)
		if (res == NULL)
			res = r;
		else
			PQclear(r);
	if (res == NULL)
		set_problem(pr, PQerrorMessage(s->conn), NULL);
	else if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		set_result_problem(s, pr, res);
		PQclear(res);
		res = NULL;
	}
	return res;
}

static void
connect_once(server *s, const char *password)
{
	const char *kw[16];
	const char *val[16];
	int			n = s->o->nkw;

	memcpy(kw, s->o->keywords, n * sizeof(kw[0]));
	memcpy(val, s->o->values, n * sizeof(val[0]));
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

/* -W's, or the one asked for when the server wanted one */
static char *password;

/* -W: ask once, before any thread connects */
void
ask_password(void)
{
	password = getpass("Password: ");
}

/*
 * A server's notices (an empty profile, ...), naming the server when there
 * are several, with their hints in pg_heapprof's terms (hints.c); every
 * field through the terminal sink, into this thread's own buffers, cut to
 * their size.
 */
static void
notice(void *arg, const PGresult *res)
{
	const server *s = arg;
	const char *severity = PQresultErrorField(res, PG_DIAG_SEVERITY);
	const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	const char *detail = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL);
	char	   *hint = cli_hint(s->o, res, PQuser(s->conn));
	char		label[1024];
	char		shown[8192];
	char		sev[64];

	if (msg == NULL)
	{
		msg = PQresultErrorMessage(res);
		fprintf(stderr, "%s: %s", progname, hp_sink_str(HP_SINK_LINES, msg, strlen(msg), shown, sizeof(shown)));
	}
	else
	{
		severity = severity ? severity : "NOTICE";
		fprintf(stderr, "%s: %s%s%s: ", progname,
				s->o->nconn > 1 ? hp_sink_str(HP_SINK_TERM, s->label, strlen(s->label), label, sizeof(label)) : "",
				s->o->nconn > 1 ? ": " : "", hp_sink_str(HP_SINK_TERM, severity, strlen(severity), sev, sizeof(sev)));
		fprintf(stderr, "%s\n", hp_sink_str(HP_SINK_TERM, msg, strlen(msg), shown, sizeof(shown)));
	}
	if (detail)
		fprintf(stderr, "%s: detail: %s\n", progname, hp_sink_str(HP_SINK_TERM, detail, strlen(detail), shown, sizeof(shown)));
	if (hint)
		fprintf(stderr, "%s: hint: %s\n", progname, hp_sink_str(HP_SINK_TERM, hint, strlen(hint), shown, sizeof(shown)));
	free(hint);
}

/* Connect, empty search_path, find the extension's schema and the server's role. */
static bool
open_session(server *s)
{
	PGresult   *res;

	connect_once(s, password);
	if (PQstatus(s->conn) == CONNECTION_BAD && PQconnectionNeedsPassword(s->conn) && s->o->may_prompt)
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
	PQsetNoticeReceiver(s->conn, notice, s);
	res = query(s, &s->pr, "SELECT pg_catalog.set_config('search_path', '', false), "
				"pg_catalog.pg_is_in_recovery()", 0, NULL, 0);
	if (res == NULL)
		return false;
	s->standby = strcmp(cell(res, 0, 1), "t") == 0;
	PQclear(res);
	return true;
}

/* Is the extension version "MAJOR.MINOR" at least major.minor?  False for one that is not a version. */
static bool
version_at_least(const char *version, int major, int minor)
{
	int			ma;
	int			mi;
	char		end;

	if (sscanf(version, "%d.%d%c", &ma, &mi, &end) != 2)
		return false;
	return ma > major || (ma == major && mi >= minor);
}

bool
connect_server(server *s)
{
	PGresult   *res;
	char		msg[300];
	bool		before_1_2;

	if (!open_session(s))
		return false;
	res = query(s, &s->pr, "SELECT pg_catalog.quote_ident(n.nspname), e.extversion FROM pg_catalog.pg_extension e "
				"JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace "
				"WHERE e.extname OPERATOR(pg_catalog.=) 'heapprof'", 0, NULL, 0);
	if (res == NULL)
		return false;
	if (PQntuples(res) == 0)
	{
		snprintf(msg, sizeof(msg), "the heapprof extension is not installed in database \"%s\"", PQdb(s->conn));
		set_problem(&s->pr, msg, s->standby ? "create it on the primary; it reaches standbys through WAL" :
					"run CREATE EXTENSION heapprof; in that database");
		PQclear(res);
		return false;
	}
	snprintf(s->schema, sizeof(s->schema), "%s", cell(res, 0, 0));
	/* 1.0 and 1.1 called it dump, and had no labels */
	before_1_2 = strcmp(cell(res, 0, 1), "1.0") == 0 || strcmp(cell(res, 0, 1), "1.1") == 0;
	s->stored_arg = before_1_2 ? "dump" : "stored";
	if (before_1_2 && s->o->group_by && strcmp(s->o->group_by, "function") != 0)
	{
		snprintf(msg, sizeof(msg), "--group-by %s needs heapprof 1.2 on the server; database \"%s\" has %s",
				 s->o->group_by, PQdb(s->conn), cell(res, 0, 1));
		set_problem(&s->pr, msg, s->standby ? "run ALTER EXTENSION heapprof UPDATE; on the primary; it reaches standbys through WAL" :
					"run ALTER EXTENSION heapprof UPDATE; in that database");
		PQclear(res);
		return false;
	}
	if (HISTORY_ACTION(s->o->action) && !version_at_least(cell(res, 0, 1), 1, 4))
	{
		snprintf(msg, sizeof(msg), "%s needs heapprof 1.4 on the server; database \"%s\" has %s",
				 s->o->action == ACT_GROWTH ? "--growth" : "--timeline", PQdb(s->conn), cell(res, 0, 1));
		set_problem(&s->pr, msg, s->standby ? "run ALTER EXTENSION heapprof UPDATE; on the primary; it reaches standbys through WAL" :
					"run ALTER EXTENSION heapprof UPDATE; in that database");
		PQclear(res);
		return false;
	}
	PQclear(res);
	return true;
}
