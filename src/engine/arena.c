/*
 * arena.c -- allocation, text buffers and hash maps for one analysis.
 *
 * Chunks come from env->alloc; a request that cannot be met is an error
 * raised through the env (see arena.h).
 */
#include "arena.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define CHUNK_SIZE (64 * 1024)

/*
 * The engine stores nothing wider than 8 bytes (pointers, uint64_t,
 * double), and that is all env->alloc promises: PostgreSQL's palloc
 * aligns to 8 (MAXALIGN), not to max_align_t's 16.
 */
#define ALIGN 8

typedef union
{
	void	   *p;
	uint64_t	u;
	double		d;
} aligned;

/*
 * A chunk is either shared by small allocations, bumped, or holds one large
 * block of its own (above CHUNK_SIZE / 4).  The list is doubly linked so that a large block
 * replaced by hp_grow goes back at once: an array or text grown by doubling
 * then holds at most its last two copies, not all of them.
 */
struct hp_chunk
{
	hp_chunk   *next;
	hp_chunk   *prev;
	hp_arena   *owner;			/* set on large blocks only: the check in hp_grow */
	size_t		size;			/* bytes taken from env->alloc */
	aligned		data[];
};

void
hp_arena_init(hp_arena *a, hp_env *env)
{
	a->env = env;
	a->chunks = NULL;
	a->cur = NULL;
	a->left = 0;
	a->total = 0;
}

static void
release(hp_arena *a, hp_chunk *c)
{
	hp_env	   *env = a->env;

	if (c->prev)
		c->prev->next = c->next;
	else
		a->chunks = c->next;
	if (c->next)
		c->next->prev = c->prev;
	a->total -= c->size;
	env->taken -= c->size < env->taken ? c->size : env->taken;
	env->free(env->ctx, c);
}

void
hp_arena_free(hp_arena *a)
{
	while (a->chunks)
		release(a, a->chunks);
	hp_arena_init(a, a->env);
}

static void
out_of_memory(hp_arena *a)
{
	hp_fail(a->env, HP_ENOMEM, "out of memory while analysing the heap profile");
}

/* A chunk of want bytes, linked at once: an error raised later still frees it. */
static hp_chunk *
take(hp_arena *a, size_t want)
{
	hp_env	   *env = a->env;
	size_t		size = sizeof(hp_chunk) + want;
	hp_chunk   *c;

	/* checked before env->alloc: over budget, nothing was taken */
	if (env->limit && (env->taken > env->limit || size > env->limit - env->taken))
		hp_fail(env, HP_EBUDGET,
				"the analysis needs more than its memory budget of %zu kB (%zu kB taken, %zu kB more asked)",
				env->limit / 1024, env->taken / 1024, (size + 1023) / 1024);
	c = env->alloc(env->ctx, size);
	if (c == NULL)
		out_of_memory(a);
	c->size = size;
	c->owner = NULL;
	c->prev = NULL;
	c->next = a->chunks;
	if (a->chunks)
		a->chunks->prev = c;
	a->chunks = c;
	a->total += size;
	env->taken += size;
	return c;
}

static size_t
rounded(size_t size)
{
	return (size + ALIGN - 1) & ~(size_t) (ALIGN - 1);
}

void *
hp_alloc(hp_arena *a, size_t size)
{
	void	   *p;

	if (size > SIZE_MAX / 2)
		out_of_memory(a);
	size = rounded(size);
	if (size > a->left)
	{
		hp_chunk   *c;

		if (size > CHUNK_SIZE / 4)
		{
			/* a large block gets a chunk of its own; keep bumping the old one */
			c = take(a, size);
			c->owner = a;
			memset(c->data, 0, size);
			return c->data;
		}
		c = take(a, CHUNK_SIZE);
		a->cur = (char *) c->data;
		a->left = CHUNK_SIZE;
	}
	p = a->cur;
	a->cur += size;
	a->left -= size;
	memset(p, 0, size);
	return p;
}

/*
 * old, of old_size bytes as allocated, becomes new_size bytes whose first
 * keep are old's.  A large block (a chunk of its own, as its size and its
 * chunk's header both say) is given back once copied.
 */
