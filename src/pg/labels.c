/*
 * labels.c -- every sampled allocation labelled with the statement running
 * and the memory context it is allocated in.
 *
 * Which code holds a backend's memory is in the stacks; which statement
 * allocated it, and in which memory context it sits, is not, and is what a
 * DBA asks of a backend grown large (a plan cache of hundreds of prepared
 * statements, relcache growth, one query's slow leak).  So the backtrace
 * hook (peak.c) appends, at the root of every sampled stack, the top-level
 * statement's queryid as pg_stat_activity shows it and the name of
 * CurrentMemoryContext, as pseudo-frames (format.h).  jemalloc keeps stacks
 * by their frames, so the same code under two statements is two stacks, and
 * every dump -- a report, a snapshot, an exit dump, a peak, a capture --
 * carries its labels; the names and statement texts seen go in its
 * %heapprof-label-* lines (capture.c's identity lines).
 *
 * The hook runs inside malloc: the tables are static, filled the first time
 * a context name (by its address: names are static strings) or a queryid is
 * seen, and a full table leaves the label out (a context) or the text out
 * (a statement) rather than evict.  Outside any statement (at backend
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

/* Probes of the open-addressing tables before a new name gives up. */
#define PROBES 16

static bool labels_on = true;

/* Plain data the hook fills: it runs inside malloc. */
static hp_context_slot contexts[HP_LABEL_CONTEXTS];
static hp_query_slot queries[HP_LABEL_QUERIES];

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

/* The slot naming this context name, taken when new; -1 when the table is full. */
static int
context_slot(const char *name)
{
	unsigned	h = hash_slot((uint64) (uintptr_t) name, HP_LABEL_CONTEXTS);

	for (int k = 0; k < PROBES; k++)
	{
		hp_context_slot *s = &contexts[(h + k) & (HP_LABEL_CONTEXTS - 1)];

		if (s->key == name)
			return (int) (s - contexts);
		if (s->key == NULL)
		{
			copy_text(s->name, name[0] ? name : "?", sizeof(s->name));
			s->key = name;
			return (int) (s - contexts);
		}
	}
	return -1;
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

	if (!labels_on || n > max_len || max_len - n < HP_LABEL_FRAMES)
		return;
	if (cxt != NULL && cxt->name != NULL && (slot = context_slot(cxt->name)) >= 0)
		vec[n++] = (void *) (uintptr_t) HP_LABEL_PC(HP_LABEL_CONTEXT, slot);
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
							 "heapprof_stacks() shows them; reports group and filter by them. The queryid needs compute_query_id.",
							 &labels_on,
							 true,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);
}
