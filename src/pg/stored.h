/*
 * stored.h -- every stored profile by name and kind: the one place readers
 * find, open, validate and list them.
 */
#ifndef HEAPPROF_STORED_H
#define HEAPPROF_STORED_H

#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"

/*
 * The profile called name -- this session's snapshot, or a persisted
 * snapshot, exit dump or statement capture -- appended to out; its kind
 * ("snapshot", "exit dump", "capture") is returned.  ERROR if there is none,
 * if the name is in two places, if the file is unusable, if the current
 * user may not read it, or (53200) if held bytes and the profile together
 * are more than a report may take (checked before it is read).
 */
extern const char *hpg_stored_read(const char *name, StringInfo out, int64 held);
/* Process pid's peak profile (a file replaced whole) appended to out; false if it has none. */
extern bool hpg_stored_read_peak(int pid, StringInfo out);
/* Is name taken by a stored profile of a kind other than a snapshot? */
extern bool hpg_stored_taken(const char *name);

/* This session's snapshots, kept in TopMemoryContext. */
extern bool hpg_stored_in_session(const char *name);
extern void hpg_stored_keep(const char *name, const char *text, int len, bool persisted);
/* The role that took this session's snapshot name: false if there is none. */
extern bool hpg_stored_session_owner(const char *name, Oid *owner);
/*
 * Forget name; false if not kept.  ERROR if the current user may not, unless
 * the caller has checked (dropping its file took the same right).
 */
extern bool hpg_stored_forget(const char *name, bool checked);
/* Number and bytes of this session's snapshots. */
extern void hpg_stored_session_usage(int64 *count, int64 *bytes);

/* heapprof_snapshots()' rows: this session's, then the persisted ones. */
extern void hpg_stored_list_snapshots(ReturnSetInfo *rsinfo);
/* heapprof_dumps()' rows. */
extern void hpg_stored_list_dumps(ReturnSetInfo *rsinfo);
/*
 * A listing's callback: text is the whole profile of len bytes, or, whole
 * false (larger than heapprof.report_memory_limit lets a report read), its
 * first bytes only (the owner line); size is the file's.
 */
typedef void (*hpg_stored_fn) (const char *name, const char *text, int len, bool whole, int64 size, void *arg);

/*
 * fn for each statement capture the current user may read, oldest first
 * (heapprof_captures()); unusable files are skipped with a WARNING.
 */
extern void hpg_stored_each_capture(hpg_stored_fn fn, void *arg);

#endif
