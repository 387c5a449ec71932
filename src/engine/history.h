/*
 * history.h -- the heap history: what each sampling process held at each
 * tick of the server's collector, in a few rows, and what grows in it.
 *
 * At every tick (heapprof.history_interval) the collector summarises each
 * sampling process's live heap -- bytes by function (folded, the top few and
 * the rest), by statement (queryid), by memory context, and how much of it
 * no memory context owns (plain malloc: what pg_backend_memory_contexts
 * cannot see) -- and keeps the tick as one file (history.c owns its
 * format).  growth.c reads many ticks and names what grows steadily (leak
 * suspects); render_timeline.c draws the top growers over time.
 */
#ifndef HEAPPROF_HISTORY_H
#define HEAPPROF_HISTORY_H

#include "arena.h"
#include "graph.h"

/* What a row counts bytes of. */
typedef enum hp_hist_kind
{
	HP_HIST_TOTAL,				/* the process's whole sampled heap (name "heap") */
	HP_HIST_FUNCTION,			/* a function: the first one above the allocator (folded) */
	HP_HIST_QUERY,				/* a statement: its queryid in decimal, "(none)" outside any */
	HP_HIST_CONTEXT,			/* a memory context by name; "current: NAME" for memory no context owns */
	HP_HIST_KINDS				/* not a kind: the size of tables indexed by one */
} hp_hist_kind;

/* Names of the rows that add up what the top rows leave out, one per kind. */
#define HP_HIST_REST "(the rest)"

typedef struct hp_hist_row
{
	hp_hist_kind kind;
	const char *name;			/* any bytes but NUL: from symbols, contexts, other roles */
	int64_t		bytes;			/* unsampled estimate, as reports show */
	int64_t		outside;		/* of bytes, what no memory context owns; -1: not known (labels off) */
} hp_hist_row;

/* A process at a tick: pid and start tell it apart from a later one with its pid. */
typedef struct hp_hist_proc
{
	int32_t		pid;
	int64_t		start;			/* backend start, Unix microseconds */
	uint32_t	role;			/* role and database OIDs, 0 for none */
	uint32_t	database;
	const char *backend_type;	/* as pg_stat_activity names it */
	const char *application;
	const char *encoding;		/* of its names (a database's), "" if unknown: readers convert */
	hp_hist_row *rows;
	size_t		nrows;
} hp_hist_proc;

typedef struct hp_hist_tick
{
	int64_t		time;			/* Unix microseconds */
	int64_t		interval;		/* the collector's interval then, microseconds */
	hp_hist_proc *procs;
	size_t		nprocs;
} hp_hist_tick;

/*
 * A process's rows from its graph (the STACKS report of its dump, labels
 * kept): the total, and the top functions, queries and contexts (at most
 * top of each, by bytes, then the rest of each kind in one row).  Rows
 * live in a.
 */
extern void hp_hist_summarize(hp_arena *a, const hp_profile *p, const hp_graph *g, size_t top,
							  hp_hist_proc *out);

/* Copy from's rows (names included) into out's, in a: out of an analysis's memory into a tick's. */
extern void hp_hist_copy_rows(hp_arena *a, const hp_hist_proc *from, hp_hist_proc *out);

/* ---- the tick file (history.c): the one reader and writer of its format ---- */

/*
 * The bytes of a name a tick file keeps: at most 4096, cut before a UTF-8
 * character that does not fit.  Summaries cut names so, so that two names
 * alike in their first 4096 bytes are one row, never two the reader refuses.
 */
extern size_t hp_hist_text_len(const char *s);

/* Append tick t as text to out. */
extern void hp_hist_write(hp_buf *out, const hp_hist_tick *t);

/*
 * Read a tick written by hp_hist_write into t (everything in a).  A file
 * that is not one, or was cut short, is HP_EFORMAT with a message in err:
 * its readers skip it.  Out of memory and the budget are raised through
 * a->env.
 */
extern hp_status hp_hist_read(hp_arena *a, const char *text, size_t len, hp_hist_tick *t,
							  char *err, size_t errlen);

/* ---- growth (growth.c): leak suspects ---- */

typedef struct hp_growth_options
{
	int64_t		from;			/* the window, Unix microseconds; ticks outside it are ignored */
	int64_t		to;
	bool		per_process;	/* a row per process and name; else one per name */
	double		min_rate;		/* bytes per hour below which a name is no suspect */
	int			kinds;			/* bit 1 << hp_hist_kind per kind wanted; 0: every kind but TOTAL */
} hp_growth_options;

typedef struct hp_suspect
{
	hp_hist_kind kind;
	const char *name;
	int32_t		pid;			/* per process; 0 across processes */
	int64_t		start;
	double		bytes_per_hour; /* Theil-Sen slope, summed over the processes it grows in */
	double		outside_per_hour;	/* the same for its bytes no context owns */
	bool		outside_contexts;	/* most of its growth is outside memory contexts */
	double		steadiness;		/* Kendall's tau of its series, 0..1 (1: grew at every tick) */
	int64_t		since;			/* when its growth began (its window low), Unix microseconds */
	int64_t		bytes;			/* what it holds at its last tick */
	int			processes;		/* processes it grows in */
	int			points;			/* ticks it was seen at (across: of its longest series) */
} hp_suspect;

/*
 * The suspects among ticks (sorted by time, n of them), most growth first:
 * names whose bytes grew steadily (a Mann-Kendall trend at the 1 % level)
 * at a robust rate (Theil-Sen, the median of every pairwise slope, so a
 * spike or a fill that stopped early in the window does not count) of at
 * least o->min_rate.  Returns the number of rows.
 */
extern size_t hp_growth(hp_arena *a, const hp_hist_tick *ticks, size_t n,
						const hp_growth_options *o, hp_suspect **out);

/* What hp_growth_functions_first reads of a row of suspects, whatever holds it. */
typedef struct hp_growth_reader
{
	bool		(*is_function) (const void *row);
	double		(*rate) (const void *row);	/* bytes per hour */
	bool		(*same_series) (const void *a, const void *b);	/* the same process, or across */
} hp_growth_reader;

/*
 * The order suspects are shown in, here and wherever they are merged (the
 * client's --growth --merge): rows sorted fastest first, then each row of
 * another kind put behind the first function of its series that grows
 * within a tenth of its rate -- the function is what holds the memory, the
 * statement or context where.  n rows of size bytes; hp_growth's are in it.
 */
extern void hp_growth_functions_first(void *rows, size_t n, size_t size, const hp_growth_reader *r);

/* ---- the timeline (render_timeline.c) ---- */

typedef struct hp_timeline_options
{
	int64_t		from;
	int64_t		to;
	int32_t		pid;			/* 0: every process, summed */
	hp_hist_kind kind;			/* which names to draw */
	size_t		series;			/* at most this many, the fastest growers first */
	const char *title;
} hp_timeline_options;

/*
 * A self-contained SVG: the bytes of the fastest growers (hp_growth, any
 * rate) over time, one line per name, a value on hover at every tick, each
 * series' rate in its legend.  Names go through sink.h's XML sink.
 */
extern void hp_render_timeline(hp_arena *a, const hp_hist_tick *ticks, size_t n,
							   const hp_timeline_options *o, hp_buf *out);

#endif
