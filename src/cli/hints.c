/*
 * hints.c -- what the server says, in pg_heapprof's terms.
 *
 * A server hint written for psql users names SQL calls; a pg_heapprof user
 * needs the option that does the same, so every such call (and argument:
 * since => '1 hour' is --since '1 hour') is translated here, from one
 * table.  PostgreSQL's own "permission denied for function
 * heapprof_..." (42501) comes before any heapprof code runs, so the server
 * knows nothing of the action (its hint, when heapprof is preloaded, only
 * says how workflows are granted): here it names the workflow the action
 * needs and the heapprof_grant() call that gives it.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_heapprof.h"

/* Any argument of a few words: a SQL literal's inside, an interval's. */
#define WORDS "0123456789 abcdefghijklmnopqrstuvwxyz"

/*
 * SQL in server hints, and the option that does it; %s: the call's
 * argument (digits, or the characters of chars), up to end.
 */
static const struct
{
	const char *sql;
	const char *end;			/* NULL: no argument */
	const char *cli;
	const char *chars;			/* NULL: digits */
}			calls[] = {
	{"heapprof_enable(pid => ", ")", "pg_heapprof --enable --pid %s", NULL},
	{"heapprof_status(pid => ", ")", "pg_heapprof --list", NULL},
	{"heapprof_backends()", NULL, "pg_heapprof --list", NULL},
	{"heapprof_status()", NULL, "pg_heapprof --setup", NULL},
	{"heapprof_dump_portable()", NULL, "pg_heapprof --client-symbols", NULL},
	{"heapprof_dump_raw()", NULL, "pg_heapprof --report raw", NULL},
	/* heapprof_growth() and heapprof_dump_timeline(): their window */
	{"since => '", "'", "--since '%s'", WORDS},
};

/* hint with every call of the table replaced by its option, in f. */
static void
translate_calls(FILE *f, const char *hint)
{
	while (*hint)
	{
		size_t		i;

		for (i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
			if (strncmp(hint, calls[i].sql, strlen(calls[i].sql)) == 0)
				break;
		if (i == sizeof(calls) / sizeof(calls[0]))
		{
			fputc(*hint++, f);
			continue;
		}
		{
			const char *arg = hint + strlen(calls[i].sql);
			const char *end = calls[i].end ? strstr(arg, calls[i].end) : arg;
			const char *mark = strstr(calls[i].cli, "%s");

			if (end == NULL || (size_t) (end - arg) != strspn(arg, calls[i].chars ? calls[i].chars : "0123456789"))
			{
				fputc(*hint++, f);
				continue;
			}
			if (mark)
				fprintf(f, "%.*s%.*s%s", (int) (mark - calls[i].cli), calls[i].cli, (int) (end - arg), arg,
						mark + 2);
			else
				fputs(calls[i].cli, f);
			hint = calls[i].end ? end + strlen(calls[i].end) : arg;
		}
	}
}

/*
 * The heapprof function PostgreSQL's "permission denied for function NAME"
 * names, in any language, into name: the last heapprof_ identifier of the
 * message that is no part of a path or a file name.  False if none.
 */
static bool
denied_function(const char *msg, char *name, size_t size)
{
	static const char ident[] = "abcdefghijklmnopqrstuvwxyz0123456789_";
	bool		found = false;

	for (const char *p = strstr(msg, "heapprof_"); p; p = strstr(p + 1, "heapprof_"))
	{
		size_t		n = strspn(p, ident);

		if ((p == msg || (!strchr(ident, p[-1]) && !strchr("/.", p[-1]))) &&
			(p[n] == '\0' || !strchr("/.", p[n])) && n < size)
		{
			memcpy(name, p, n);
			name[n] = '\0';
			found = true;
		}
	}
	return found;
}

/* The workflow (heapprof_workflows()) that gives what the action calls. */
static const char *
workflow(const cli_opts *o, const char *function)
{
	if (strcmp(function, "heapprof_dump_portable") == 0 || strcmp(function, "heapprof_dump_pprof") == 0 ||
		strcmp(function, "heapprof_dump_raw") == 0)
		return "trusted";
	if (o->action == ACT_CAPTURES || HISTORY_ACTION(o->action) || o->peak || o->window || o->stored)
		return "history";
	return "processes";
}

/*
 * The hint to print for the server's error or notice res: for PostgreSQL's
 * "permission denied for function heapprof_..." (aclcheck_error's 42501),
 * the workflow the action needs and its grant; else the server's hint in
 * pg_heapprof's terms; NULL for none.  role is the connection's.  The
 * caller frees it.
 */
char *
cli_hint(const cli_opts *o, const PGresult *res, const char *role)
{
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	const char *source = PQresultErrorField(res, PG_DIAG_SOURCE_FUNCTION);
	const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	const char *hint = PQresultErrorField(res, PG_DIAG_MESSAGE_HINT);
	bool		denied;
	char		function[64];
	char	   *out = NULL;
	size_t		len = 0;
	FILE	   *f;

	denied = state && strcmp(state, "42501") == 0 && source && strcmp(source, "aclcheck_error") == 0 &&
		msg && denied_function(msg, function, sizeof(function));
	if (!denied && hint == NULL)
		return NULL;
	if ((f = open_memstream(&out, &len)) == NULL)
		fail("out of memory");
	if (!denied)
		translate_calls(f, hint);
	else
	{
		fprintf(f, "the role lacks the heapprof workflow %s; a superuser (or the extension's owner) grants it "
				"with: SELECT heapprof_grant('", workflow(o, function));
		for (const char *c = role ? role : "ROLE"; *c; c++)
		{
			if (*c == '\'')
				fputc('\'', f);	/* a literal's quote, doubled */
			fputc(*c, f);
		}
		fprintf(f, "', '%s');", workflow(o, function));
	}
	if (fclose(f) != 0)
		fail("out of memory");
	return out;
}
