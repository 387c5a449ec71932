/*
 * common.c -- what every stage of pg_heapprof uses: its name and the
 * Ctrl-C flag, error exits, allocation that cannot fail, a result's cell.
 * It uses no other file of the client, so that the stages above it form
 * no circle.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_heapprof.h"

const char *progname = "pg_heapprof";

volatile sig_atomic_t interrupted;

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
