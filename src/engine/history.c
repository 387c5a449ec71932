/*
 * history.c -- the tick file: one tick of the heap history as text (see
 * history.h).  This file is the format's only writer and only reader.
 *
 * A tick is written once and published by rename, but it may still be cut
 * short (a full disk, a crash before fsync) or be anything at all (another
 * file in the folder), so the reader trusts nothing: every line is checked
 * and the last one, with the counts of processes and rows, proves the file
 * whole.  The format is canonical: a text the reader accepts is exactly
 * what the writer writes for the tick it read (numbers without leading
 * zeros, escapes only where needed, each name once), which the fuzzer
 * checks by writing every tick it could read.
 *
 *   heapprof-history 1
 *   t TIME INTERVAL                  Unix microseconds; microseconds > 0
 *   p PID START ROLE DATABASE NROWS BACKEND_TYPE APPLICATION ENCODING
 *   n KIND NAME                      KIND h f q c: heap function query context
 *   IDX BYTES OUTSIDE                a row: the IDX-th name (from 0); OUTSIDE -1: unknown
 *   ...                              NROWS rows, then the next process
 *   e NPROCS NROWS
 *
 * A tick of 100 processes by 40 rows repeats the same few hundred names, so
 * a name is written once, in an "n" line just before the row that first
 * uses it, and rows refer to it by number: the file stays near 15 bytes a
 * row, and the reader makes one string per name, shared by its rows.
 *
 * Text fields are written with every byte <= 0x20, 0x7f and '\' as \xHH
 * (lowercase), bytes >= 0x80 raw; the empty string is "-", and the string
 * "-" is "\x2d".  Fields are separated by one space.  Limits: a text field
 * decodes to at most MAX_TEXT bytes (the writer cuts longer ones), a
 * process declares at most MAX_ROWS rows, and no more than its remaining
 * lines can hold, so nothing is allocated from an unchecked count.
 */
#include "history.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEADER "heapprof-history 1\n"
#define MAX_TEXT 4096			/* bytes of a decoded text field */
#define MAX_ROWS 65536			/* rows of one process */
#define MIN_ROW 6				/* bytes of the shortest row line, "0 0 0\n" */

static const char kind_letters[HP_HIST_KINDS] = {'h', 'f', 'q', 'c'};

/* ---- names: each (kind, name) of a tick once, by number ---- */

typedef struct name
{
	const char *s;
	size_t		len;
	hp_hist_kind kind;
	size_t		proc;			/* reader: 1 + the last process that used it */
} name;

typedef struct names
{
	hp_arena   *a;
	name	   *v;
	size_t		n;
	size_t		cap;
	uint32_t   *slots;			/* index + 1, 0 = empty; open addressing */
	size_t		nslots;
} names;

static uint64_t
name_hash(hp_hist_kind kind, const char *s, size_t len)
{
	uint64_t	h = UINT64_C(1469598103934665603) ^ (uint64_t) kind;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char) s[i]) * UINT64_C(1099511628211);
	return h ^ (h >> 29);
}

/* The slot of (kind, s): the name's, or the empty one where it would go. */
static size_t
name_slot(const names *t, hp_hist_kind kind, const char *s, size_t len)
{
	size_t		mask = t->nslots - 1;
	size_t		i = name_hash(kind, s, len) & mask;

	while (t->slots[i])
	{
		const name *e = &t->v[t->slots[i] - 1];

		if (e->kind == kind && e->len == len && memcmp(e->s, s, len) == 0)
			break;
		i = (i + 1) & mask;
	}
	return i;
}

/* The number of (kind, s), added when new (*added set); s must outlive t. */
static size_t
name_put(names *t, hp_hist_kind kind, const char *s, size_t len, bool *added)
{
	size_t		i;

	if ((t->n + 1) * 2 > t->nslots)
	{
		size_t		old = t->nslots;

		t->nslots = old ? old * 2 : 64;
		t->slots = hp_grow(t->a, t->slots, old * sizeof(uint32_t), t->nslots * sizeof(uint32_t));
		memset(t->slots, 0, t->nslots * sizeof(uint32_t));
		for (size_t k = 0; k < t->n; k++)
			t->slots[name_slot(t, t->v[k].kind, t->v[k].s, t->v[k].len)] = (uint32_t) (k + 1);
	}
	i = name_slot(t, kind, s, len);
	*added = t->slots[i] == 0;
	if (!*added)
		return t->slots[i] - 1;
	HP_RESERVE(t->a, t->v, t->cap, t->n);
	t->v[t->n].s = s;
	t->v[t->n].len = len;
	t->v[t->n].kind = kind;
	t->v[t->n].proc = 0;
	t->slots[i] = (uint32_t) (t->n + 1);
	return t->n++;
}

