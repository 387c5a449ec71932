/*
 * recording.h -- jemalloc's record of recent sampled allocations, on while needed.
 */
#ifndef HEAPPROF_RECORDING_H
#define HEAPPROF_RECORDING_H

/* _PG_init: heapprof.recent_allocations. */
extern void hpg_recording_init(void);
/* The rest is plain C, for the target of a request too. */
/* Record until jemalloc's clock reads until_ns (a window); returns 0 or an errno. */
extern int	hpg_recording_open(int64 until_ns);
/* Record while statement captures are armed. */
extern void hpg_recording_for_captures(bool on);
/* Is a window's deadline past while records are kept?  (cheap: from jemalloc's hook) */
extern bool hpg_recording_overdue(void);
/* Stop recording if nobody needs it any more. */
extern void hpg_recording_serve(void);
/* Write the records as jemalloc's JSON to path (a new file); 0 or an errno. */
extern int	hpg_recording_dump(const char *path);

#endif
