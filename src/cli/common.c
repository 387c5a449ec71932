/*
 * common.c -- what every stage of pg_heapprof uses: its name and the
 * Ctrl-C flag, error exits, allocation that cannot fail, a result's cell.
 * It uses no other file of the client (of the engine, the terminal sink),
 * so that the stages above it form no circle.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sink.h"
#include "pg_heapprof.h"

const char *progname = "pg_heapprof";

volatile sig_atomic_t interrupted;

/* "pg_heapprof: error: ..." on a line */
static void
print_error(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* the message through the terminal sink: it may quote a server or a profile (any thread) */
static void
print_error(const char *fmt, va_list ap)
{
	char	   *msg = NULL;
	char	   *shown = NULL;
	size_t		size;

	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	size = msg ? hp_sink_len(HP_SINK_LINES, msg, strlen(msg)) + 1 : 0;
	if (msg && (shown = malloc(size)) != NULL)
		hp_sink_str(HP_SINK_LINES, msg, strlen(msg), shown, size);
	fprintf(stderr, "%s: error: %s\n", progname, shown ? shown : "(out of memory)");
	free(shown);
	free(msg);
}

void
fail(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	print_error(fmt, ap);
	va_end(ap);
	exit(1);
}

void
bad_usage(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	print_error(fmt, ap);
	va_end(ap);
	exit(2);
}

char *
xstrdup(const char *s)
{
	char	   *d = strdup(s);

	if (d == NULL)
		fail("out of memory");
	return d;
}

void *
xcalloc(size_t n, size_t size)
{
	void	   *p = calloc(n ? n : 1, size);

	if (p == NULL)
		fail("out of memory");
	return p;
}

/*
 * Field (row, col) of res, or "" where the server sent no such field: a
 * hostile or broken server may answer with fewer rows or columns than
 * asked for, and libpq's NULL for them must not crash the client.
 */
const char *
cell(const PGresult *res, int row, int col)
{
	const char *v = PQgetvalue(res, row, col);

	return v ? v : "";
}
