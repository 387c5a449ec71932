/*
 * arena.h -- memory for one analysis: a bump allocator freed as a whole,
 * a growable text buffer and a hash map from byte strings to indexes.
 *
 * Chunks come from the caller's env->alloc and go back through env->free in
 * hp_arena_free.  Running out of memory is an error raised through the env
 * (hp_fail), which does not return: the stages allocate without checking
 * every call.  The arena is consistent at every allocation, so a caller whose
 * env->error or env->interrupt longjmps out frees it whole afterwards and
 * nothing leaks.  Only arena memory may be held across an allocation.
 * Every chunk counts against the env's memory budget (env.h).
 */
#ifndef HEAPPROF_ARENA_H
#define HEAPPROF_ARENA_H

#include "env.h"

typedef struct hp_chunk hp_chunk;

typedef struct hp_arena
{
	hp_env	   *env;			/* where memory comes from and errors go */
	hp_chunk   *chunks;
	char	   *cur;
	size_t		left;
	size_t		total;			/* bytes held from env->alloc (also in env->taken) */
} hp_arena;

extern void hp_arena_init(hp_arena *a, hp_env *env);
extern void hp_arena_free(hp_arena *a);
extern void *hp_alloc(hp_arena *a, size_t size);	/* zeroed */
/*
 * A copy of old in new_size bytes; old_size must be the size old was
 * allocated with: a large old block is then freed, not kept to the end.
 */
extern void *hp_grow(hp_arena *a, void *old, size_t old_size, size_t new_size);
extern char *hp_strndup(hp_arena *a, const char *s, size_t len);
extern char *hp_strdup(hp_arena *a, const char *s);

/* Grow an array *arr of *cap elements so that index n fits. */
#define HP_RESERVE(a, arr, cap, n) \
	do { \
		if ((n) >= (cap)) { \
			size_t new_cap_ = (cap) ? (cap) * 2 : 16; \
			while (new_cap_ <= (n)) new_cap_ *= 2; \
			(arr) = hp_grow((a), (arr), (cap) * sizeof(*(arr)), new_cap_ * sizeof(*(arr))); \
			(cap) = new_cap_; \
		} \
	} while (0)

/* Text built by the renderers: lines separated by '\n'. */
typedef struct hp_buf
{
	hp_arena   *arena;
	char	   *data;
	size_t		len;
	size_t		cap;
} hp_buf;

extern void hp_buf_init(hp_buf *b, hp_arena *a);
/* Room for more bytes (and a '\0') after len. */
extern void hp_buf_reserve(hp_buf *b, size_t more);
extern void hp_buf_append(hp_buf *b, const char *s, size_t len);
extern void hp_buf_printf(hp_buf *b, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));

/* Byte-string keys to dense indexes 0..count-1, in insertion order. */
typedef struct hp_map
{
	hp_arena   *arena;
	uint32_t   *slots;			/* index + 1, 0 = empty */
	size_t		nslots;
	struct hp_map_key
	{
		const void *key;
		size_t		len;
	}		   *keys;
	size_t		count;
	size_t		cap;
} hp_map;

extern void hp_map_init(hp_map *m, hp_arena *a);
/* Index of key; adds a copy of it when absent and *added is set. */
extern size_t hp_map_put(hp_map *m, const void *key, size_t len, bool *added);

#endif
