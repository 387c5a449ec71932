/*
 * profile.h -- a jemalloc heap_v2 dump as the engine sees it.
 *
 * Pipeline: parse (parse.c) -> unsample (unsample.c) -> locate: symbolize
 * every distinct address (locate.c, symbolize.c) -> graph (graph.c) ->
 * render (render_*.c); report.c runs them in order.  recent.c turns
 * jemalloc's prof_recent JSON into heap_v2 text for the same pipeline.
 * Every stage is plain C without PostgreSQL headers, so the same code runs
 * in a backend, in the offline command, in unit tests and under the fuzzer.
 */
#ifndef HEAPPROF_PROFILE_H
#define HEAPPROF_PROFILE_H

#include "format.h"

/* Most frames one stack may have; a longer one is a format error. */
#define HP_MAX_FRAMES 65536

/*
 * One "t*:" line of a stack.  pcs[0] is the leaf as dumped; every caller
 * frame already has 1 subtracted (jeprof's FixCallerAddresses), so each
 * address lies inside the call instruction and names the right function and
 * line.  Counts are unsampled in place by hp_unsample.
 */
typedef struct hp_sample
{
	const uint64_t *pcs;
	uint32_t	npcs;
	double		objs;			/* in-use objects */
	double		bytes;			/* in-use bytes (usable size) */
	double		acc_objs;		/* cumulative, only with prof_accum:true */
	double		acc_bytes;
	/* its labels, from the HP_LABEL_* frames at its root (format.h), which the stack loses */
	uint8_t		labels;			/* HP_HAS_QUERY | HP_HAS_CONTEXT | HP_OWNED */
	uint32_t	context;		/* the writer's slot; after hp_labels_prepare, hp_profile.contexts[i] */
	uint64_t	queryid;
} hp_sample;

#define HP_HAS_QUERY 1
#define HP_HAS_CONTEXT 2
#define HP_OWNED 4				/* the block is the context's, not just allocated while it was current */

typedef struct hp_profile
{
	char		encoding[HP_ENCODING_MAX];	/* the database encoding of the labels' texts, or "" */
	uint64_t	rate;			/* mean sampling interval R, from heap_v2/R */
	hp_sample  *samples;
	size_t		nsamples;
	size_t		cap;
	const char *maps;			/* MAPPED_LIBRARIES: text, a /proc/PID/maps copy */
	size_t		maps_len;

	/*
	 * What the dumping process knew of itself, from the identity lines
	 * before the dump (format.h): the build-ids of its objects by load bias
	 * (at most HP_MAX_OBJECTS), where jemalloc was loaded, and the run-time
	 * starts of nameless allocator functions to fold (sorted, distinct, at
	 * most HP_MAX_FOLD_STARTS).  The symbolizer checks files on disk against
	 * the ids; the graph folds each profile with its own starts.
	 */
	hp_build_id *ids;
	size_t		nids;
	size_t		ids_cap;
	uint64_t	allocator_base;
	uint64_t   *fold_starts;
	size_t		nfold_starts;
	hp_coverage coverage;		/* unknown unless recorded */

	/*
	 * The %heapprof-label-* lines: a context slot (4 bytes) or a queryid (8)
	 * -> its index in the map, the same index in slot_names / query_texts
	 * (NULL: no line).  hp_labels_prepare (labels.h) then names every
	 * sample's context: contexts[sample.context].
	 */
	hp_map		label_slots;
	const char **slot_names;
	size_t		slot_names_cap;
	hp_map		label_queries;
	const char **query_texts;
	size_t		query_texts_cap;
	const char **contexts;
	size_t		ncontexts;
} hp_profile;

/*
 * Parse dump text (need not be NUL-terminated).  A malformed dump is a
 * result, HP_EFORMAT with a message in err; running out of memory is raised
 * through a->env.
 */
extern hp_status hp_parse(hp_arena *a, const char *text, size_t len,
						  hp_profile *out, char *err, size_t errlen);

/* jeprof's AdjustSamples for v2 sampling: scale counts back to the population. */
extern void hp_unsample(hp_profile *p);

/* format.c: take one leading "%" line (without its newline) into out. */
extern void hp_read_comment(hp_arena *a, const char *line, size_t len, hp_profile *out);

/*
 * The dump text's hex numbers, for the parser and the "%" lines alike: after
 * white space, "0x" allowed, at most 16 significant digits, then white space
 * or the end; advances *p.  hp_hex_digit: a digit's value, or -1.
 */
extern bool hp_read_hex(const char **p, const char *end, uint64_t *out);
extern int	hp_hex_digit(char ch);

#endif
