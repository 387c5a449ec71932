/*
 * profile.h -- a jemalloc heap_v2 dump as the engine sees it.
 *
 * Pipeline: parse (parse.c) -> unsample (unsample.c) -> symbolize
 * (symbolize.c) -> aggregate (graph.c) -> render (render.c).  Every stage is
 * plain C without PostgreSQL headers, so the same code runs in a backend, in
 * the offline command, in unit tests and under the fuzzer.
 */
#ifndef HEAPPROF_PROFILE_H
#define HEAPPROF_PROFILE_H

#include "arena.h"

/* Build-id of an object loaded in the dumped process, keyed by load bias. */
typedef struct hp_build_id
{
	uint64_t	bias;
	uint8_t		id[64];
	size_t		len;
} hp_build_id;

/* Engine status codes. */
typedef enum hp_status
{
	HP_OK = 0,
	HP_EFORMAT,					/* not a heap_v2 dump, or malformed */
	HP_ENOMEM
} hp_status;

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
} hp_sample;

typedef struct hp_profile
{
	uint64_t	rate;			/* mean sampling interval R, from heap_v2/R */
	hp_sample  *samples;
	size_t		nsamples;
	size_t		cap;
	const char *maps;			/* MAPPED_LIBRARIES: text, a /proc/PID/maps copy */
	size_t		maps_len;

	/*
	 * What the dumping process knew of itself, from "%heapprof-build-id BIAS
	 * ID" and "%heapprof-allocator BASE" lines heapprof writes before the
	 * dump (hex numbers): the build-ids of its objects by load bias, and where
	 * jemalloc was loaded.  The symbolizer checks files on disk against them.
	 */
	struct hp_build_id *ids;
	size_t		nids;
	size_t		ids_cap;
	uint64_t	allocator_base;
} hp_profile;

/* Parse dump text (need not be NUL-terminated).  err gets a message on failure. */
extern hp_status hp_parse(hp_arena *a, const char *text, size_t len,
						  hp_profile *out, char *err, size_t errlen);

/* jeprof's AdjustSamples for v2 sampling: scale counts back to the population. */
extern void hp_unsample(hp_profile *p);

#endif
