/*
 * jemalloc.h -- run-time binding to jemalloc's mallctl interface.
 *
 * heapprof never links libjemalloc: a library with DT_NEEDED on it fails to
 * load into a process that did not preload it (static TLS).  mallctl is found
 * with dlsym at run time, and jemalloc is trusted only when the object that
 * defines mallctl also defines this process's malloc.
 *
 * Plain C, no PostgreSQL headers: the PostgreSQL layer turns the codes below
 * into ereports.
 */
#ifndef HEAPPROF_JEMALLOC_H
#define HEAPPROF_JEMALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Why profiling is or is not usable in this process, in the order checked. */
typedef enum hpj_state
{
	HPJ_USABLE = 0,
	HPJ_NOT_LOADED,				/* no mallctl in the process */
	HPJ_NOT_ALLOCATOR,			/* mallctl exists but malloc is someone else's */
	HPJ_NO_PROF_BUILD,			/* jemalloc built without --enable-prof */
	HPJ_PROF_OFF				/* started without prof:true */
} hpj_state;

typedef struct hpj_status
{
	hpj_state	state;
	const char *version;		/* NULL unless jemalloc is the allocator */
	bool		prof_enabled;	/* opt.prof */
	bool		active;			/* prof.active */
	bool		have_sample;	/* sample_interval is valid */
	uint64_t	sample_interval;	/* 2^prof.lg_sample bytes */
	bool		have_stats;		/* the three byte counts are valid */
	uint64_t	allocated;
	uint64_t	active_bytes;
	uint64_t	resident;
	uint64_t	sampling_since;	/* Unix microseconds; 0: nothing sampled since start or reset */
} hpj_status;

/* Largest lg_prof_sample heapprof accepts: 1 GiB mean sampling interval. */
#define HPJ_MAX_LG_SAMPLE 30

extern hpj_state hpj_probe(void);
/* Where the object defining mallctl is loaded (its ELF header), or 0. */
extern uintptr_t hpj_library_base(void);
extern void hpj_get_status(hpj_status *st);

/* These return 0 or an errno value from mallctl (ENOENT without jemalloc); none needs hpj_probe() first. */
extern int	hpj_set_active(bool on);
extern int	hpj_reset(int lg_sample);	/* lg_sample < 0 keeps the interval */
/* Sampling was active before heapprof looked (prof_active:true): since when, in Unix microseconds. */
extern void hpj_active_since(uint64_t since);
/* Write the heap profile to path (a regular file, not through a link): the write's errno; EFAULT: no cause known. */
extern int	hpj_dump(const char *path);
extern int	hpj_thread_active(bool on, bool *was);
/* Bytes this thread has allocated minus freed, ever (0 without jemalloc). */
extern int64_t hpj_thread_net(void);

/*
 * jemalloc 5.3's experimental interfaces.  A hook called for the backtrace
 * of every sampled allocation (inside malloc: it may only read memory and
 * set flags) and the previous hook, which it must call.
 */
typedef void (*hpj_backtrace_fn) (void **vec, unsigned *len, unsigned max_len);
extern int	hpj_hook_backtrace(hpj_backtrace_fn hook, hpj_backtrace_fn *prev);
/* The most this thread held (allocated minus freed) since the last reset, as growth. */
extern int	hpj_thread_peak(uint64_t *peak);
extern int	hpj_thread_peak_reset(void);
/* experimental.prof_recent.alloc_max: set it (want >= 0) or read it; the old value. */
extern int	hpj_recent_max(int64_t want, int64_t *old);
/* Write the recent sampled allocations as jemalloc's JSON to fd. */
extern int	hpj_recent_dump(int fd);
/*
 * jemalloc's clock for those records, in nanoseconds: CLOCK_MONOTONIC_COARSE
 * (ticks of a few milliseconds), or CLOCK_REALTIME with
 * prof_time_resolution:high.  The first call asks jemalloc which: not inside malloc.
 */
extern int64_t hpj_clock_ns(void);

#endif
