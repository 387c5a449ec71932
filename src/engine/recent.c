/*
 * recent.c -- jemalloc's prof_recent JSON to heap_v2 text (see recent.h).
 *
 * The JSON is untrusted and fuzzed like a dump, so it is read by a small
 * reader of its own rather than a general parser: every read is bounded by
 * len, there is no recursion (an unknown value is skipped with a fixed stack
 * of 64 levels), integers are checked against 2^63-1 before they grow, and
 * the first problem ends the reading with its byte offset.  Records are
 * picked as they are read, so only the current trace and the distinct
 * picked traces are kept; identical traces are grouped through the arena's
 * hash map.  Work is counted per value, address and stack written (hp_work).
 */
#include "recent.h"

#include "profile.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_DEPTH 64

/* Keys of a record that the stage reads, as bits of a record's "seen". */
enum
{
	K_USIZE = 1, K_RELEASED = 2, K_ALLOC_TIME = 4, K_DALLOC_TIME = 8, K_TRACE = 16
};

/* Keys of the whole dump. */
enum
{
	K_INTERVAL = 1, K_MAX = 2, K_RECORDS = 4
};

typedef struct reader
{
	const char *p;
	const char *start;
	const char *end;
	hp_env	   *env;
	char	   *err;
	size_t		errlen;
} reader;

typedef struct group
{
	uint64_t	objs;
	uint64_t	bytes;
} group;

typedef struct dump
{
	hp_arena   *a;
	int64_t		from;
	int64_t		to;
	hp_recent_pick pick;
	uint64_t	interval;
	int64_t		max;
	uint64_t	records;
	int64_t		oldest;			/* earliest alloc_time of all records */
	hp_map		stacks;			/* picked traces (their uint64_t frames) -> groups[i] */
	group	   *groups;
	size_t		groups_cap;
	uint64_t	picked;
	uint64_t	bytes;
	uint64_t   *pcs;			/* the trace of the record being read */
	size_t		npcs;
	size_t		pcs_cap;
} dump;

__attribute__((format(printf, 2, 3)))
static bool
bad(reader *r, const char *fmt,...)
{
	char		what[128];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(r->err, r->errlen, "malformed prof_recent JSON at byte %zu: %s",
			 (size_t) (r->p - r->start), what);
	return false;
}

static void
ws(reader *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
		r->p++;
}

/* After white space, ch: consumed when it is there. */
static bool
take(reader *r, char ch)
{
	ws(r);
	if (r->p < r->end && *r->p == ch)
	{
		r->p++;
		return true;
	}
	return false;
}

static bool
expect(reader *r, char ch, const char *what)
{
	return take(r, ch) || bad(r, "expected %s", what);
}

static bool
is_digit(const reader *r)
{
	return r->p < r->end && *r->p >= '0' && *r->p <= '9';
}

/* A string's raw text between its quotes (escapes left as they are). */
static bool
read_string(reader *r, const char **s, size_t *n)
{
	if (!expect(r, '"', "a string"))
		return false;
	*s = r->p;
	for (;;)
	{
		char		c;

		if (r->p >= r->end)
			return bad(r, "unterminated string");
		c = *r->p;
		if (c == '"')
			break;
		if ((unsigned char) c < 0x20)
			return bad(r, "control character in a string");
		r->p++;
		if (c != '\\')
			continue;
		if (r->p < r->end && *r->p == 'u')
		{
			r->p++;
			for (int i = 0; i < 4; i++, r->p++)
				if (r->p >= r->end || hp_hex_digit(*r->p) < 0)
					return bad(r, "bad \\u escape");
		}
		else if (r->p < r->end && memchr("\"\\/bfnrt", *r->p, 8))
			r->p++;
		else
			return bad(r, "bad escape");
	}
	*n = (size_t) (r->p - *s);
	r->p++;
	hp_work(r->env, 1);
	return true;
}

