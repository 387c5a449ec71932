/*
 * store.h -- the one owner of the files heapprof keeps under $PGDATA/heapprof.
 */
#ifndef HEAPPROF_STORE_H
#define HEAPPROF_STORE_H

#include "lib/stringinfo.h"

#define HPG_STORE_DIR "heapprof"
#define HPG_SNAPSHOT_DIR HPG_STORE_DIR "/snapshots"
#define HPG_EXIT_DIR HPG_STORE_DIR "/dumps"
#define HPG_PEAK_DIR HPG_STORE_DIR "/peaks"
#define HPG_CAPTURE_DIR HPG_STORE_DIR "/captures"
#define HPG_SYMBOL_DIR HPG_STORE_DIR "/symbols"
#define HPG_HISTORY_DIR HPG_STORE_DIR "/history"
#define HPG_SUFFIX ".heap"
#define HPG_MAX_NAME 63
/* Drafts are DIR/tmp.PID.N: never a profile name (no suffix), swept by pid. */
#define HPG_DRAFT_PREFIX "tmp."

/*
 * A folder's limits, and each role's share of them.  One role's files push
 * out only that role's own; a role that is not superuser holds at most
 * heapprof.role_share percent of each limit, and such roles together never
 * the last tenth (superusers' reserve).  A shared folder (the symbol
 * indexes: files of nobody) has no shares: the oldest file goes first.
 */
typedef struct hpg_quota
{
	int			max_count;
	int64		max_bytes;
} hpg_quota;

/* What a folder holds (every file, drafts of running writers included), and of it one owner's share. */
typedef struct hpg_usage
{
	int64		count;
	int64		bytes;
	int64		own_count;		/* the owner's profiles and this process's drafts */
	int64		own_bytes;
	int64		share_count;	/* the most the owner may hold */
	int64		share_bytes;
} hpg_usage;

/* The owner of a shared folder's files: everyone. */
#define HPG_SHARED InvalidOid

/* heapprof.role_share, in percent. */
extern int	hpg_role_share;

/* _PG_init, in the postmaster: sweep the store at every start and crash restart. */
extern void hpg_store_init(void);

/* ERROR unless name is a valid profile name. */
extern void hpg_check_name(const char *name);
/* DIR/NAME.heap */
extern void hpg_store_path(char *path, const char *dir, const char *name);
/* Create heapprof/ and dir as real directories; ERROR on failure. */
extern void hpg_store_make_dir(const char *dir);

/* Append "%heapprof" metadata for a profile of pid taken now, owned by owner. */
extern void hpg_append_meta(StringInfo out, int pid, Oid owner, const char *backend_type);
/* May the current user read a profile with this text?  (superuser, or the owner's privileges) */
extern bool hpg_can_read(const char *text, int len);
/* ERROR, for a profile the current user may not read or drop. */
extern void hpg_deny(const char *name, const char *verb);

/*
 * Remove DIR/NAME.heap if the current user may (else ERROR) -- and, if
 * owner is valid, only if that role owns it -- judged by its first line:
 * the very file whose owner was checked, not one stored under the name
 * meanwhile.  False if there is none (or it is another role's, with owner).
 */
extern bool hpg_store_drop(const char *dir, const char *name, Oid owner);
/* Is NAME a stored profile in dir? */
extern bool hpg_store_exists(const char *dir, const char *name);

/* The profile names in dir, sorted (oldest first for time-stamped names). */
extern char **hpg_store_names(const char *dir, int *count);
/*
 * Keep text as DIR/NAME.heap, in a backend (ERROR on failure, leaving
 * nothing behind): written as a draft, then, when the folder has room for
 * it within q and the current user's share (hpg_store_room, the draft
 * counted -- every file, drafts of other writers included) or refused
 * (given what the folder holds) raises no error, published under a name
 * taken atomically: 42710 if the name exists.
 */
