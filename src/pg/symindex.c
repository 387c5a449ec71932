/*
 * symindex.c -- where the engine keeps each object's symbol index: one
 * file per GNU build-id, $PGDATA/heapprof/symbols/BUILDID.heap.
 *
 * The first backend that names an object's code without an index writes
 * one (engine/symindex.h: flat, position-independent), published as every
 * file of the store is (store.c: a draft, fsync'ed, taken as a new name by
 * one rename), and every later backend maps it read-only: its first report
 * reads no symbol table or DWARF and keeps none in its own memory.  A
 * changed object has another build-id, hence another file.
 *
 * The folder is as hostile as any input: a file is used only when it is a
 * regular file (not a link, FIFO or device: lstat'ed, then opened without
 * following links or blocking, and the open one must be the lstat'ed one),
 * owned by the server's user, writable by nobody else, with one link, at
 * most heapprof.symbol_index_limit long; the engine then checks its
 * header, build-id (engine/verify.h) and every table's bounds.  A file
 * refused is removed -- that file only, kept open meanwhile: never one
 * published since under its name -- and the index written again.  Files
 * are never changed in place (a reader would fault on a truncated
 * mapping): replaced only by a rename.
 *
 * heapprof.symbol_index_limit bounds the folder: every file, drafts
 * included, counted with the new draft before its name is taken (store.c's
 * quota rule).  To make room, the indexes written longest ago go first --
 * those of objects replaced by an upgrade, whose build-id no process asks
 * for any more; a process that maps one keeps its pages, and one still
 * needed is written again.  An index that does not fit even so is not
 * kept, and the objects it would name are indexed per backend as before.
 *
 * Sessions that start together on a server without an object's index
 * would each build it (a cold report's time and some 50 MB each): the
 * first takes a lock, BUILDID.heap.lock (flock'ed; released when the index
 * is published, or when the analysis ends whatever way, or by the kernel
 * when the backend exits), and the others wait for its index, then map
 * it; an analysis waits BUILD_WAIT_MS at most in all, then builds its own.
 */
#include "postgres.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/latch.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "analysis.h"
#include "compat.h"
#include "store.h"
#include "symindex.h"

static int	symbol_index_limit_kb = 262144;

/* No real index comes near this: a larger file is refused whatever the limit. */
#define MAX_INDEX_BYTES ((int64) 4 << 30)

/*
 * How long one analysis waits, in all, for other backends' builds of
 * indexes before building its own.
 */
#define BUILD_WAIT_MS 10000

/* The lock this backend holds while it builds an index: its file, or -1. */
static int	building_fd = -1;
static char building_path[MAXPGPATH];

/* What this analysis has waited so far. */
static long waited_ms;

/*
 * The file index_map last judged at its path (judged_set), and, when it
 * opened it, the descriptor kept open so that its inode cannot go to
 * another file: index_discard removes the file at the path only while it
 * is still that one, never an index another backend published meanwhile.
 */
static struct stat judged;
static bool judged_set;
static int	judged_fd = -1;

static int64
limit_bytes(void)
{
	return (int64) symbol_index_limit_kb * 1024;
}

/* The file's name in the folder: the build-id in hex; false if too long. */
static bool
index_name(char *name, size_t size, const uint8_t *id, size_t idlen)
{
	if (idlen == 0 || idlen * 2 >= size || idlen * 2 > HPG_MAX_NAME)
		return false;
	for (size_t i = 0; i < idlen; i++)
		snprintf(name + 2 * i, 3, "%02x", id[i]);
	return true;
}

static bool
index_path(char *path, const uint8_t *id, size_t idlen)
{
	char		name[HPG_MAX_NAME + 1];

	if (!index_name(name, sizeof(name), id, idlen))
		return false;
	hpg_store_path(path, HPG_SYMBOL_DIR, name);
	return true;
}

/* Is the file at path (not following a link) the one st describes? */
static bool
is_at(const char *path, const struct stat *st)
{
	struct stat ls;

	return lstat(path, &ls) == 0 && ls.st_dev == st->st_dev && ls.st_ino == st->st_ino;
}