/* An integer within 0..2^63-1, or with sign also down to -(2^63-1). */
static bool
read_int(reader *r, bool sign, int64_t *out)
{
	bool		neg;
	int64_t		v = 0;

	ws(r);
	neg = sign && r->p < r->end && *r->p == '-';
	if (neg)
		r->p++;
	if (!is_digit(r))
		return bad(r, "expected %s", sign ? "an integer" : "a non-negative integer");
	while (is_digit(r))
	{
		int			d = *r->p - '0';

		if (v > (INT64_MAX - d) / 10)
			return bad(r, "number beyond 2^63-1");
		v = v * 10 + d;
		r->p++;
	}
	if (r->p < r->end && (*r->p == '.' || *r->p == 'e' || *r->p == 'E'))
		return bad(r, "number is not an integer");
	*out = neg ? -v : v;
	hp_work(r->env, 1);
	return true;
}

static bool
literal(reader *r, const char *word)
{
	size_t		n = strlen(word);

	ws(r);
	if ((size_t) (r->end - r->p) < n || memcmp(r->p, word, n) != 0)
		return false;
	r->p += n;
	hp_work(r->env, 1);
	return true;
}

static bool
read_bool(reader *r, bool *out)
{
	*out = literal(r, "true");
	return *out || literal(r, "false") || bad(r, "expected true or false");
}

/* -?\d+(\.\d+)?([eE][+-]?\d+)? */
static bool
skip_number(reader *r)
{
	if (r->p < r->end && *r->p == '-')
		r->p++;
	if (!is_digit(r))
		return bad(r, "expected a value");
	while (is_digit(r))
		r->p++;
	if (r->p < r->end && *r->p == '.')
	{
		r->p++;
		if (!is_digit(r))
			return bad(r, "expected a digit");
		while (is_digit(r))
			r->p++;
	}
	if (r->p < r->end && (*r->p == 'e' || *r->p == 'E'))
	{
		r->p++;
		if (r->p < r->end && (*r->p == '+' || *r->p == '-'))
			r->p++;
		if (!is_digit(r))
			return bad(r, "expected a digit");
		while (is_digit(r))
			r->p++;
	}
	hp_work(r->env, 1);
	return true;
}

static bool
skip_scalar(reader *r)
{
	const char *s;
	size_t		n;

	ws(r);
	if (r->p < r->end && *r->p == '"')
		return read_string(r, &s, &n);
	return literal(r, "true") || literal(r, "false") || literal(r, "null") || skip_number(r);
}

/*
 * Before the next element of a container closed by close: 1 when one
 * follows (its ',' consumed), 0 when the container ended, -1 when malformed.
 */
static int
next(reader *r, char close, bool *first)
{
	if (take(r, close))
		return 0;
	if (!*first && !take(r, ','))
	{
		bad(r, "expected ',' or '%c'", close);
		return -1;
	}
	*first = false;
	return 1;
}

/* next() in an object, reading the member's key and its ':'. */
static int
next_key(reader *r, bool *first, const char **key, size_t *n)
{
	int			rc = next(r, '}', first);

	if (rc == 1 && !(read_string(r, key, n) && expect(r, ':', "':'")))
		return -1;
	return rc;
}

/* Any value, without recursion: containers are tracked on a stack of MAX_DEPTH. */
static bool
skip_value(reader *r)
{
	char		closes[MAX_DEPTH];
	int			depth = 0;
	bool		first = false;

	for (;;)
	{
		ws(r);
		if (r->p < r->end && (*r->p == '{' || *r->p == '['))
		{
			if (depth == MAX_DEPTH)
				return bad(r, "values nested deeper than %d levels", MAX_DEPTH);
			closes[depth++] = *r->p == '{' ? '}' : ']';
			r->p++;
			first = true;
			hp_work(r->env, 1);
		}
		else if (!skip_scalar(r))
			return false;
		/* close what ends here, up to the next element's value */
		for (;;)
		{
			const char *key;
			size_t		n;
			int			rc;

			if (depth == 0)
				return true;
			rc = closes[depth - 1] == '}' ? next_key(r, &first, &key, &n)
				: next(r, ']', &first);
			if (rc < 0)
				return false;
			if (rc == 1)
				break;
			depth--;
			first = false;
		}
	}
}

