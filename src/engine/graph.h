/*
 * graph.h -- aggregate located stacks into functions and call paths.
 *
 * Follows jeprof's FilterAndPrint: total over every stack, then the
 * allocator's own frames are cut, focus / ignore applied, and each path
 * reduced to the functions on it (a function counts once per path, so
 * recursion does not inflate cum).  Paths keep their frames unreduced for
 * edges and collapsed stacks.  The input is a profile and its located
 * addresses (locate.h); the graph never calls the symbolizer.
 */
#ifndef HEAPPROF_GRAPH_H
#define HEAPPROF_GRAPH_H

#include "locate.h"

typedef enum hp_measure
{
	HP_INUSE_SPACE,
	HP_INUSE_OBJECTS
} hp_measure;

/* What a report puts at the root of every stack (labels.h). */
typedef enum hp_group
{
	HP_GROUP_FUNCTION,			/* nothing: functions only */
	HP_GROUP_QUERY,				/* "query ID", or "query (none)" outside any statement */
	HP_GROUP_CONTEXT			/* "context NAME", or "context (none)" */
} hp_group;

typedef struct hp_options
{
	hp_measure	measure;
	bool		show_bytes;		/* bytes instead of MB in text and dot */
	bool		by_cum;			/* text and top rows by cum, not flat (jeprof's --cum) */

	/*
	 * focus / ignore: keep only stacks with a frame matching focus, drop
	 * those with a frame matching ignore (NULL: no filter).  The caller
	 * compiles them and matches with its own engine through env->match: in
	 * a backend, PostgreSQL's, which checks stack depth and can be cancelled.
	 */
	void	   *focus;
	void	   *ignore;

	/* with a base profile: negative differences count as 0 (jeprof's --drop_negative) */
	bool		drop_negative;

	/*
	 * The base is joined, not subtracted (weight 0, see combine.h): values
	 * are the profile's, and each path keeps the base's own sums in input[2]
	 * and input[3] (a window of allocations and what was freed by its end).
	 */
	bool		join_base;
	int			nodecount;
	double		nodefraction;
	double		edgefraction;
	const char *program;		/* title of dot graphs and flame graphs */

	/*
	 * Allocator folding (fold false: none): frames of the functions named in
	 * fold_names (display names, NULL-terminated; NULL: none), of functions
	 * starting at one of the profile's own recorded fold starts
	 * (hp_profile.fold_starts, for functions without a name), and everything
	 * leafward of them, are cut like jemalloc's own, so memory is charged to
	 * the first caller above an allocator layer (e.g. PostgreSQL's palloc).
	 */
	bool		fold;
	const char *const *fold_names;

	/* flame graph: the object (file name) of the program itself, warm colors; NULL: none */
	const char *home_object;

	/*
	 * Labels (labels.h): a root per statement or context, and only the
	 * samples of one statement (with_queryid) or one context (NULL: any).
	 */
	hp_group	group_by;
	bool		with_queryid;
	uint64_t	queryid;
	const char *context;
} hp_options;

#define HP_OPTIONS_DEFAULT { \
	.measure = HP_INUSE_SPACE, \
	.nodecount = 80, \
	.nodefraction = 0.005, \
	.edgefraction = 0.001, \
	.program = "heap", \
}

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
 * are inlined into.  Stacks with the same functions and labels are one
 * path, however many inputs they come from (combine.h).
 */
typedef struct hp_path
{
	uint32_t   *frames;			/* function indexes */
	uint32_t	nframes;
	uint8_t		match;			/* 1: a frame matches focus; 2: one matches ignore */
	double		bytes;			/* the inputs' own, weighted: profile minus base */
	double		objs;
	double		value;			/* bytes or objs, as measured */
	double		current;		/* the measure in input 0 alone: the profile, before any base */
	/* input i's own bytes and objs, input[2 i] and input[2 i + 1]; NULL with one input */
	double	   *input;
	uint8_t		labels;			/* its samples' labels (profile.h): paths differ by them too */
	uint32_t	context;		/* the current profile's contexts[context] */
	uint64_t	queryid;
} hp_path;

typedef struct hp_graph
{
	double		total;			/* every path, before focus / ignore (jeprof's Total) */
	double		local_total;	/* sum of flat: what the report focuses on */
	hp_coverage coverage;		/* the profile's; unknown for a diff */
	double		profile_bytes;	/* every stack's bytes, whatever the measure */
	hp_func    *funcs;
	size_t		nfuncs;
	hp_path    *paths;
	size_t		npaths;

	/*
	 * The functions at the profile's located address i (not the base's) are
	 * pc_funcs[pc_first[i] .. pc_first[i + 1]), inlined ones first ("f
	 * (inline)", as jeprof names them), the real function last.
	 */
	uint32_t   *pc_first;
	uint32_t   *pc_funcs;
} hp_graph;

/*
 * p with its located addresses pl (input 0); base (NULL if none) with bl
 * (input 1): every value is then profile minus base per path, or the
 * profile's with o->join_base.  Each profile folds with its own recorded
 * fold starts.  Errors (bounds) are raised through a->env.
 */
extern void hp_build_graph(hp_arena *a, const hp_profile *p, const hp_located *pl,
						   const hp_profile *base, const hp_located *bl,
						   const hp_options *o, hp_graph *g);

/* A stack symbolized elsewhere: function names, leaf first, and its values. */
typedef struct hp_named_stack
{
	const char *const *frames;
	uint32_t	nframes;
	bool		base;			/* subtracted instead of added */
	double		bytes;
	double		objs;
} hp_named_stack;

/*
 * The graph of stacks named, cut and filtered elsewhere (heapprof_stacks rows
 * of several processes, pg_heapprof --merge): combined with weight 1, base
 * stacks (input 1) with -1, as hp_build_graph does with a base.  Functions
 * have no location or object, and pc_first / pc_funcs are NULL.
 */
extern void hp_graph_from_stacks(hp_arena *a, const hp_named_stack *s, size_t n,
								 const hp_options *o, hp_graph *g);

#define HP_INLINE_SUFFIX " (inline)"

/* jeprof's TranslateStack skips kernel addresses in function views. */
#define HP_KERNEL_PC(pc) ((pc) > UINT64_C(0x7fffffffffffffff))

#endif
