/*
 * store.h -- heap profiles kept as files under $PGDATA/heapprof.
 */
#ifndef HEAPPROF_STORE_H
#define HEAPPROF_STORE_H

#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"

#define HPG_STORE_DIR "heapprof"
#define HPG_SNAPSHOT_DIR HPG_STORE_DIR "/snapshots"
#define HPG_EXIT_DIR HPG_STORE_DIR "/dumps"
#define HPG_PEAK_DIR HPG_STORE_DIR "/peaks"
#define HPG_CAPTURE_DIR HPG_STORE_DIR "/captures"
#define HPG_SUFFIX ".heap"
#define HPG_MAX_NAME 63

/* ERROR unless name is a valid profile name. */
extern void hpg_check_name(const char *name);
/* DIR/NAME.heap */
extern void hpg_store_path(char *path, const char *dir, const char *name);
/* Create the store's folders; ERROR on failure. */
extern void hpg_store_make_dirs(void);

/* Append "%heapprof" metadata for a profile of pid taken now, owned by owner. */
extern void hpg_append_meta(StringInfo out, int pid, Oid owner, const char *backend_type);
/* May the current user read a profile with this text?  (superuser, or the owner's privileges) */
extern bool hpg_can_read(const char *text, int len);
/* ERROR, for a profile the current user may not read or drop. */
extern void hpg_deny(const char *name, const char *verb);

/*
 * List the readable profile files of dir as rows of heapprof_snapshots()
 * (dumps false) or heapprof_dumps() (dumps true); skip(name) leaves a name
 * out.  Unusable files are skipped with a WARNING.
 */
extern void hpg_store_list(ReturnSetInfo *rsinfo, const char *dir, bool dumps,
						   bool (*skip) (const char *name));
/* The profile names in dir, sorted (oldest first for time-stamped names). */
extern char **hpg_store_names(const char *dir, int *count);
/* Number and bytes of the regular profile files in dir. */
extern void hpg_store_usage(const char *dir, int64 *count, int64 *bytes);
/* One row of either listing. */
extern void hpg_store_put_row(ReturnSetInfo *rsinfo, const char *name, const char *text, int len,
							  bool persisted, int64 file_bytes, bool dumps);

/*
 * NAME for a profile this process leaves now, TIME-PID-KIND (UTC to the
 * microsecond): names sort by time, which pruning relies on.  Plain C.
 */
extern void hpg_store_time_name(char *name, size_t size, const char *kind);

/*
 * Remove the oldest profiles of dir (names start with the time) beyond
 * max_count files or max_bytes, and temporary files crashed writers left.
 * Plain C, for process exit too.
 */
extern void hpg_store_prune(const char *dir, int max_count, int64 max_bytes);

#endif
