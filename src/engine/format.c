/*
 * format.c -- every "%" line of a heapprof profile, written and read here
 * (see format.h for the lines).
 *
 * Writers are plain C into the caller's buffer: no allocation, no partial
 * line (a line that would not fit, and every line after it, is left out), so
 * a process at exit or serving a request can call them.  Readers accept any
 * input: a line that does not parse is ignored, as jeprof ignores comments.
 * The stored-profile line was unversioned before HP_FORMAT_VERSION 1; both
 * forms are read, so profiles stored by older versions stay readable.
 */
#include "profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define META_PREFIX "%heapprof "
#define ALLOCATOR_PREFIX "%heapprof-allocator "
#define BUILD_ID_PREFIX "%heapprof-build-id "
#define FOLD_PREFIX "%heapprof-fold "
#define COVERAGE_PREFIX "%heapprof-coverage "
#define CAPTURE_PREFIX "%heapprof-capture "
#define DATABASE_PREFIX "%heapprof-database "
#define QUERY_PREFIX "%heapprof-query "
#define LABEL_CONTEXT_PREFIX "%heapprof-label-context "
#define LABEL_QUERY_PREFIX "%heapprof-label-query "
#define ENCODING_PREFIX "%heapprof-encoding "

/* An encoding's name as a line holds it: letters, digits and '_', cut to fit out. */
static void
encoding_name(char *out, const char *p, const char *end)
{
	size_t		n = 0;

	for (; p < end && n + 1 < HP_ENCODING_MAX; p++)
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')
			out[n++] = *p;
		else
			break;
	out[n] = '\0';
}

/* ---- writers ---- */

/* Append line (length n) to buf if it fits with the final NUL. */
static bool
put_line(char *buf, size_t size, size_t *len, const char *line, size_t n)
{
	if (n >= size - *len)
		return false;
	memcpy(buf + *len, line, n);
	*len += n;
	buf[*len] = '\0';
	return true;
}

size_t
hp_format_meta(char *buf, size_t size, const hp_meta *m)
{
	char		line[256];
	char		type[sizeof(m->backend_type)];
	size_t		len = 0;
	int			n;

	if (size == 0)
		return 0;
	buf[0] = '\0';
	/* one line whatever the name holds */
	snprintf(type, sizeof(type), "%s", m->backend_type);
	for (char *p = type; *p; p++)
		if ((unsigned char) *p < 0x20 || *p == 0x7f)
			*p = '?';
	n = snprintf(line, sizeof(line), "%%heapprof v=%d pid=%d owner=%u taken_at=%lld backend_type=%s\n",
				 HP_FORMAT_VERSION, m->pid, m->owner, m->taken_at, type);
	if (n > 0 && (size_t) n < sizeof(line))
		put_line(buf, size, &len, line, (size_t) n);
	return len;
}

/*
 * s escaped into out (room for 4 bytes per byte, and the NUL): one line of
 * ASCII, any bytes -- a label written in a LATIN1 database is read in a
 * UTF8 one, and a file's text is valid in every encoding.
 */
static void
escape(char *out, const char *s)
{
	for (; *s; s++)
	{
		unsigned char ch = (unsigned char) *s;

		if (ch == '\\')
		{
			*out++ = '\\';
			*out++ = '\\';
		}
		else if (ch == '\n')
		{
			*out++ = '\\';
			*out++ = 'n';
		}
		else if (ch < 0x20 || ch >= 0x7f)
			out += sprintf(out, "\\x%02x", ch);
		else
			*out++ = (char) ch;
	}
	*out = '\0';
}

size_t
hp_format_capture(char *buf, size_t size, const hp_capture *c)
{
	char		line[HP_CAPTURE_MAX];
	char		esc[4 * HP_MAX_QUERY + 1];
	size_t		len = 0;
	int			n;

	if (size == 0)
		return 0;
	buf[0] = '\0';
	n = snprintf(line, sizeof(line), "%%heapprof-capture queryid=%lld growth=%lld partial=%d\n",
				 c->queryid, c->growth, c->partial ? 1 : 0);
	if (n <= 0 || !put_line(buf, size, &len, line, (size_t) n))
		return len;
	escape(esc, c->database);
	n = snprintf(line, sizeof(line), "%s%s\n", DATABASE_PREFIX, esc);
	if (n <= 0 || !put_line(buf, size, &len, line, (size_t) n))
		return len;
	escape(esc, c->query);
	n = snprintf(line, sizeof(line), "%s%s\n", QUERY_PREFIX, esc);
	if (n > 0)
		put_line(buf, size, &len, line, (size_t) n);
	return len;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a;
	uint64_t	y = *(const uint64_t *) b;

	return (x > y) - (x < y);
}