static bool
is_key(const char *key, size_t n, const char *name)
{
	return n == strlen(name) && memcmp(key, name, n) == 0;
}

/* Mark bit in *seen; a key seen twice is malformed. */
static bool
see(reader *r, unsigned *seen, unsigned bit)
{
	if (*seen & bit)
		return bad(r, "repeated key");
	*seen |= bit;
	return true;
}

/* An array of "0x..." strings into d->pcs. */
static bool
read_trace(reader *r, dump *d)
{
	bool		first = true;
	int			rc;

	d->npcs = 0;
	if (!expect(r, '[', "an array of addresses"))
		return false;
	while ((rc = next(r, ']', &first)) == 1)
	{
		const char *s;
		const char *p;
		size_t		n;
		uint64_t	pc;

		if (d->npcs == HP_MAX_FRAMES)
			return bad(r, "a trace of more than %d frames", HP_MAX_FRAMES);
		if (!read_string(r, &s, &n))
			return false;
		p = s;
		if (!hp_read_hex(&p, s + n, &pc) || p != s + n)
			return bad(r, "an address that is not a hex number");
		HP_RESERVE(d->a, d->pcs, d->pcs_cap, d->npcs);
		d->pcs[d->npcs++] = pc;
	}
	return rc == 0;
}

/* Add the record just read to its stack when the window and pick take it. */
static bool
add_record(reader *r, dump *d, uint64_t usize, bool released, int64_t at,
	 bool has_freed_at, int64_t freed_at)
{
	bool		gone = released && (!has_freed_at || freed_at <= d->to);
	size_t		i;
	bool		added;

	if (at < d->from || at > d->to || d->npcs == 0 ||
		(d->pick == HP_RECENT_FREED && !gone) || (d->pick == HP_RECENT_LIVE && gone))
		return true;
	if (usize > (uint64_t) INT64_MAX - d->bytes)
		return bad(r, "picked bytes beyond 2^63-1");
	i = hp_map_put(&d->stacks, d->pcs, d->npcs * sizeof(uint64_t), &added);
	if (added)
	{
		HP_RESERVE(d->a, d->groups, d->groups_cap, i);
		d->groups[i].objs = 0;
		d->groups[i].bytes = 0;
	}
	d->groups[i].objs++;
	d->groups[i].bytes += usize;
	d->picked++;
	d->bytes += usize;
	return true;
}

static bool
read_record(reader *r, dump *d)
{
	const unsigned required = K_USIZE | K_RELEASED | K_ALLOC_TIME | K_TRACE;
	unsigned	seen = 0;
	bool		first = true;
	int64_t		usize = 0;
	bool		released = false;
	int64_t		at = 0;
	int64_t		freed_at = 0;
	const char *key;
	size_t		n;
	int			rc;

	if (!expect(r, '{', "a record object"))
		return false;
	while ((rc = next_key(r, &first, &key, &n)) == 1)
	{
		bool		ok;

		if (is_key(key, n, "usize"))
			ok = see(r, &seen, K_USIZE) && read_int(r, false, &usize);
		else if (is_key(key, n, "released"))
			ok = see(r, &seen, K_RELEASED) && read_bool(r, &released);
		else if (is_key(key, n, "alloc_time"))
			ok = see(r, &seen, K_ALLOC_TIME) && read_int(r, false, &at);
		else if (is_key(key, n, "dalloc_time"))
			ok = see(r, &seen, K_DALLOC_TIME) && read_int(r, false, &freed_at);
		else if (is_key(key, n, "alloc_trace"))
			ok = see(r, &seen, K_TRACE) && read_trace(r, d);
		else
			ok = skip_value(r);
		if (!ok)
			return false;
	}
	if (rc < 0)
		return false;
	if ((seen & required) != required)
		return bad(r, "a record without usize, released, alloc_time or alloc_trace");
	if (d->records == 0 || at < d->oldest)
		d->oldest = at;
	d->records++;
	return add_record(r, d, (uint64_t) usize, released, at, seen & K_DALLOC_TIME, freed_at);
}