/* Let others build or map the index this backend was building. */
static void
build_release(void)
{
	struct stat st;

	if (building_fd < 0)
		return;
	/*
	 * Removed while held, so that a waiter's lock is never on a file removed
	 * under it (lock_try) -- if it is still this lock's file: the folder may
	 * have been removed and the name taken by another's lock meanwhile.
	 */
	if (fstat(building_fd, &st) == 0 && is_at(building_path, &st))
		(void) unlink(building_path);
	close(building_fd);
	building_fd = -1;
}

static void
forget_judged(void)
{
	if (judged_fd >= 0)
		close(judged_fd);
	judged_fd = -1;
	judged_set = false;
}

/* After each analysis, however it ended: no lock held, a new wait budget. */
static void
build_settle(void)
{
	build_release();
	forget_judged();
	waited_ms = 0;
}

/*
 * 1 if this backend now holds the lock at path (building_fd), 0 if another
 * does, -1 if no lock is to be had there (planted: anything but a regular
 * file of the server's user with one link).
 */
static int
lock_try(const char *path)
{
	for (int tries = 0; tries < 3; tries++)
	{
		struct stat ls;
		struct stat st;
		int			fd;

		if (lstat(path, &ls) == 0 && (!S_ISREG(ls.st_mode) || ls.st_uid != geteuid()))
			return -1;
		fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | PG_BINARY, S_IRUSR | S_IWUSR);
		if (fd < 0)
			return -1;
		if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_nlink > 1)
		{
			close(fd);
			return -1;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) != 0)
		{
			bool		busy = errno == EWOULDBLOCK;

			close(fd);
			return busy ? 0 : -1;
		}
		/* still the file at path, not one its last holder removed meanwhile? */
		if (is_at(path, &st))
		{
			building_fd = fd;
			strlcpy(building_path, path, sizeof(building_path));
			return 1;
		}
		close(fd);
	}
	return -1;
}

/*
 * No index at path, or one being published: true if this backend is to
 * build it (holding its lock, or without one when none can be had or the
 * wait ran out), false once another backend has published it.
 */
static bool
build_or_wait(const char *path)
{
	char		lock[MAXPGPATH];
	TimestampTz start = GetCurrentTimestamp();
	struct stat st;

	build_release();
	snprintf(lock, sizeof(lock), "%s.lock", path);
	for (;;)
	{
		/* a new server's first sessions: the folder made for the lock */
		int			rc = hpg_store_dir_ready(HPG_SYMBOL_DIR) == 0 ? lock_try(lock) : -1;

		/*
		 * Held by another: it is building or publishing (which may show the
		 * file with a second link for a moment, store.c's rename_new), and
		 * lets go only after.
		 */
		if (rc != 0 || waited_ms + TimestampDifferenceMilliseconds(start, GetCurrentTimestamp()) >= BUILD_WAIT_MS)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	waited_ms += TimestampDifferenceMilliseconds(start, GetCurrentTimestamp());
	if (lstat(path, &st) != 0)
		return true;
	build_release();
	return false;
}

static const void *
index_map(void *arg, const uint8_t *id, size_t idlen, size_t *len, bool *refused)
{
	char		path[MAXPGPATH];
	struct stat ls;
	struct stat st;
	bool		found;
	int			fd;
	void	   *p;

	forget_judged();
	if (symbol_index_limit_kb == 0 || !index_path(path, id, idlen))
		return NULL;
	found = lstat(path, &ls) == 0;
	*refused = !found && errno != ENOENT;
	if (*refused)
		return NULL;
	/* none yet, or one being published: build it, or wait for the backend that does */
	if ((!found || ls.st_nlink > 1) && (build_or_wait(path) || lstat(path, &ls) != 0))
		return NULL;
	*refused = true;
	judged = ls;
	judged_set = true;
	if (!S_ISREG(ls.st_mode))
		return NULL;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | PG_BINARY);
	if (fd < 0)
		return NULL;
	judged_fd = fd;
	if (fstat(fd, &st) != 0)
		return NULL;
	judged = st;				/* the file opened is the one judged */
	if (!S_ISREG(st.st_mode) || st.st_dev != ls.st_dev || st.st_ino != ls.st_ino ||
		st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0 ||
		st.st_nlink != 1 || st.st_size <= 0 || st.st_size > MAX_INDEX_BYTES)
		return NULL;
	/*
	 * Over this session's limit (a superuser may lower it for a session): not
	 * used here, but not refused either, so other backends keep it.
	 */
	if (st.st_size > limit_bytes())
	{
		*refused = false;
		return NULL;
	}
	p = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
	{
		*refused = false;		/* out of address space: the file may be fine */
		return NULL;
	}
	/* lookups are binary searches: no read-ahead of pages never looked at */
	(void) madvise(p, (size_t) st.st_size, MADV_RANDOM);
	*refused = false;
	*len = (size_t) st.st_size;
	return p;
}