/* ---- writing ---- */

static bool
needs_escape(unsigned char c)
{
	return c <= 0x20 || c == 0x7f || c == '\\';
}

/*
 * The bytes of s the file keeps: at most MAX_TEXT, cut before a UTF-8
 * character that does not fit (a C++ symbol can be longer; the reader
 * refuses more, and a file refused is a tick lost).
 */
size_t
hp_hist_text_len(const char *s)
{
	size_t		len = 0;

	while (s && len <= MAX_TEXT && s[len] != '\0')
		len++;
	if (len <= MAX_TEXT)
		return len;
	len = MAX_TEXT;
	for (int i = 0; i < 3 && len > 0 && ((unsigned char) s[len] & 0xc0) == 0x80; i++)
		len--;
	return len;
}

/* A text field: "-" when empty, else its bytes with needs_escape ones as \xHH. */
static void
put_text(hp_buf *out, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t		n = 0;
	char	   *d;

	if (len == 0)
	{
		hp_buf_append(out, "-", 1);
		return;
	}
	if (len == 1 && s[0] == '-')
	{
		hp_buf_append(out, "\\x2d", 4);
		return;
	}
	hp_buf_reserve(out, 4 * len);
	d = out->data + out->len;
	for (size_t i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) s[i];

		if (needs_escape(c))
		{
			d[n++] = '\\';
			d[n++] = 'x';
			d[n++] = hex[c >> 4];
			d[n++] = hex[c & 15];
		}
		else
			d[n++] = (char) c;
	}
	out->len += n;
	out->data[out->len] = '\0';
}

/*
 * What the reader accepts is the writer's to keep: pid > 0, interval > 0,
 * bytes >= 0, outside >= -1, kinds within hp_hist_kind and each (kind,
 * name) once in a process (also once cut to MAX_TEXT bytes).  A tick that
 * breaks them is written all the same and read back as malformed.
 */
void
hp_hist_write(hp_buf *out, const hp_hist_tick *t)
{
	names		tab;
	size_t		nrows = 0;

	memset(&tab, 0, sizeof(tab));
	tab.a = out->arena;
	hp_buf_printf(out, HEADER "t %lld %lld\n", (long long) t->time, (long long) t->interval);
	for (size_t i = 0; i < t->nprocs; i++)
	{
		const hp_hist_proc *p = &t->procs[i];

		hp_buf_printf(out, "p %ld %lld %lu %lu %zu ", (long) p->pid, (long long) p->start,
					  (unsigned long) p->role, (unsigned long) p->database, p->nrows);
		put_text(out, p->backend_type, hp_hist_text_len(p->backend_type));
		hp_buf_append(out, " ", 1);
		put_text(out, p->application, hp_hist_text_len(p->application));
		hp_buf_append(out, " ", 1);
		put_text(out, p->encoding, hp_hist_text_len(p->encoding));
		hp_buf_append(out, "\n", 1);
		for (size_t k = 0; k < p->nrows; k++)
		{
			const hp_hist_row *r = &p->rows[k];
			const char *s = r->name ? r->name : "";
			size_t		len = hp_hist_text_len(s);
			bool		added;
			size_t		idx = name_put(&tab, r->kind, s, len, &added);

			if (added)
			{
				hp_buf_printf(out, "n %c ", (unsigned) r->kind < HP_HIST_KINDS ?
							  kind_letters[r->kind] : '?');
				put_text(out, s, len);
				hp_buf_append(out, "\n", 1);
			}
			hp_buf_printf(out, "%zu %lld %lld\n", idx, (long long) r->bytes, (long long) r->outside);
		}
		nrows += p->nrows;
		hp_work(out->arena->env, 1 + p->nrows);
	}
	hp_buf_printf(out, "e %zu %zu\n", t->nprocs, nrows);
}