static bool
read_records(reader *r, dump *d)
{
	bool		first = true;
	int			rc;

	if (!expect(r, '[', "an array of records"))
		return false;
	while ((rc = next(r, ']', &first)) == 1)
		if (!read_record(r, d))
			return false;
	return rc == 0;
}

static bool
read_dump(reader *r, dump *d)
{
	unsigned	seen = 0;
	bool		first = true;
	const char *key;
	size_t		n;
	int			rc;

	if (!expect(r, '{', "a JSON object"))
		return false;
	while ((rc = next_key(r, &first, &key, &n)) == 1)
	{
		bool		ok;
		int64_t		v = 0;

		if (is_key(key, n, "sample_interval"))
		{
			ok = see(r, &seen, K_INTERVAL) && read_int(r, false, &v);
			/* beyond 2^53 hp_parse refuses the header */
			if (ok && (v < 1 || v > (INT64_C(1) << 53)))
				ok = bad(r, "sample_interval outside 1..2^53");
			d->interval = (uint64_t) v;
		}
		else if (is_key(key, n, "recent_alloc_max"))
			ok = see(r, &seen, K_MAX) && read_int(r, true, &d->max);
		else if (is_key(key, n, "recent_alloc"))
			ok = see(r, &seen, K_RECORDS) && read_records(r, d);
		else
			ok = skip_value(r);
		if (!ok)
			return false;
	}
	if (rc < 0)
		return false;
	if (seen != (K_INTERVAL | K_MAX | K_RECORDS))
		return bad(r, "no sample_interval, recent_alloc_max or recent_alloc");
	ws(r);
	return r->p == r->end || bad(r, "text after the JSON object");
}

hp_status
hp_recent_to_heap(hp_arena *a, const char *json, size_t len, int64_t from_ns, int64_t to_ns,
				  hp_recent_pick pick, hp_buf *out, hp_recent_stats *st,
				  char *err, size_t errlen)
{
	reader		r = {json, json, json + len, a->env, err, errlen};
	dump		d;

	memset(st, 0, sizeof(*st));
	memset(&d, 0, sizeof(d));
	d.a = a;
	d.from = from_ns;
	d.to = to_ns;
	d.pick = pick;
	hp_map_init(&d.stacks, a);
	if (!read_dump(&r, &d))
		return HP_EFORMAT;

	hp_buf_printf(out, "heap_v2/%llu\n  t*: %llu: %llu [0: 0]\n",
				  (unsigned long long) d.interval, (unsigned long long) d.picked,
				  (unsigned long long) d.bytes);
	for (size_t i = 0; i < d.stacks.count; i++)
	{
		const uint64_t *pcs = d.stacks.keys[i].key;
		size_t		npcs = d.stacks.keys[i].len / sizeof(uint64_t);

		hp_buf_append(out, "@", 1);
		for (size_t k = 0; k < npcs; k++)
			hp_buf_printf(out, " 0x%llx", (unsigned long long) pcs[k]);
		hp_buf_printf(out, "\n  t*: %llu: %llu [0: 0]\n",
					  (unsigned long long) d.groups[i].objs,
					  (unsigned long long) d.groups[i].bytes);
		hp_work(a->env, 1 + npcs);
	}
	hp_buf_append(out, "\n", 1);

	st->sample_interval = d.interval;
	st->records = d.records;
	st->max_records = d.max;
	st->picked = d.picked;
	st->truncated = d.max > 0 && d.records >= (uint64_t) d.max && d.oldest >= from_ns;
	return HP_OK;
}