static void
index_unmap(void *arg, const void *p, size_t len)
{
	munmap(unconstify(void *, p), len);
}

static void
index_discard(void *arg, const uint8_t *id, size_t idlen)
{
	char		path[MAXPGPATH];
	int			rc;

	/*
	 * Only the file refused, while still at its path (a link is removed,
	 * never followed; a directory stays).
	 */
	if (judged_set && index_path(path, id, idlen) &&
		(rc = hpg_store_remove_judged(HPG_SYMBOL_DIR, path, &judged, NULL)) != 0 &&
		rc != ENOENT && rc != ESTALE && rc != EISDIR && (errno = rc) != 0)
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not remove the unusable symbol index \"%s\": %m", path)));
	forget_judged();
}

static void
publish(const uint8_t *id, size_t idlen, const void *buf, size_t len)
{
	char		name[HPG_MAX_NAME + 1];
	hpg_draft	d;
	hpg_quota	q = {INT_MAX, limit_bytes()};
	int			rc;

	if (symbol_index_limit_kb == 0 || !index_name(name, sizeof(name), id, idlen))
		return;
	if ((int64) len > limit_bytes())
	{
		ereport(LOG,
				(errmsg("symbol index %s not kept: its %zu bytes exceed heapprof.symbol_index_limit", name, len),
				 errhint("Raise heapprof.symbol_index_limit for every backend to share it.")));
		return;
	}
	if (hpg_store_dir_ready(HPG_SYMBOL_DIR) != 0 || hpg_draft_open(&d, HPG_SYMBOL_DIR) != 0)
		return;
	if (hpg_draft_write(&d, buf, len) != 0)
		return;
	/*
	 * The draft counted: writers racing each other cannot pass the limit
	 * together.  Room is made as in every folder of the store, the indexes
	 * written longest ago first -- those of objects replaced by an upgrade.
	 */
	if (hpg_store_room(HPG_SYMBOL_DIR, &q, HPG_SHARED, true, 0, 0, true, NULL) != 0)
	{
		hpg_draft_discard(&d);
		ereport(LOG,
				(errmsg("symbol index %s not kept: the folder would exceed heapprof.symbol_index_limit", name),
				 errhint("Raise heapprof.symbol_index_limit, or remove old files from %s.", HPG_SYMBOL_DIR)));
		return;
	}
	/* EEXIST: another backend published the same object's index first */
	if ((rc = hpg_draft_publish(&d, name, false)) != 0 && rc != EEXIST)
	{
		errno = rc;
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not keep the symbol index %s: %m", name)));
	}
}

static void
index_publish(void *arg, const uint8_t *id, size_t idlen, const void *buf, size_t len)
{
	publish(id, idlen, buf, len);
	build_release();
}

int64
hpg_symindex_bytes(void)
{
	int64		count;
	int64		bytes;

	hpg_store_usage(HPG_SYMBOL_DIR, &count, &bytes);
	return bytes;
}

void
hpg_symindex_init(void)
{
	DefineCustomIntVariable("heapprof.symbol_index_limit",
							"Most disk space for the symbol indexes all backends share.",
							"Each object's index is written once under $PGDATA/heapprof/symbols and "
							"mapped by every backend; an index that would exceed this is not kept. "
							"0 turns shared indexes off.",
							&symbol_index_limit_kb,
							262144, 0, MAX_KILOBYTES,
							PGC_SUSET, GUC_UNIT_KB,
							NULL, NULL, NULL);
	hpg_analysis_index_store(&(hp_index_store) {index_map, index_unmap, index_discard, index_publish, NULL},
							 build_settle);
}
