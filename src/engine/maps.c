/*
 * maps.c -- the one reader of /proc/PID/maps text (see maps.h).
 *
 * A line is "START-END PERMS OFFSET MAJOR:MINOR INODE [PATH]", numbers in hex
 * but the inode in decimal, fields separated by spaces and the path padded
 * to a column.  The text comes from a dump, so it is read as hostile: never
 * past end (lines are not NUL-terminated), no sscanf, and a number that does
 * not fit rejects its line rather than being clamped to a wrong value.
 */
#include "maps.h"

#include <limits.h>
#include <string.h>

/* A hex number at *p (at least one digit); false if it does not fit. */
static inline bool
read_hex(const char **p, const char *end, uint64_t *out)
{
	const char *q = *p;
	uint64_t	v = 0;

	for (; q < end; q++)
	{
		unsigned	c = (unsigned char) *q;
		unsigned	d;

		if (c - '0' < 10)
			d = c - '0';
		else if ((c | 0x20) - 'a' < 6)
			d = (c | 0x20) - 'a' + 10;
		else
			break;
		if (v >> 60)
			return false;
		v = v << 4 | d;
	}
	if (q == *p)
		return false;
	*p = q;
	*out = v;
	return true;
}

/* A decimal number at *p (at least one digit); false if it does not fit. */
static inline bool
read_dec(const char **p, const char *end, uint64_t *out)
{
	const char *q = *p;
	uint64_t	v = 0;

	for (; q < end && (unsigned) (*q - '0') < 10; q++)
	{
		unsigned	d = (unsigned) (*q - '0');

		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	if (q == *p)
		return false;
	*p = q;
	*out = v;
	return true;
}

/* Step over one or more spaces; false if there is none. */
static bool
spaces(const char **p, const char *end)
{
	const char *q = *p;

	while (q < end && *q == ' ')
		q++;
	if (q == *p)
		return false;
	*p = q;
	return true;
}

/* The fields of one line [p, end); false if it does not have all five. */
static bool
parse_line(const char *p, const char *end, hp_mapping *m)
{
	const char *perms;
	uint64_t	major;
	uint64_t	minor;

	if (!read_hex(&p, end, &m->start) || p == end || *p++ != '-' ||
		!read_hex(&p, end, &m->end) || !spaces(&p, end))
		return false;
	perms = p;
	while (p < end && *p != ' ')
		p++;
	m->exec = p - perms >= 3 && perms[2] == 'x';
	if (!spaces(&p, end) ||
		!read_hex(&p, end, &m->offset) || !spaces(&p, end) ||
		!read_hex(&p, end, &major) || major > UINT_MAX || p == end || *p++ != ':' ||
		!read_hex(&p, end, &minor) || minor > UINT_MAX || !spaces(&p, end) ||
		!read_dec(&p, end, &m->inode))
		return false;
	m->dev_major = (unsigned) major;
	m->dev_minor = (unsigned) minor;
	m->path = NULL;
	m->pathlen = 0;
	if (p == end)
		return true;
	/* the inode must end at a space; what follows the padding is the path */
	if (!spaces(&p, end))
		return false;
	if (p < end && *p == '/')
	{
		m->path = p;
		m->pathlen = (size_t) (end - p);
	}
	return true;
}

bool
hp_maps_next(const char **p, const char *end, hp_mapping *m)
{
	while (*p != NULL && *p < end)
	{
		const char *line = *p;
		const char *nl = memchr(line, '\n', (size_t) (end - line));
		const char *eol = nl ? nl : end;

		*p = nl ? nl + 1 : end;
		if (parse_line(line, eol, m))
		{
			m->line = line;
			m->linelen = (size_t) (eol - line);
			return true;
		}
	}
	return false;
}