/* The label tables' lines: names and texts cut to their slots' size, escaped. */
static void
format_labels(char *buf, size_t size, size_t *len, const hp_identity *id)
{
	char		line[48 + 4 * HP_LABEL_TEXT_MAX];
	char		text[HP_LABEL_TEXT_MAX];
	char		esc[4 * HP_LABEL_TEXT_MAX];
	int			n;

	for (size_t i = 0; i < id->ncontexts && i < HP_LABEL_CONTEXTS; i++)
	{
		if (id->contexts[i].name[0] == '\0')
			continue;
		snprintf(text, HP_LABEL_NAME_MAX, "%s", id->contexts[i].name);
		escape(esc, text);
		n = snprintf(line, sizeof(line), "%s%zx %s\n", LABEL_CONTEXT_PREFIX, i, esc);
		if (n <= 0 || !put_line(buf, size, len, line, (size_t) n))
			return;
	}
	for (size_t i = 0; i < id->nqueries && i < HP_LABEL_QUERIES; i++)
	{
		if (id->queries[i].queryid == 0)
			continue;
		snprintf(text, sizeof(text), "%s", id->queries[i].text);
		escape(esc, text);
		n = snprintf(line, sizeof(line), "%s%lld %s\n", LABEL_QUERY_PREFIX,
					 (long long) id->queries[i].queryid, esc);
		if (n <= 0 || !put_line(buf, size, len, line, (size_t) n))
			return;
	}
}

size_t
hp_format_identity(char *buf, size_t size, const hp_identity *id)
{
	/* the longest line: a build-id line of 64 bytes is 165 characters */
	char		line[32 + HP_MAX_FOLD_STARTS * 17];
	uint64_t	starts[HP_MAX_FOLD_STARTS];
	size_t		nstarts = 0;
	size_t		len = 0;
	size_t		n;

	if (size == 0)
		return 0;
	buf[0] = '\0';
	n = (size_t) snprintf(line, sizeof(line), "%%heapprof-allocator %llx\n",
						  (unsigned long long) id->allocator_base);
	if (!put_line(buf, size, &len, line, n))
		return len;
	if (id->coverage.known)
	{
		n = (size_t) snprintf(line, sizeof(line), "%%heapprof-coverage %llx %llx\n",
							  (unsigned long long) id->coverage.since,
							  (unsigned long long) id->coverage.allocated);
		if (!put_line(buf, size, &len, line, n))
			return len;
	}
	for (size_t i = 0; i < id->nids && i < HP_MAX_OBJECTS; i++)
	{
		const hp_build_id *b = &id->ids[i];

		if (b->len == 0)
			continue;			/* a reader would drop it */
		n = (size_t) snprintf(line, sizeof(line), "%%heapprof-build-id %llx ",
							  (unsigned long long) b->bias);
		for (size_t k = 0; k < b->len && k < sizeof(b->id); k++)
			n += (size_t) snprintf(line + n, sizeof(line) - n, "%02x", b->id[k]);
		line[n++] = '\n';
		if (!put_line(buf, size, &len, line, n))
			return len;
	}

	/* sorted and distinct, whatever the caller passed */
	for (size_t i = 0; i < id->nfold_starts && nstarts < HP_MAX_FOLD_STARTS; i++)
		starts[nstarts++] = id->fold_starts[i];
	qsort(starts, nstarts, sizeof(uint64_t), cmp_u64);
	if (nstarts > 0)
	{
		n = (size_t) snprintf(line, sizeof(line), "%%heapprof-fold");
		for (size_t i = 0; i < nstarts; i++)
			if (i == 0 || starts[i] != starts[i - 1])
				n += (size_t) snprintf(line + n, sizeof(line) - n, " %llx",
									   (unsigned long long) starts[i]);
		line[n++] = '\n';
		if (!put_line(buf, size, &len, line, n))
			return len;
	}
	if (id->encoding && id->encoding[0])
	{
		char		name[HP_ENCODING_MAX];

		/* the labels' texts are in it (escaped to ASCII, not converted) */
		encoding_name(name, id->encoding, id->encoding + strlen(id->encoding));
		n = (size_t) snprintf(line, sizeof(line), "%s%s\n", ENCODING_PREFIX, name);
		if (!put_line(buf, size, &len, line, n))
			return len;
	}
	format_labels(buf, size, &len, id);
	return len;
}

