/*
 * parse.c -- read a jemalloc heap_v2 dump.
 *
 * The grammar follows jeprof's ReadThreadedHeapProfile exactly, because
 * jeprof is the reference for every number: "%" comment lines first (where
 * heapprof keeps a stored profile's metadata), a "heap_v2/R" header, "@ pc..."
 * stack lines, "t*: n: s [n2: s2]" count lines (per-thread "tN:" lines and
 * lines jeprof would not match are ignored), and the maps after
 * "MAPPED_LIBRARIES:".  Input is untrusted (the fuzzer feeds it): every read
 * is bounded by len, a count line with a number beyond 19 digits is ignored
 * (like any line that does not match), a malformed header or stack line, or
 * a stack of more than HP_MAX_FRAMES frames, is an error naming its line
 * number, and nothing is a crash.  Label frames at a stack's root (format.h)
 * become its samples' labels.  The leading "%" lines are format.c's.
 * Work is counted per line, per 64 bytes and per frame (hp_work).
 */
#include "profile.h"

#include <stdio.h>
#include <string.h>

typedef struct cursor
{
	const char *p;
	const char *end;
} cursor;

static bool
is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

static void
skip_spaces(cursor *c)
{
	while (c->p < c->end && is_space(*c->p))
		c->p++;
}

/* \d+ as a double; false when absent or beyond 19 digits. */
static bool
read_count(cursor *c, double *out)
{
	uint64_t	v = 0;
	int			digits = 0;

	while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
	{
		if (++digits > 19)
			return false;
		v = v * 10 + (uint64_t) (*c->p++ - '0');
	}
	*out = (double) v;
	return digits > 0;
}

static bool
expect(cursor *c, char ch)
{
	if (c->p < c->end && *c->p == ch)
	{
		c->p++;
		return true;
	}
	return false;
}

/* "\s+" */
static bool
expect_spaces(cursor *c)
{
	const char *start = c->p;

	skip_spaces(c);
	return c->p > start;
}

/*
 * jeprof: ^(t(\*|\d+)):\s+(\d+):\s+(\d+)\s+\[\s*(\d+):\s+(\d+)\]$ on the
 * trimmed line.  Returns true for a t* line, filling four counts.
 */
static bool
match_counts(cursor c, double v[4])
{
	if (!expect(&c, 't') || !expect(&c, '*') || !expect(&c, ':') || !expect_spaces(&c) ||
		!read_count(&c, &v[0]) || !expect(&c, ':') || !expect_spaces(&c) ||
		!read_count(&c, &v[1]) || !expect_spaces(&c) || !expect(&c, '[') ||
		(skip_spaces(&c), !read_count(&c, &v[2])) || !expect(&c, ':') ||
		!expect_spaces(&c) || !read_count(&c, &v[3]) || !expect(&c, ']'))
		return false;
	return c.p == c.end;
}

/* One "0x..." address token; leading zeros beyond 16 digits are allowed. */
static bool
read_pc(cursor *c, uint64_t *out)
{
	return hp_read_hex(&c->p, c->end, out);
}

/*
 * Take the label frames (format.h) off the root end of a stack as dumped
 * (before callers are stepped back) into *s: a frame of another kind, or a
 * label inside the stack, is left as an address.  Both halves make a queryid.
 */
static uint32_t
take_labels(uint64_t *v, uint32_t n, hp_sample *s)
{
	uint8_t		halves = 0;
	uint64_t	id = 0;

	s->labels = 0;
	s->context = 0;
	s->queryid = 0;
	for (; n > 0; n--)
	{
		uint64_t	pc = v[n - 1];

		switch (HP_LABEL_KIND(pc))
		{
			case HP_LABEL_CONTEXT:
				s->labels = (s->labels & ~HP_OWNED) | HP_HAS_CONTEXT;
				s->context = (uint32_t) pc;
				break;
			case HP_LABEL_OWNER:
				s->labels |= HP_HAS_CONTEXT | HP_OWNED;
				s->context = (uint32_t) pc;
				break;
			case HP_LABEL_QUERY_HI:
				halves |= 1;
				id = (id & UINT64_C(0xffffffff)) | (pc & UINT64_C(0xffffffff)) << 32;
				break;
			case HP_LABEL_QUERY_LO:
				halves |= 2;
				id = (id & ~UINT64_C(0xffffffff)) | (pc & UINT64_C(0xffffffff));
				break;
			default:
				goto done;
		}
	}
done:
	if (halves == 3 && id != 0)
	{
		s->labels |= HP_HAS_QUERY;
		s->queryid = id;
	}
	return n;
}

/*
 * Parse the addresses of an "@" line (after "@\s+") into arena memory,
 * its labels into *labels.  False for a malformed address; *npcs is then
 * HP_MAX_FRAMES + 1 when the stack is merely too long.
 */
