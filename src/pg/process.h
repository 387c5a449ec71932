/*
 * process.h -- the one place that decides "this process or process N".
 *
 * Every SQL function takes pid => N; each operation below acts on the
 * calling backend directly, or asks process N through a request.
 */
#ifndef HEAPPROF_PROCESS_H
#define HEAPPROF_PROCESS_H

#include "datatype/timestamp.h"
#include "lib/stringinfo.h"

#include "files.h"
#include "jemalloc.h"
#include "values.h"

typedef struct hpg_proc
{
	bool		self;
	int			pid;
} hpg_proc;

/* The process a pid argument names: NULL or the caller's own pid is this one. */
extern hpg_proc hpg_proc_of(bool isnull, int32 pid);

/* The process's status and peak; version (may be NULL'ed in st) copied into buf. */
extern void hpg_proc_status(hpg_proc p, hpj_status *st, char *version, size_t size, hpg_peak *peak);
/* Switch sampling; returns whether it is active afterwards. */
extern bool hpg_proc_set_active(hpg_proc p, bool on);
/* Forget every sample (lg_sample < 0 keeps the interval); returns the interval in force. */
extern int64 hpg_proc_reset(hpg_proc p, int lg_sample);
/*
 * Append the process's profile, after its identity lines when asked; check
 * (if not NULL) judges it before it is read (hpg_read_file_checked).
 */
extern void hpg_proc_dump(hpg_proc p, StringInfo out, bool identity, hpg_read_check check, void *arg);
/* Append the process's peak profile (identity lines first) and what it knows of its peak; ERROR if it has none. */
extern void hpg_proc_peak(hpg_proc p, StringInfo out, hpg_peak *info);
/*
 * Have process p (not this one) record its sampled allocations for seconds,
 * then append jemalloc's JSON of its recent ones to json, its identity lines
 * to ids and its MAPPED_LIBRARIES section to maps; *from and *to bound the
 * window on its jemalloc clock.  Interruptible; the target stops recording
 * by itself soon after the window, whatever happens here.
 */
extern void hpg_proc_record(hpg_proc p, double seconds, StringInfo json, StringInfo ids,
							StringInfo maps, int64 *from, int64 *to);
/* What pg_stat_activity calls its backend_type. */
extern const char *hpg_proc_type(hpg_proc p);

#endif