/* ---- readers ---- */

static bool
starts_with(const char *p, const char *end, const char *s)
{
	size_t		n = strlen(s);

	return (size_t) (end - p) >= n && memcmp(p, s, n) == 0;
}

int
hp_hex_digit(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

static bool
is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

/*
 * A hex number after white space: "0x" allowed, at most 16 significant
 * digits, then white space or the end.
 */
bool
hp_read_hex(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t	v = 0;
	int			significant = 0;
	bool		any = false;

	while (s < end && is_space(*s))
		s++;
	if (s + 2 <= end && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	while (s < end && !is_space(*s))
	{
		int			d = hp_hex_digit(*s++);

		if (d < 0)
			return false;
		any = true;
		if (v == 0 && d == 0)
			continue;
		if (++significant > 16)
			return false;
		v = (v << 4) | (uint64_t) d;
	}
	*p = s;
	*out = v;
	return any;
}

static void
read_build_id(hp_arena *a, const char *p, const char *end, hp_profile *out)
{
	hp_build_id id;
	size_t		n = 0;

	memset(&id, 0, sizeof(id));
	if (out->nids >= HP_MAX_OBJECTS || !hp_read_hex(&p, end, &id.bias))
		return;
	while (p < end && is_space(*p))
		p++;
	while (p + 1 < end && hp_hex_digit(p[0]) >= 0 && hp_hex_digit(p[1]) >= 0 && n < sizeof(id.id))
	{
		id.id[n++] = (uint8_t) (hp_hex_digit(p[0]) * 16 + hp_hex_digit(p[1]));
		p += 2;
	}
	if (n == 0)
		return;
	id.len = n;
	HP_RESERVE(a, out->ids, out->ids_cap, out->nids);
	out->ids[out->nids++] = id;
}

/* Insert v into the sorted, distinct fold starts, keeping at most the cap. */
static void
add_fold_start(hp_arena *a, hp_profile *out, uint64_t v)
{
	size_t		i = out->nfold_starts;

	if (out->fold_starts == NULL)
		out->fold_starts = hp_alloc(a, HP_MAX_FOLD_STARTS * sizeof(uint64_t));
	if (out->nfold_starts >= HP_MAX_FOLD_STARTS)
		return;
	while (i > 0 && out->fold_starts[i - 1] > v)
		i--;
	if (i > 0 && out->fold_starts[i - 1] == v)
		return;
	memmove(&out->fold_starts[i + 1], &out->fold_starts[i],
			(out->nfold_starts - i) * sizeof(uint64_t));
	out->fold_starts[i] = v;
	out->nfold_starts++;
}

static void unescape(const char *p, const char *end, char *out, size_t size);

/* A decimal int64 after white space, then one space; advances *p. */
static bool
read_decimal(const char **p, const char *end, int64_t *out)
{
	const char *s = *p;
	bool		neg = false;
	uint64_t	v = 0;
	int			digits = 0;

	while (s < end && is_space(*s))
		s++;
	if (s < end && *s == '-')
	{
		neg = true;
		s++;
	}
	while (s < end && *s >= '0' && *s <= '9')
	{
		if (++digits > 19)
			return false;
		v = v * 10 + (uint64_t) (*s++ - '0');
	}
	if (digits == 0 || v > (uint64_t) INT64_MAX + neg || s >= end || *s != ' ')
		return false;
	*p = s + 1;
	*out = neg ? (int64_t) (0 - v) : (int64_t) v;
	return true;
}

/*
 * A label line's key and text into map / texts: the first line of a key
 * counts, at most HP_MAX_LABEL_NAMES keys.
 */
static void
read_label(hp_arena *a, hp_map *map, const char ***texts, size_t *cap,
		   const void *key, size_t keylen, const char *p, const char *end, size_t max)
{
	char		text[HP_LABEL_TEXT_MAX];
	bool		added;
	size_t		i;

	if (map->arena == NULL || map->count >= HP_MAX_LABEL_NAMES)
		return;
	i = hp_map_put(map, key, keylen, &added);
	HP_RESERVE(a, *texts, *cap, i);
	if ((*texts)[i] != NULL)
		return;
	unescape(p, end, text, max < sizeof(text) ? max : sizeof(text));
	(*texts)[i] = hp_strdup(a, text);
}

void
hp_read_comment(hp_arena *a, const char *line, size_t len, hp_profile *out)
{
	const char *p = line;
	const char *end = line + len;
	uint64_t	v;

	if (starts_with(p, end, ALLOCATOR_PREFIX))
	{
		p += strlen(ALLOCATOR_PREFIX);
		if (hp_read_hex(&p, end, &v))
			out->allocator_base = v;
	}
	else if (starts_with(p, end, BUILD_ID_PREFIX))
		read_build_id(a, p + strlen(BUILD_ID_PREFIX), end, out);
	else if (starts_with(p, end, ENCODING_PREFIX))
		encoding_name(out->encoding, p + strlen(ENCODING_PREFIX), end);
	else if (starts_with(p, end, COVERAGE_PREFIX))
	{
		uint64_t	since;

		p += strlen(COVERAGE_PREFIX);
		if (hp_read_hex(&p, end, &since) && hp_read_hex(&p, end, &v))
		{
			out->coverage.known = true;
			out->coverage.since = since;
			out->coverage.allocated = v;
		}
	}
	else if (starts_with(p, end, LABEL_CONTEXT_PREFIX))
	{
		p += strlen(LABEL_CONTEXT_PREFIX);
		if (hp_read_hex(&p, end, &v) && v <= UINT32_MAX && p < end && *p == ' ')
		{
			uint32_t	slot = (uint32_t) v;

			read_label(a, &out->label_slots, &out->slot_names, &out->slot_names_cap,
					   &slot, sizeof(slot), p + 1, end, HP_LABEL_NAME_MAX);
		}
	}
	else if (starts_with(p, end, LABEL_QUERY_PREFIX))
	{
		int64_t		id;

		p += strlen(LABEL_QUERY_PREFIX);
		if (read_decimal(&p, end, &id) && id != 0)
		{
			uint64_t	qid = (uint64_t) id;

			read_label(a, &out->label_queries, &out->query_texts, &out->query_texts_cap,
					   &qid, sizeof(qid), p, end, HP_LABEL_TEXT_MAX);
		}
	}
	else if (starts_with(p, end, FOLD_PREFIX))
	{
		/* a value that does not parse ends the line: the ones before it count */
		p += strlen(FOLD_PREFIX);
		while (hp_read_hex(&p, end, &v))
			if (v != 0)
				add_fold_start(a, out, v);
	}
}

/* One meta line (NUL-terminated, without its newline) into m; false if it is none. */
static bool
read_meta_line(const char *line, hp_meta *m)
{
	int			pos = 0;
	int			version = 0;

	memset(m, 0, sizeof(*m));
	if (sscanf(line, "%%heapprof v=%d pid=%d owner=%u taken_at=%lld backend_type=%n",
			   &version, &m->pid, &m->owner, &m->taken_at, &pos) == 4 && pos > 0)
	{
		if (version < 1)
			return false;
		m->version = version;
	}
	else if (sscanf(line, "%%heapprof pid=%d owner=%u taken_at=%lld backend_type=%n",
					&m->pid, &m->owner, &m->taken_at, &pos) == 3 && pos > 0)
		m->version = 0;
	else
		return false;
	snprintf(m->backend_type, sizeof(m->backend_type), "%s", line + pos);
	m->backend_type[strcspn(m->backend_type, "\r")] = '\0';
	return true;
}

bool
hp_read_meta(const char *text, size_t len, hp_meta *m)
{
	const char *p = text;
	const char *end = text + len;

	memset(m, 0, sizeof(*m));
	while (p < end && *p == '%')
	{
		const char *nl = memchr(p, '\n', (size_t) (end - p));
		const char *stop = nl ? nl : end;
		char		line[256];
		size_t		n = (size_t) (stop - p);

		if (starts_with(p, stop, META_PREFIX))
		{
			if (n >= sizeof(line))
				n = sizeof(line) - 1;	/* a longer backend type is cut */
			memcpy(line, p, n);
			line[n] = '\0';
			if (read_meta_line(line, m))
				return true;
		}
		p = nl ? nl + 1 : end;
	}
	memset(m, 0, sizeof(*m));
	return false;
}

/* Unescape [p, end) into out (size bytes with the NUL); a longer text is cut. */
static void
unescape(const char *p, const char *end, char *out, size_t size)
{
	size_t		n = 0;

	while (p < end && n + 1 < size)
	{
		char		ch = *p++;

		if (ch == '\\' && p < end)
		{
			char		e = *p++;

			if (e == 'n')
				ch = '\n';
			else if (e == 'x' && end - p >= 2 && hp_hex_digit(p[0]) >= 0 && hp_hex_digit(p[1]) >= 0)
			{
				ch = (char) (hp_hex_digit(p[0]) * 16 + hp_hex_digit(p[1]));
				p += 2;
			}
			else
				ch = e;
		}
		out[n++] = ch;
	}
	out[n] = '\0';
}

bool
hp_read_capture(const char *text, size_t len, hp_capture *c)
{
	const char *p = text;
	const char *end = text + len;
	bool		found = false;

	memset(c, 0, sizeof(*c));
	while (p < end && *p == '%')
	{
		const char *nl = memchr(p, '\n', (size_t) (end - p));
		const char *stop = nl ? nl : end;

		if (starts_with(p, stop, CAPTURE_PREFIX))
		{
			char		line[128];
			size_t		n = (size_t) (stop - p) < sizeof(line) - 1 ? (size_t) (stop - p) : sizeof(line) - 1;
			int			partial = 0;

			memcpy(line, p, n);
			line[n] = '\0';
			found = sscanf(line + strlen(CAPTURE_PREFIX), "queryid=%lld growth=%lld partial=%d",
						   &c->queryid, &c->growth, &partial) == 3;
			c->partial = partial != 0;
		}
		else if (starts_with(p, stop, DATABASE_PREFIX))
			unescape(p + strlen(DATABASE_PREFIX), stop, c->database, sizeof(c->database));
		else if (starts_with(p, stop, QUERY_PREFIX))
			unescape(p + strlen(QUERY_PREFIX), stop, c->query, sizeof(c->query));
		else if (starts_with(p, stop, ENCODING_PREFIX))
			encoding_name(c->encoding, p + strlen(ENCODING_PREFIX), stop);
		p = nl ? nl + 1 : end;
	}
	return found;
}

size_t
hp_header_length(const char *text, size_t len)
{
	const char *p = text;
	const char *end = text + len;

	while (p < end && *p == '%')
	{
		const char *nl = memchr(p, '\n', (size_t) (end - p));

		p = nl ? nl + 1 : end;
	}
	return (size_t) (p - text);
}

int
hp_put_without_texts(const char *buf, size_t len, int (*put) (void *arg, const char *piece, size_t n), void *arg)
{
	const char *p = buf;
	const char *end = buf + len;
	int			rc;

	while (p < end && *p == '%')
	{
		const char *nl = memchr(p, '\n', (size_t) (end - p));
		const char *stop = nl ? nl : end;
		const char *cut = NULL;

		if (starts_with(p, stop, QUERY_PREFIX))
			cut = p + strlen(QUERY_PREFIX);
		else if (starts_with(p, stop, LABEL_QUERY_PREFIX))
		{
			/* the queryid stays, and the space a reader expects after it */
			cut = memchr(p + strlen(LABEL_QUERY_PREFIX), ' ', (size_t) (stop - p - strlen(LABEL_QUERY_PREFIX)));
			cut = cut ? cut + 1 : stop;
		}
		if (cut == NULL)
			cut = stop;
		if ((rc = put(arg, p, (size_t) (cut - p))) != 0)
			return rc;
		p = stop;
		if (nl)
		{
			if ((rc = put(arg, p, 1)) != 0)
				return rc;
			p++;
		}
	}
	return p < end ? put(arg, p, (size_t) (end - p)) : 0;
}