/* ---- reading ---- */

typedef struct reader
{
	hp_arena   *a;
	const char *p;				/* the next line */
	const char *end;
	const char *line;			/* the current line, without its '\n' */
	const char *eol;
	size_t		lineno;
	char	   *err;
	size_t		errlen;
} reader;

__attribute__((format(printf, 2, 3)))
static bool
bad(reader *r, const char *fmt,...)
{
	char		what[160];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(r->err, r->errlen, "not a heapprof history tick: line %zu: %s", r->lineno, what);
	return false;
}

/* The next line; a last line without its '\n' is a file cut short. */
static bool
next_line(reader *r)
{
	const char *nl;

	r->lineno++;
	if (r->p >= r->end)
		return bad(r, "the file ends before its \"e\" line");
	nl = memchr(r->p, '\n', (size_t) (r->end - r->p));
	if (nl == NULL)
		return bad(r, "the file ends within a line");
	r->line = r->p;
	r->eol = nl;
	r->p = nl + 1;
	hp_work(r->a->env, 1 + (size_t) (nl - r->line) / 64);
	return true;
}

/*
 * The next field of the current line at *s: up to a space (consumed) or
 * the end of the line; never empty.
 */
static bool
field(reader *r, const char **s, const char **f, const char **fe)
{
	const char *e = memchr(*s, ' ', (size_t) (r->eol - *s));

	if (e == NULL)
		e = r->eol;
	if (e == *s)
		return bad(r, "an empty field, or not enough of them");
	*f = *s;
	*fe = e;
	*s = e < r->eol ? e + 1 : e;
	return true;
}

/* The line must end at s, after its last field. */
static bool
line_end(reader *r, const char *s)
{
	return (s == r->eol && s[-1] != ' ') || bad(r, "more fields than expected");
}

/*
 * An integer in [min, max] as the writer prints it (no '+', no leading zero,
 * no "-0"): the next field, read as it is found, since rows are most of a
 * file and mostly numbers.
 */
static bool
number(reader *r, const char **s, int64_t min, int64_t max, int64_t *out)
{
	const char *c = *s;
	const char *digits;
	bool		neg = c < r->eol && *c == '-';
	uint64_t	limit = neg ? (uint64_t) INT64_MAX + 1 : (uint64_t) INT64_MAX;
	uint64_t	v = 0;

	if (neg)
		c++;
	digits = c;
	for (; c < r->eol && *c >= '0' && *c <= '9'; c++)
	{
		unsigned	d = (unsigned) (*c - '0');

		if (v > (limit - d) / 10)
			return bad(r, "a number beyond 64 bits");
		v = v * 10 + d;
	}
	if (c == *s && (c == r->eol || *c == ' '))
		return bad(r, "an empty field, or not enough of them");
	if (c == digits || (c < r->eol && *c != ' ') || (*digits == '0' && (c - digits > 1 || neg)))
		return bad(r, "a number that is not written as one");
	/* v - 1 fits even for -(2^63); "-0" was refused */
	*out = neg ? -(int64_t) (v - 1) - 1 : (int64_t) v;
	if (*out < min || *out > max)
		return bad(r, "a number out of its range");
	*s = c < r->eol ? c + 1 : c;
	return true;
}

