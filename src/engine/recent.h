/*
 * recent.h -- jemalloc's record of recent sampled allocations as a heap_v2
 * dump.
 *
 * jemalloc 5.3 keeps the last N sampled allocations
 * (experimental.prof_recent.alloc_max) and writes them as JSON through
 * experimental.prof_recent.alloc_dump: per record its usable size, whether
 * it was released, when it was allocated and freed (nanoseconds of
 * jemalloc's monotonic clock) and its raw backtrace.  This stage turns the
 * records of a time window into heap_v2 text, so the allocations made during
 * a window, or left behind by a statement, go through the same pipeline
 * (hp_parse, hp_unsample, ...) and the same unsampling as the live heap.
 */
#ifndef HEAPPROF_RECENT_H
#define HEAPPROF_RECENT_H

#include "arena.h"

typedef enum hp_recent_pick
{
	HP_RECENT_ALLOCATED,		/* every record allocated in the window */
	HP_RECENT_FREED,			/* ... and released at or before its end */
	HP_RECENT_LIVE				/* ... and not released by its end */
} hp_recent_pick;

typedef struct hp_recent_stats
{
	uint64_t	sample_interval;	/* from the JSON */
	uint64_t	records;		/* records in the JSON */
	int64_t		max_records;	/* recent_alloc_max; -1: unlimited */
	uint64_t	picked;			/* records written */

	/*
	 * The ring was full (records >= max_records > 0) and its oldest record
	 * is not older than from_ns: allocations made in the window may have
	 * been dropped.
	 */
	bool		truncated;
} hp_recent_stats;

/*
 * Append heap_v2 text to out for the records of json (len bytes, need not
 * be NUL-terminated) allocated in [from_ns, to_ns]: HP_RECENT_ALLOCATED all
 * of them; HP_RECENT_FREED those released at or before to_ns (a record
 * released without a dalloc_time counts as released); HP_RECENT_LIVE those
 * not released by to_ns (not released, or dalloc_time > to_ns).  Records
 * with identical traces become one stack: count = records, bytes = sum of
 * usize; a record with an empty trace is left out (no "@" line holds it).
 *
 * The text is "heap_v2/<sample_interval>", a "t*" total line equal to the
 * sum of the stacks, the stacks ("@" line and "t*" line, in order of first
 * appearance, addresses as jemalloc recorded them) and a blank line; the
 * caller appends "\nMAPPED_LIBRARIES:\n" and the process's maps.  hp_parse
 * accepts it, also with no stack.
 *
 * Keys may come in any order; unknown keys are skipped (their values
 * nested at most 64 deep), and keys are compared as written, without
 * decoding escapes.  Malformed JSON -- a missing or repeated key, a wrong
 * type, a number that is not an integer within 0..2^63-1 (recent_alloc_max
 * may be negative: -1 is unlimited), a sample_interval outside 1..2^53
 * (what hp_parse accepts), a trace of more than HP_MAX_FRAMES addresses,
 * picked bytes beyond 2^63-1 -- is HP_EFORMAT with a message in err, and
 * nothing is appended.  st is filled on HP_OK, zeroed otherwise.  Running
 * out of memory is raised through a->env.
 */
extern hp_status hp_recent_to_heap(hp_arena *a, const char *json, size_t len,
								   int64_t from_ns, int64_t to_ns, hp_recent_pick pick,
								   hp_buf *out, hp_recent_stats *st,
								   char *err, size_t errlen);

#endif
