/*
 * analysis.h -- the engine (src/engine) run inside a backend.
 */
#ifndef HEAPPROF_ANALYSIS_H
#define HEAPPROF_ANALYSIS_H

#include "lib/stringinfo.h"

#include "engine/recent.h"
#include "engine/report.h"

/* focus / ignore are PostgreSQL regular expressions, as the ~ operator. */
#define HPG_REGEX_FLAGS (REG_ADVANCED | REG_NOSUB)

/* _PG_init: heapprof.symbol_cache_limit and heapprof.profile_self. */
extern void hpg_analysis_init(void);

/*
 * Run the engine on dump (minus base, if not NULL).  The result lives in a
 * memory context of its own, "heapprof analysis", a child of the current
 * one; hpg_analysis_end frees it (an ERROR frees it with its parent).
 */
extern hp_result *hpg_analyze(const StringInfo dump, const StringInfo base,
							  const hp_options *o, hp_report_kind kind, size_t limit);
extern void hpg_analysis_end(hp_result *r);

/*
 * 53200, as for a report over heapprof.report_memory_limit, if a report
 * would hold bytes (what: a stored profile, ...) before it starts: checked
 * before a file is read, not after.
 */
/* Does a report that holds bytes fit heapprof.report_memory_limit? */
extern bool hpg_report_budget_fits(int64 bytes);
extern void hpg_report_budget_check(int64 bytes, const char *what);
/*
 * The same as an hpg_read_file_checked check: out is the StringInfo the file
 * is read into, and what it holds already (identity lines) counts too.
 */
extern void hpg_report_budget_read(const char *head, int len, int64 size, void *out);

/* Total bytes and stacks of a stored profile; -1 when it cannot be read. */
extern void hpg_summarize(const char *text, int len, int64 *bytes, int64 *stacks);

/*
 * jemalloc's JSON of recent sampled allocations (jemalloc's clock, ns) as
 * heap_v2 text appended to out: the records engine/recent.h picks.
 */
extern void hpg_recent_heap(const StringInfo json, int64 from_ns, int64 to_ns, hp_recent_pick pick,
							StringInfo out, hp_recent_stats *st);
/*
 * The engine without a dump (the history's ticks): an arena of its own
 * "heapprof analysis" context, a child of the current one, bounded by
 * heapprof.report_memory_limit (unless not bounded: what the caller keeps
 * is bounded otherwise); hpg_engine_end frees it (an ERROR frees it with
 * its parent).
 */
extern hp_arena *hpg_engine_begin(bool bounded);
extern void hpg_engine_end(hp_arena *a);

/*
 * Where symbolizers find and keep shared symbol indexes (symindex.c, at
 * _PG_init); settle is called after every analysis, however it ended.
 */
extern void hpg_analysis_index_store(const hp_index_store *st, void (*settle) (void));

/* What the symbol caches hold now: heapprof's, never in a profile. */
extern int64 hpg_symbolizer_bytes(void);

/* Drop the symbol caches; returns the bytes freed. */
extern int64 hpg_forget_symbols(void);

/*
 * Keep this thread's own allocations out of its profile (unless
 * heapprof.profile_self) until the current memory context is reset or
 * deleted.
 */
extern void hpg_unsampled_while_context(void);

#endif
