/*
 * labels.c -- every sampled allocation labelled with the statement running
 * and the memory context that owns it.
 *
 * Which code holds a backend's memory is in the stacks; which statement
 * allocated it, and in which memory context it sits, is not, and is what a
 * DBA asks of a backend grown large (a plan cache of hundreds of prepared
 * statements, relcache growth, one query's slow leak).  So the backtrace
 * hook (peak.c) appends, at the root of every sampled stack, the top-level
 * statement's queryid as pg_stat_activity shows it and the name of the
 * memory context whose block it is (owner.c: as pg_backend_memory_contexts
 * counts it), or, for a block no context owns (plain malloc), of
 * CurrentMemoryContext, as pseudo-frames (format.h).  A new context's first
 * block is labelled by the site that created it, named after the context
 * created there (owner.c tells which).  jemalloc keeps stacks
 * by their frames, so the same code under two statements is two stacks, and
 * every dump -- a report, a snapshot, an exit dump, a peak, a capture --
 * carries its labels; the names and statement texts seen go in its
 * %heapprof-label-* lines (capture.c's identity lines).
 *
 * A context is named as pg_backend_memory_contexts names it: a hash table's
 * ("dynahash") by its identifier, the table's name.
 *
 * The hook runs inside malloc: the tables are static, filled the first time
 * a context name (by its text: an extension's may be no constant), a
 * creating site or a queryid is seen, and a full table leaves the label out
 * (a context) or the text out (a statement) rather than evict.  Outside any statement (at backend
 * start, between statements, where pg_stat_activity still shows the last
 * one's), or with compute_query_id off, the queryid is 0 and no query frame
 * is pushed.
 */
#include "postgres.h"

#include "mb/pg_wchar.h"
#include "nodes/memnodes.h"
#include "utils/guc.h"

#include "compat.h"
#include "labels.h"
#include "owner.h"

/* Probes of the open-addressing tables before a new name gives up. */
#define PROBES 16

static bool labels_on = true;
static bool hooked;				/* hpg_labels_push is called: heapprof is preloaded */

/* Plain data the hook fills: it runs inside malloc. */
static hp_context_slot contexts[HP_LABEL_CONTEXTS];
static hp_query_slot queries[HP_LABEL_QUERIES];

/*
 * Slot keys: a name's is its text's hash, a creating site's its address
 * with the top bit set.  A creating site is the creator's call and its
 * caller's: hash_create makes every hash table's context from one call,
 * named after the table, and its caller tells them apart.  A site's slot is
 * named when its context is: it says "new context" until then, and again
 * for good when a second name comes from the same site (PostgreSQL wants
 * constant names, an extension may not).
 */
#define SITE_BIT ((uintptr_t) 1 << (sizeof(uintptr_t) * 8 - 1))
#define SITE_KEY(site) ((const void *) ((site) | SITE_BIT))
#define UNNAMED "new context"
static bool site_named[HP_LABEL_CONTEXTS];
static bool site_ambiguous[HP_LABEL_CONTEXTS];

/* A table slot for a 64-bit key: Fibonacci hashing, n a power of two. */
static inline unsigned
hash_slot(uint64 key, unsigned n)
{
	return (unsigned) ((key * UINT64CONST(0x9E3779B97F4A7C15)) >> 40) & (n - 1);
}

/*
 * Bounded copy of a NUL-terminated string we may not trust to end soon, of
 * whole characters: a statement cut inside one would make the dump's label
 * lines, hence heapprof_dump_portable(), invalid in the database encoding.
 * Neither call allocates nor raises (this runs inside malloc).
 */
static void
copy_text(char *dst, const char *src, size_t size)
{
	int			enc = GetDatabaseEncoding();
	size_t		len = src ? strnlen(src, size - 1) : 0;
	size_t		i = 0;

	while (i < len)
	{
		int			n = pg_encoding_verifymbchar(enc, src + i, (int) (len - i));

		if (n <= 0)
			break;
		memcpy(dst + i, src + i, n);
		i += n;
	}
	dst[i] = '\0';
}

/* The slot of key, named name when new; -1 when the table is full. */
static int
context_slot(const void *key, const char *name)
{
	unsigned	h = hash_slot((uint64) (uintptr_t) key, HP_LABEL_CONTEXTS);

	for (int k = 0; k < PROBES; k++)
	{
		hp_context_slot *s = &contexts[(h + k) & (HP_LABEL_CONTEXTS - 1)];

		if (s->key == key)
			return (int) (s - contexts);
		if (s->key == NULL)
		{
			copy_text(s->name, name[0] ? name : "?", sizeof(s->name));
			s->key = key;
			return (int) (s - contexts);
		}
	}
	return -1;
}

/* The key of a name: FNV-1a of its text as a slot keeps it, never with SITE_BIT. */
static const void *
name_key(const char *name)
{
	uint64		h = UINT64CONST(0xcbf29ce484222325);

	for (size_t i = 0; i < HP_LABEL_NAME_MAX - 1 && name[i] != '\0'; i++)
		h = (h ^ (unsigned char) name[i]) * UINT64CONST(0x100000001b3);
	return (const void *) (uintptr_t) ((h | 1) & ~(uint64) SITE_BIT);
}