static bool
parse_stack(hp_arena *a, cursor c, const uint64_t **pcs, uint32_t *npcs, hp_sample *labels)
{
	uint64_t   *v = NULL;
	size_t		n = 0;
	size_t		cap = 0;

	for (;;)
	{
		uint64_t	pc;

		skip_spaces(&c);
		if (c.p >= c.end)
			break;
		if (n >= HP_MAX_FRAMES)
		{
			*npcs = HP_MAX_FRAMES + 1;
			return false;
		}
		if (!read_pc(&c, &pc))
		{
			*npcs = 0;
			return false;
		}
		HP_RESERVE(a, v, cap, n);
		v[n++] = pc;
	}
	n = take_labels(v, (uint32_t) n, labels);
	/* callers hold return addresses: step back into the call */
	for (size_t i = 1; i < n; i++)
		v[i]--;
	*pcs = v;
	*npcs = (uint32_t) n;
	return true;
}

static bool
starts_with(cursor c, const char *s)
{
	size_t		n = strlen(s);

	return (size_t) (c.end - c.p) >= n && memcmp(c.p, s, n) == 0;
}

hp_status
hp_parse(hp_arena *a, const char *text, size_t len, hp_profile *out,
		 char *err, size_t errlen)
{
	cursor		all = {text, text + len};
	const uint64_t *pcs = NULL;
	uint32_t	npcs = 0;
	hp_sample	labels = {0};
	bool		have_stack = false;
	size_t		lineno = 0;
	double		rate;

	memset(out, 0, sizeof(*out));
	hp_map_init(&out->label_slots, a);
	hp_map_init(&out->label_queries, a);
	while (all.p < all.end)
	{
		const char *nl = memchr(all.p, '\n', (size_t) (all.end - all.p));
		cursor		line = {all.p, nl ? nl : all.end};

		all.p = nl ? nl + 1 : all.end;
		lineno++;

		hp_work(a->env, 1 + (size_t) (line.end - line.p) / 64);
		/* "%" lines before the header are comments (jeprof ignores them too) */
		if (out->rate == 0 && line.p < line.end && *line.p == '%')
		{
			hp_read_comment(a, line.p, (size_t) (line.end - line.p), out);
			continue;
		}
		if (out->rate == 0)
		{
			if (!starts_with(line, "heap_v2/"))
			{
				snprintf(err, errlen, "not a jemalloc heap profile: the first line must start with \"heap_v2/\"");
				return HP_EFORMAT;
			}
			line.p += strlen("heap_v2/");
			/* beyond 2^53, 1 - exp(-s / rate) is 0 for small objects: inf */
			if (!read_count(&line, &rate) || rate < 1 || rate > 9007199254740992.0)
			{
				snprintf(err, errlen, "invalid sampling rate in the heap_v2 header");
				return HP_EFORMAT;
			}
			out->rate = (uint64_t) rate;
			continue;
		}

		if (starts_with(line, "MAPPED_LIBRARIES:") || starts_with(line, "--- Memory map:"))
		{
			out->maps = all.p;
			out->maps_len = (size_t) (all.end - all.p);
			break;
		}

		/* trim, as jeprof does */
		skip_spaces(&line);
		while (line.end > line.p && is_space(line.end[-1]))
			line.end--;

		if (line.p < line.end && *line.p == '@')
		{
			cursor		rest = {line.p + 1, line.end};

			if (!expect_spaces(&rest))
				continue;		/* jeprof needs "@\s+"; anything else is ignored */
			if (!parse_stack(a, rest, &pcs, &npcs, &labels))
			{
				if (npcs > HP_MAX_FRAMES)
					snprintf(err, errlen, "stack on line %zu has more than %d frames",
							 lineno, HP_MAX_FRAMES);
				else
					snprintf(err, errlen, "malformed stack addresses on line %zu", lineno);
				return HP_EFORMAT;
			}
			hp_work(a->env, npcs);
			have_stack = true;
		}
		else if (have_stack)
		{
			double		v[4];
			hp_sample  *s;

			if (!match_counts(line, v))
				continue;
			HP_RESERVE(a, out->samples, out->cap, out->nsamples);
			s = &out->samples[out->nsamples++];
			s->pcs = pcs;
			s->npcs = npcs;
			s->objs = v[0];
			s->bytes = v[1];
			s->acc_objs = v[2];
			s->acc_bytes = v[3];
			s->labels = labels.labels;
			s->context = labels.context;
			s->queryid = labels.queryid;
		}
	}
	if (out->rate == 0)
	{
		snprintf(err, errlen, "not a jemalloc heap profile: no \"heap_v2/\" header");
		return HP_EFORMAT;
	}
	return HP_OK;
}