static void *
regrow(hp_arena *a, void *old, size_t old_size, size_t keep, size_t new_size)
{
	void	   *p;
	hp_chunk   *c;

	/*
	 * The last block bumped grows where it is while it stays small (a large
	 * block is always a chunk of its own): a parsed stack's frames take
	 * their own size, not the sum of every size they grew through.
	 */
	if (old && (char *) old + rounded(old_size) == a->cur && new_size <= CHUNK_SIZE / 4 &&
		rounded(new_size) >= rounded(old_size) && rounded(new_size) - rounded(old_size) <= a->left)
	{
		size_t		more = rounded(new_size) - rounded(old_size);

		memset(a->cur, 0, more);
		a->cur += more;
		a->left -= more;
		return old;
	}
	p = hp_alloc(a, new_size);
	if (old == NULL || old_size == 0)
		return p;
	memcpy(p, old, keep < new_size ? keep : new_size);
	c = (hp_chunk *) ((char *) old - offsetof(hp_chunk, data));
	if (rounded(old_size) > CHUNK_SIZE / 4 && c->owner == a &&
		c->size == sizeof(hp_chunk) + rounded(old_size))
		release(a, c);
	return p;
}

void *
hp_grow(hp_arena *a, void *old, size_t old_size, size_t new_size)
{
	return regrow(a, old, old_size, old_size, new_size);
}

char *
hp_strndup(hp_arena *a, const char *s, size_t len)
{
	char	   *p = hp_alloc(a, len + 1);

	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

char *
hp_strdup(hp_arena *a, const char *s)
{
	return hp_strndup(a, s, strlen(s));
}

void
hp_buf_init(hp_buf *b, hp_arena *a)
{
	b->arena = a;
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

void
hp_buf_reserve(hp_buf *b, size_t more)
{
	size_t		cap = b->cap ? b->cap : 64;

	if (b->len + more + 1 <= b->cap)
		return;
	while (cap < b->len + more + 1)
		cap *= 2;
	b->data = regrow(b->arena, b->data, b->cap, b->len, cap);
	b->cap = cap;
}

void
hp_buf_append(hp_buf *b, const char *s, size_t len)
{
	hp_buf_reserve(b, len);
	memcpy(b->data + b->len, s, len);
	b->len += len;
	b->data[b->len] = '\0';
}

void
hp_buf_printf(hp_buf *b, const char *fmt,...)
{
	va_list		ap;
	int			n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	hp_buf_reserve(b, (size_t) n);
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t) n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t) n;
}

static uint64_t
hash_bytes(const void *key, size_t len)
{
	const unsigned char *p = key;
	uint64_t	h = UINT64_C(1469598103934665603);

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * UINT64_C(1099511628211);
	return h ^ (h >> 29);
}

void
hp_map_init(hp_map *m, hp_arena *a)
{
	memset(m, 0, sizeof(*m));
	m->arena = a;
}

static size_t
find_slot(const hp_map *m, const void *key, size_t len)
{
	size_t		mask = m->nslots - 1;
	size_t		i = hash_bytes(key, len) & mask;

	for (;;)
	{
		uint32_t	s = m->slots[i];

		if (s == 0)
			return i;
		/* an empty key may be NULL: no memcmp / memcpy with it */
		if (m->keys[s - 1].len == len && (len == 0 || memcmp(m->keys[s - 1].key, key, len) == 0))
			return i;
		i = (i + 1) & mask;
	}
}

size_t
hp_map_put(hp_map *m, const void *key, size_t len, bool *added)
{
	size_t		i;

	if (added)
		*added = false;
	if ((m->count + 1) * 2 > m->nslots)
	{
		size_t		n = m->nslots ? m->nslots * 2 : 64;

		if (n > UINT32_MAX)
			out_of_memory(m->arena);
		m->slots = hp_alloc(m->arena, n * sizeof(*m->slots));
		m->nslots = n;
		for (size_t k = 0; k < m->count; k++)
			m->slots[find_slot(m, m->keys[k].key, m->keys[k].len)] = (uint32_t) (k + 1);
	}
	i = find_slot(m, key, len);
	if (m->slots[i])
		return m->slots[i] - 1;
	HP_RESERVE(m->arena, m->keys, m->cap, m->count);
	m->keys[m->count].key = hp_alloc(m->arena, len ? len : 1);
	if (len)
		memcpy((void *) m->keys[m->count].key, key, len);
	m->keys[m->count].len = len;
	m->slots[i] = (uint32_t) (m->count + 1);
	if (added)
		*added = true;
	return m->count++;
}