extern void hpg_store_put(const char *dir, const char *name, const char *text, size_t len,
						  const hpg_quota *q, void (*refused) (const hpg_usage *u, void *arg), void *arg);

/*
 * Remove the file at path (in dir) if it is still the one st describes --
 * judged by its inode once moved aside, never by its name, so that a file
 * published there meanwhile stays: 0; ESTALE, another file was there (it
 * stays, at path or, the name taken yet again, under a name of its own:
 * that name, without .heap, in kept, of MAXPGPATH, unless NULL); or an
 * errno (EISDIR: a directory is never removed).
 */
struct stat;
extern int	hpg_store_remove_judged(const char *dir, const char *path, const struct stat *st, char *kept);

/*
 * The owner of DIR/NAME.heap by its first line, read alone: true, or false
 * if there is no such file (InvalidOid: a file without an owner line).
 */
extern bool hpg_store_owner(const char *dir, const char *name, Oid *owner);

/* ---- plain C (errno, never an error): for process exit and a request's target too ---- */

/*
 * A file being written: DIR/tmp.PID.N, created exclusively (never through a
 * link or into a FIFO), then published under its name by a rename, or
 * discarded.  Functions return 0 or an errno; on failure the draft is
 * already removed.
 */
typedef struct hpg_draft
{
	const char *dir;
	char		path[MAXPGPATH];
	int			fd;				/* -1 once closed */
} hpg_draft;

extern int	hpg_draft_open(hpg_draft *d, const char *dir);
/* Close the file, keeping it: for a writer that opens the path itself (jemalloc). */
extern int	hpg_draft_close(hpg_draft *d);
/* Append buf; a statement's text in its leading "%" lines only with heapprof.store_statement_text. */
extern int	hpg_draft_write(hpg_draft *d, const char *buf, size_t len);
/* Append the regular file at path (not a link), at most HPG_MAX_FILE_BYTES. */
extern int	hpg_draft_append_file(hpg_draft *d, const char *path);
/*
 * fsync and rename to DIR/NAME.heap; EEXIST if it exists.  replace: a file
 * that replaces the last of its name and outlives neither its process nor
 * a server start (a peak): renamed over it, not synced.
 */
extern int	hpg_draft_publish(hpg_draft *d, const char *name, bool replace);
extern void hpg_draft_discard(hpg_draft *d);

/* mkdir heapprof/ and dir; 0, or an errno (ENOTDIR: something else is there). */
extern int	hpg_store_dir_ready(const char *dir);

/*
 * NAME for a profile this process leaves now, TIME-PID-KIND (UTC to the
 * microsecond): names sort by time, which pruning relies on.
 */
extern void hpg_store_time_name(char *name, size_t size, const char *kind);

/*
 * Room in dir, within q, for add_count more files of add_bytes by owner
 * (super: a superuser's; HPG_SHARED for a shared folder; add_count 0 when
 * the file's draft is in dir already): 0, or EDQUOT.  With prune, owner's
 * own oldest profiles are removed until it fits (never another owner's,
 * never a draft) -- unless it cannot fit even so: then nothing is removed.
 * Drafts of writers that are gone, and lock files nobody holds, are removed
 * first.  u (may be NULL) tells what the folder then holds.
 */
extern int	hpg_store_room(const char *dir, const hpg_quota *q, Oid owner, bool super,
						   int add_count, int64 add_bytes, bool prune, hpg_usage *u);

/* Number and bytes of every file in dir, drafts included; removes nothing. */
extern void hpg_store_usage(const char *dir, int64 *count, int64 *bytes);

/*
 * Whether the login role (owner of exit dumps and captures) is a superuser:
 * learnt once in a transaction (a statement's start), known at process
 * exit; false until learnt.
 */
extern void hpg_store_learn_login(void);
extern bool hpg_store_login_super(void);

/* Define heapprof.role_share and heapprof.store_statement_text (_PG_init). */
extern void hpg_store_gucs(void);

#endif