/* What pg_backend_memory_contexts calls c. */
static const char *
name_of(MemoryContext c)
{
	if (c->ident != NULL && strcmp(c->name, "dynahash") == 0)
		return c->ident;
	return c->name;
}

/* The slot of c's name; -1 when the table is full. */
static int
name_slot(MemoryContext c)
{
	const char *name = name_of(c);

	return context_slot(name_key(name), name);
}

/* A creating site's key: the creator's call and its caller's (or 0), as one. */
static uintptr_t
pair_key(uintptr_t site, uintptr_t caller)
{
	return (uintptr_t) ((uint64) site * UINT64CONST(0x9E3779B97F4A7C15)) ^ caller;
}

/* owner.c's answer for a creating site's slot: the context created there. */
static void
site_created(int slot, MemoryContext created)
{
	hp_context_slot *s = &contexts[slot];
	const char *name = name_of(created);
	char		copy[HP_LABEL_NAME_MAX];

	if (site_ambiguous[slot])
		return;
	copy_text(copy, name[0] ? name : "?", sizeof(copy));
	if (!site_named[slot])
	{
		memcpy(s->name, copy, sizeof(copy));
		site_named[slot] = true;
	}
	else if (strcmp(s->name, copy) != 0)
	{
		strlcpy(s->name, UNNAMED, sizeof(s->name));
		site_ambiguous[slot] = true;
	}
}

/* Keep the text of a queryid seen for the first time, while there is room. */
static void
note_query(uint64 id)
{
	unsigned	h = hash_slot(id, HP_LABEL_QUERIES);

	for (int k = 0; k < PROBES; k++)
	{
		hp_query_slot *s = &queries[(h + k) & (HP_LABEL_QUERIES - 1)];

		if (s->queryid == id)
			return;
		if (s->queryid == 0)
		{
			/* pg_stat_activity's text: in shared memory, always mapped */
			copy_text(s->text, MyBEEntry ? MyBEEntry->st_activity_raw : NULL,
					  Min(sizeof(s->text), (size_t) pgstat_track_activity_query_size));
			s->queryid = id;
			return;
		}
	}
}

void
hpg_labels_push(void **vec, unsigned *len, unsigned max_len)
{
	MemoryContext cxt = CurrentMemoryContext;
	unsigned	n = *len;
	uint64		id;
	int			slot;
	hpg_owner	owner;
	hpg_owner_kind kind;

	hpg_owner_settle();			/* a context created since the last sample */
	kind = hpg_owner_of(vec, &n, &owner);
	*len = n;
	if (!labels_on || n > max_len || max_len - n < HP_LABEL_FRAMES)
		return;
	switch (kind)
	{
		case HPG_OWNER_CONTEXT:
			if (owner.context->name != NULL && (slot = name_slot(owner.context)) >= 0)
				vec[n++] = (void *) (uintptr_t) HP_LABEL_PC(HP_LABEL_OWNER, slot);
			break;
		case HPG_OWNER_CREATING:
			slot = context_slot(SITE_KEY(pair_key(owner.site, owner.caller)), UNNAMED);
			if (slot >= 0)
			{
				vec[n++] = (void *) (uintptr_t) HP_LABEL_PC(HP_LABEL_OWNER, slot);
				hpg_owner_expect(slot, site_created);
			}
			break;
		case HPG_OWNER_NONE:
			if (cxt != NULL && cxt->name != NULL && (slot = name_slot(cxt)) >= 0)
				vec[n++] = (void *) (uintptr_t) HP_LABEL_PC(HP_LABEL_CONTEXT, slot);
			break;
	}
	id = hpg_running_query_id();
	if (id != 0)
	{
		note_query(id);
		vec[n++] = (void *) (uintptr_t) HP_LABEL_PC(HP_LABEL_QUERY_HI, id >> 32);
		vec[n++] = (void *) (uintptr_t) HP_LABEL_PC(HP_LABEL_QUERY_LO, id);
	}
	*len = n;
}

void
hpg_labels_hooked(void)
{
	hooked = true;
}

void
hpg_labels_follow(bool sampling)
{
	hpg_owner_wrap(sampling && labels_on && hooked);
}

void
hpg_labels_tables(hp_identity *id)
{
	id->contexts = contexts;
	id->ncontexts = HP_LABEL_CONTEXTS;
	id->queries = queries;
	id->nqueries = HP_LABEL_QUERIES;
}

void
hpg_labels_init(void)
{
	DefineCustomBoolVariable("heapprof.labels",
							 "Label each sampled allocation with the statement's queryid and the memory context.",
							 "heapprof_stacks() shows them; reports group and filter by them. The queryid needs compute_query_id. Off when a process starts sampling, its contexts are known only as current at malloc.",
							 &labels_on,
							 true,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);
}
