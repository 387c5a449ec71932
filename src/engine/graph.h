/*
 * graph.h -- aggregate symbolized stacks into functions and call paths.
 *
 * Follows jeprof's FilterAndPrint: total over every stack, then the
 * allocator's own frames are cut, focus / ignore applied, and each path
 * reduced to the functions on it (a function counts once per path, so
 * recursion does not inflate cum).  Paths keep their frames unreduced for
 * edges and collapsed stacks.
 */
#ifndef HEAPPROF_GRAPH_H
#define HEAPPROF_GRAPH_H

#include "symbolize.h"

typedef enum hp_measure
{
	HP_INUSE_SPACE,
	HP_INUSE_OBJECTS
} hp_measure;

/* Does the compiled pattern match s?  Supplied by the caller with the patterns. */
typedef bool (*hp_match_fn) (void *pattern, const char *s);

typedef struct hp_options
{
	hp_measure	measure;
	bool		show_bytes;		/* bytes instead of MB in text and dot */

	/*
	 * focus / ignore: keep only stacks with a frame matching focus, drop
	 * those with a frame matching ignore (NULL: no filter).  The caller
	 * compiles them and matches with its own engine: in a backend,
	 * PostgreSQL's, which checks stack depth and can be cancelled.
	 */
	void	   *focus;
	void	   *ignore;
	hp_match_fn match;

	/* Polled in long loops; may longjmp out (a backend's CHECK_FOR_INTERRUPTS). */
	void		(*interrupt) (void);

	/* with a base profile: negative differences count as 0 (jeprof's --drop_negative) */
	bool		drop_negative;
	int			nodecount;
	double		nodefraction;
	double		edgefraction;
	const char *program;		/* title of dot graphs */

	/*
	 * Allocator folding: frames of these functions, and everything leafward
	 * of them, are cut like jemalloc's own, so memory is charged to the
	 * first caller above an allocator layer (e.g. PostgreSQL's palloc).
	 * fold_names are display names; fold_starts are run-time start
	 * addresses, sorted, for functions that have no name (static code).
	 */
	const char *const *fold_names;
	const uint64_t *fold_starts;
	size_t		nfold_starts;
} hp_options;

#define HP_OPTIONS_DEFAULT {HP_INUSE_SPACE, false, NULL, NULL, NULL, NULL, false, 80, 0.005, 0.001, "heap", NULL, NULL, 0}

/* PostgreSQL's memory-context entry points: every palloc-family call enters here. */
extern const char *const hp_postgres_allocator[];

typedef struct hp_func
{
	const char *name;
	const char *location;		/* file:line of one of its frames, or its object */
	const char *object;			/* file name of its object, or NULL */
	double		flat;
	double		cum;
	bool		seen;			/* on some path after cutting and filtering */
} hp_func;

/*
 * A call path after the allocator's frames are cut: the functions on it,
 * leaf first, with functions inlined at an address before the function they
 * are inlined into.  Stacks with the same functions are one path, so a
 * profile minus a base is taken per symbolized stack: a base from another
 * process, with other addresses, still compares.
 */
typedef struct hp_path
{
	uint32_t   *frames;			/* function indexes */
	uint32_t	nframes;
	uint8_t		match;			/* 1: a frame matches focus; 2: one matches ignore */
	double		bytes;
	double		objs;
	double		value;			/* bytes or objs, as measured */
	double		current;		/* the measure in the profile alone, before any base */
} hp_path;

typedef struct hp_graph
{
	double		total;			/* every path, before focus / ignore (jeprof's Total) */
	double		local_total;	/* sum of flat: what the report focuses on */
	hp_func    *funcs;
	size_t		nfuncs;
	hp_path    *paths;
	size_t		npaths;

	/*
	 * The profile's distinct addresses (not the base's): the functions at
	 * pcs[i] are pc_funcs[pc_first[i] .. pc_first[i + 1]), inlined ones
	 * first ("f (inline)", as jeprof names them), the real function last.
	 */
	uint64_t   *pcs;
	hp_symbol  *syms;
	uint32_t   *pc_first;
	uint32_t   *pc_funcs;
	size_t		npcs;
} hp_graph;

/* base may be NULL; with one, every value is profile minus base per path. */
extern hp_status hp_build_graph(hp_arena *a, const hp_profile *p, const hp_profile *base,
								hp_symbolizer *s, const hp_options *o, hp_graph *g,
								char *err, size_t errlen);

#define HP_INLINE_SUFFIX " (inline)"

/* jeprof's TranslateStack skips kernel addresses in function views. */
#define HP_KERNEL_PC(pc) ((pc) > UINT64_C(0x7fffffffffffffff))

#endif