static int
hex_value(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* A text field into *out (in the arena, NUL-terminated), *len its bytes. */
static bool
read_text(reader *r, const char **s, const char **out, size_t *len)
{
	char		buf[MAX_TEXT];
	const char *f = NULL;
	const char *fe = NULL;
	size_t		n = 0;

	if (!field(r, s, &f, &fe))
		return false;
	if (fe - f == 1 && *f == '-')
	{
		*out = "";
		*len = 0;
		return true;
	}
	for (const char *c = f; c < fe;)
	{
		unsigned char b = (unsigned char) *c;

		if (n == MAX_TEXT)
			return bad(r, "a text field longer than %d bytes", MAX_TEXT);
		if (b == '\\')
		{
			int			hi;
			int			lo;

			if (fe - c < 4 || c[1] != 'x' || (hi = hex_value(c[2])) < 0 ||
				(lo = hex_value(c[3])) < 0)
				return bad(r, "a bad escape in a text field");
			b = (unsigned char) (hi << 4 | lo);
			/* "-" alone is the one string with an escape it does not need */
			if (b == 0 || !(needs_escape(b) || (b == '-' && fe - f == 4)))
				return bad(r, "an escape the writer does not make");
			c += 4;
		}
		else if (needs_escape(b))
			return bad(r, "a control character in a text field");
		else
			c++;
		buf[n++] = (char) b;
	}
	*out = hp_strndup(r->a, buf, n);
	*len = n;
	return true;
}

typedef struct proc_key
{
	int64_t		start;
	int32_t		pid;
} proc_key;

static int
proc_key_cmp(const void *x, const void *y)
{
	const proc_key *a = x;
	const proc_key *b = y;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->start < b->start ? -1 : a->start > b->start;
}

/* No process twice (pid and start) in a tick. */
static bool
unique_procs(reader *r, const hp_hist_tick *t)
{
	proc_key   *keys;

	if (t->nprocs < 2)
		return true;
	keys = hp_alloc(r->a, t->nprocs * sizeof(proc_key));
	for (size_t i = 0; i < t->nprocs; i++)
	{
		keys[i].pid = t->procs[i].pid;
		keys[i].start = t->procs[i].start;
	}
	qsort(keys, t->nprocs, sizeof(proc_key), proc_key_cmp);
	hp_work(r->a->env, t->nprocs);
	for (size_t i = 1; i < t->nprocs; i++)
		if (proc_key_cmp(&keys[i - 1], &keys[i]) == 0)
			return bad(r, "process %ld (started %lld) twice", (long) keys[i].pid,
					   (long long) keys[i].start);
	return true;
}

/* "n KIND NAME": the next name of tab. */
static bool
read_name(reader *r, names *tab)
{
	const char *s = r->line + 2;
	const char *f = NULL;
	const char *fe = NULL;
	const char *str;
	size_t		len;
	int			kind = -1;
	bool		added;

	if (!field(r, &s, &f, &fe))
		return false;
	for (int k = 0; k < HP_HIST_KINDS; k++)
		if (fe - f == 1 && *f == kind_letters[k])
			kind = k;
	if (kind < 0)
		return bad(r, "an unknown kind of row");
	if (!read_text(r, &s, &str, &len) || !line_end(r, s))
		return false;
	name_put(tab, (hp_hist_kind) kind, str, len, &added);
	return added || bad(r, "a name given twice");
}

/* "IDX BYTES OUTSIDE" into row; fresh: a name line just came, whose row this must be. */
static bool
read_row(reader *r, names *tab, size_t proc, bool fresh, hp_hist_row *row)
{
	const char *s = r->line;
	int64_t		idx;
	name	   *nm;

	if (!number(r, &s, 0, (int64_t) tab->n - 1, &idx) ||
		!number(r, &s, 0, INT64_MAX, &row->bytes) ||
		!number(r, &s, -1, INT64_MAX, &row->outside) || !line_end(r, s))
		return false;
	nm = &tab->v[idx];
	if (fresh != ((size_t) idx == tab->n - 1 && nm->proc == 0))
		return bad(r, "a name line that is not just before its first row");
	if (nm->proc == proc + 1)
		return bad(r, "a name twice in a process");
	nm->proc = proc + 1;
	row->kind = nm->kind;
	row->name = nm->s;
	return true;
}

/* Is the current line "c ..."? */
static bool
keyword(const reader *r, char c)
{
	return r->eol - r->line >= 2 && r->line[0] == c && r->line[1] == ' ';
}

/* "p ..." and its rows (with the name lines among them) into p, the proc-th process. */
static bool
read_proc(reader *r, names *tab, size_t proc, hp_hist_proc *p)
{
	const char *s = r->line + 2;
	int64_t		pid;
	int64_t		role;
	int64_t		db;
	int64_t		nrows;
	size_t		len;
	bool		fresh = false;

	if (!number(r, &s, 1, INT32_MAX, &pid) ||
		!number(r, &s, INT64_MIN, INT64_MAX, &p->start) ||
		!number(r, &s, 0, UINT32_MAX, &role) ||
		!number(r, &s, 0, UINT32_MAX, &db) ||
		!number(r, &s, 0, MAX_ROWS, &nrows) ||
		!read_text(r, &s, &p->backend_type, &len) ||
		!read_text(r, &s, &p->application, &len) ||
		!read_text(r, &s, &p->encoding, &len) || !line_end(r, s))
		return false;
	if ((size_t) nrows > (size_t) (r->end - r->p) / MIN_ROW)
		return bad(r, "more rows than the rest of the file can hold");
	p->pid = (int32_t) pid;
	p->role = (uint32_t) role;
	p->database = (uint32_t) db;
	p->nrows = (size_t) nrows;
	p->rows = nrows ? hp_alloc(r->a, p->nrows * sizeof(hp_hist_row)) : NULL;
	for (size_t k = 0; k < p->nrows;)
	{
		if (!next_line(r))
			return false;
		if (keyword(r, 'n'))
		{
			if (fresh)
				return bad(r, "a name line that is not just before its first row");
			if (!read_name(r, tab))
				return false;
			fresh = true;
			continue;
		}
		if (!read_row(r, tab, proc, fresh, &p->rows[k]))
			return false;
		fresh = false;
		k++;
	}
	return true;
}

static bool
read_tick(reader *r, names *tab, hp_hist_tick *t)
{
	size_t		cap = 0;
	size_t		nrows = 0;
	const char *s;
	int64_t		nprocs_end;
	int64_t		nrows_end;

	r->lineno = 1;
	if ((size_t) (r->end - r->p) < strlen(HEADER) || memcmp(r->p, HEADER, strlen(HEADER)) != 0)
		return bad(r, "no \"heapprof-history 1\" header");
	r->p += strlen(HEADER);
	if (!next_line(r))
		return false;
	if (!keyword(r, 't'))
		return bad(r, "no \"t\" line");
	s = r->line + 2;
	if (!number(r, &s, INT64_MIN, INT64_MAX, &t->time) ||
		!number(r, &s, 1, INT64_MAX, &t->interval) || !line_end(r, s))
		return false;
	for (;;)
	{
		if (!next_line(r))
			return false;
		if (keyword(r, 'e'))
			break;
		if (!keyword(r, 'p'))
			return bad(r, "neither a process nor the \"e\" line");
		HP_RESERVE(r->a, t->procs, cap, t->nprocs);
		if (!read_proc(r, tab, t->nprocs, &t->procs[t->nprocs]))
			return false;
		nrows += t->procs[t->nprocs++].nrows;
	}
	s = r->line + 2;
	if (!number(r, &s, 0, INT64_MAX, &nprocs_end) || !number(r, &s, 0, INT64_MAX, &nrows_end) ||
		!line_end(r, s))
		return false;
	if ((uint64_t) nprocs_end != t->nprocs || (uint64_t) nrows_end != nrows)
		return bad(r, "the file has %zu processes and %zu rows, its \"e\" line says %lld and %lld",
				   t->nprocs, nrows, (long long) nprocs_end, (long long) nrows_end);
	if (r->p != r->end)
		return bad(r, "text after the \"e\" line");
	return unique_procs(r, t);
}

hp_status
hp_hist_read(hp_arena *a, const char *text, size_t len, hp_hist_tick *t,
			 char *err, size_t errlen)
{
	char		dummy[1];
	reader		r;
	names		tab;

	if (err == NULL || errlen == 0)
	{
		err = dummy;
		errlen = sizeof(dummy);
	}
	err[0] = '\0';
	memset(&r, 0, sizeof(r));
	r.a = a;
	r.p = text ? text : "";
	r.end = r.p + (text ? len : 0);
	r.err = err;
	r.errlen = errlen;
	memset(&tab, 0, sizeof(tab));
	tab.a = a;
	memset(t, 0, sizeof(*t));
	if (read_tick(&r, &tab, t))
		return HP_OK;
	memset(t, 0, sizeof(*t));
	if (err[0] == '\0')
		snprintf(err, errlen, "not a heapprof history tick");
	return HP_EFORMAT;
}
