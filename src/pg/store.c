/*
 * store.c -- the one owner of the files heapprof keeps: names, folders, owners,
 * drafts, publication, quotas, removal.  (Which profile a name means, and
 * every listing of them, is stored.c's.)
 *
 * Leak hunting compares a profile with an earlier one, possibly from another
 * session or a process that has exited: persisted snapshots live in
 * $PGDATA/heapprof/snapshots/NAME.heap, exit dumps in heapprof/dumps,
 * statement captures in heapprof/captures, each process's peak in
 * heapprof/peaks, the objects' symbol indexes (symindex.c) in
 * heapprof/symbols, and the heap history's ticks (collector.c) in
 * heapprof/history.  A stored profile starts with a metadata line
 * (engine/format.h) naming its owner: the role that took a snapshot, the
 * login role of an exiting backend.  Reading one takes the privileges of
 * its owner, the rule pg_signal_backend uses.
 *
 * Every file is written the same way, so that none can be raced, torn or
 * orphaned:
 *  - as a draft, DIR/tmp.PID.N, created with O_EXCL (a planted link or FIFO
 *    makes the next N be tried, never followed), fsync'ed;
 *  - published by one rename: renameat2(RENAME_NOREPLACE) where the name
 *    must be new -- taking a name is atomic, never check-then-rename --
 *    rename() where it replaces (a peak);
 *  - everything a reader needs is in that one file;
 *  - on any failure the draft is removed and the errno returned as it was;
 *  - drafts of processes that are gone (killed mid-write) are swept before
 *    every quota check and pruning, and all of them at every server start
 *    and crash restart (shmem_startup_hook), with the peaks of processes
 *    that are gone;
 *  - quotas count every file in the folder, the drafts of running writers
 *    included, and a draft is counted before its name is taken: writers
 *    racing each other can be refused, never let past a limit together;
 *  - room is made in every folder by one routine (hpg_store_room), oldest
 *    first, and only of the writer's own role's files (each file's first
 *    line names its owner): one role's files never push out another's, a
 *    role that is not superuser holds at most heapprof.role_share of a
 *    limit, and such roles together leave superusers the last tenth;
 *  - a statement's text reaches no file unless heapprof.store_statement_text
 *    is on (hpg_draft_write, which every file passes).
 */
#include "postgres.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "access/xact.h"
#include "common/file_perm.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "files.h"
#include "store.h"
#include "engine/format.h"

static const char *const store_dirs[] = {HPG_SNAPSHOT_DIR, HPG_EXIT_DIR, HPG_PEAK_DIR, HPG_CAPTURE_DIR,
	HPG_SYMBOL_DIR, HPG_HISTORY_DIR};

static shmem_startup_hook_type prev_shmem_startup_hook;
static uint32 draft_seq;		/* the N of this process's next draft, tmp.PID.N */

static DIR *open_store_dir(const char *dir);

void
hpg_check_name(const char *name)
{
	size_t		len = strlen(name);

	if (len == 0 || len > HPG_MAX_NAME ||
		strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != len ||
		name[0] == '.' || name[0] == '-')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid heap profile name \"%s\"", name),
				 errhint("Use 1 to %d letters, digits, \"_\", \".\" or \"-\", starting with a letter, digit or \"_\".", HPG_MAX_NAME)));
}

void
hpg_store_path(char *path, const char *dir, const char *name)
{
	snprintf(path, MAXPGPATH, "%s/%s%s", dir, name, HPG_SUFFIX);
}

void
hpg_store_make_dir(const char *dir)
{
	int			rc = hpg_store_dir_ready(dir);

	if (rc != 0)
	{
		errno = rc;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", dir),
				 rc == ENOTDIR ?
				 errhint("Something other than a directory is in its place (a file or a symbolic link): a superuser should remove it.") :
				 errhint("Check free space and permissions of the data directory.")));
	}
}

void
hpg_append_meta(StringInfo out, int pid, Oid owner, const char *backend_type)
{
	hp_meta		m = {HP_FORMAT_VERSION, pid, owner, GetCurrentTimestamp()};
	char		line[256];

	strlcpy(m.backend_type, backend_type, sizeof(m.backend_type));
	appendBinaryStringInfo(out, line, (int) hp_format_meta(line, sizeof(line), &m));
}

bool
hpg_can_read(const char *text, int len)
{
	hp_meta		m;

	if (superuser())
		return true;
	return hp_read_meta(text, (size_t) len, &m) && OidIsValid(m.owner) &&
		!superuser_arg(m.owner) && has_privs_of_role(GetUserId(), m.owner);
}

void
hpg_deny(const char *name, const char *verb)
{
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied for heap profile \"%s\"", name),
			 errhint("Only superusers and roles with the privileges of the role that took it may %s it.", verb)));
}

/* Length of the profile name a directory entry holds ("NAME.heap"), or 0 if none. */
static size_t
profile_name_length(const char *fname)
{
	size_t		n = strlen(fname);
	size_t		suffix = strlen(HPG_SUFFIX);

	if (fname[0] == '.' || n <= suffix || n - suffix > HPG_MAX_NAME ||
		strcmp(fname + n - suffix, HPG_SUFFIX) != 0)
		return 0;
	return n - suffix;
}

static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

char	  **
hpg_store_names(const char *dir, int *count)
{
	DIR		   *d;
	struct dirent *de;
	char	  **names = NULL;
	int			n = 0;
	int			cap = 0;
	struct stat st;

	*count = 0;
	/* what no writer writes into (real_dir) no reader reads: a link is not a folder */
	if ((lstat(HPG_STORE_DIR, &st) == 0 && !S_ISDIR(st.st_mode)) || (lstat(dir, &st) == 0 && !S_ISDIR(st.st_mode)))
	{
		ereport(WARNING,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("heapprof folder \"%s\" is not a directory: nothing in it is read", dir),
				 errhint("heapprof writes and reads only real directories under the data directory; remove the link or file.")));
		return NULL;
	}
	d = AllocateDir(dir);
	if (d == NULL && errno == ENOENT)
		return NULL;
	while ((de = ReadDir(d, dir)) != NULL)
	{
		size_t		len = profile_name_length(de->d_name);

		CHECK_FOR_INTERRUPTS();
		if (len == 0)
			continue;
		if (n == cap)
		{
			cap = cap ? cap * 2 : 64;
			names = names ? repalloc(names, cap * sizeof(char *)) : palloc(cap * sizeof(char *));
		}
		names[n++] = pnstrdup(de->d_name, len);
	}
	FreeDir(d);
	if (n > 1)
		qsort(names, n, sizeof(char *), cmp_names);
	*count = n;
	return names;
}


bool
hpg_store_exists(const char *dir, const char *name)
{
	char		path[MAXPGPATH];
	struct stat st;

	hpg_store_path(path, dir, name);
	return lstat(path, &st) == 0;
}

/* ERROR for a failed write of DIR/NAME.heap (rc an errno); nothing is left behind. */
static void
write_failed(int rc, const char *dir, const char *name)
{
	char		path[MAXPGPATH];

	hpg_store_path(path, dir, name);
	errno = rc;
	ereport(ERROR,
			(errcode_for_file_access(),
			 errmsg("could not write heap profile \"%s\": %m", path),
			 errhint("Check free space and permissions of the data directory's %s folder; nothing was left behind.", dir)));
}

/*
 * Rename from to to unless to exists: 0, or an errno (EEXIST: from stays).
 * Atomic with renameat2(RENAME_NOREPLACE); on a file system without it,
 * link() refuses an existing name too.
 */
static int
rename_new(const char *from, const char *to)
{
	if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return errno;
	if (link(from, to) != 0)
		return errno;
	return unlink(from) == 0 ? 0 : errno;
}

/*
 * Move path aside to a fresh draft name in dir (aside), by a rename that
 * needs no new inode: a full folder can still be emptied.  0 or an errno.
 */
static int
move_aside(const char *path, const char *dir, char *aside)
{
	int			rc = EEXIST;

	for (int attempt = 0; attempt < 100 && rc == EEXIST; attempt++)
	{
		snprintf(aside, MAXPGPATH, "%s/" HPG_DRAFT_PREFIX "%d.%u", dir, MyProcPid, draft_seq++);
		rc = rename_new(path, aside);
	}
	return rc;
}

int
hpg_store_remove_judged(const char *dir, const char *path, const struct stat *st, char *kept)
{
	char		aside[MAXPGPATH];
	struct stat moved;
	int			rc;

	if (S_ISDIR(st->st_mode))
		return EISDIR;			/* a directory stays */
	if ((rc = move_aside(path, dir, aside)) != 0)
		return rc;
	if (lstat(aside, &moved) == 0 && moved.st_dev == st->st_dev && moved.st_ino == st->st_ino)
		return unlink(aside) == 0 ? 0 : errno;
	/* another file took the name since it was judged: it goes back */
	if (kept)
	{
		const char *base = last_dir_separator(path) ? last_dir_separator(path) + 1 : path;
		size_t		n = strlen(base);

		if (n > strlen(HPG_SUFFIX) && strcmp(base + n - strlen(HPG_SUFFIX), HPG_SUFFIX) == 0)
			n -= strlen(HPG_SUFFIX);
		snprintf(kept, MAXPGPATH, "%.*s", (int) n, base);
	}
	if (rename_new(aside, path) != 0)
	{
		/* the name was taken yet again: that file keeps a name of its own */
		char		name[HPG_MAX_NAME + 1];
		char		restored[MAXPGPATH];

		hpg_store_time_name(name, sizeof(name), "restored");
		hpg_store_path(restored, dir, name);
		(void) rename_new(aside, restored);
		if (kept)
			strlcpy(kept, name, MAXPGPATH);
	}
	return ESTALE;
}

bool
hpg_store_owner(const char *dir, const char *name, Oid *owner)
{
	char		path[MAXPGPATH];
	char		head[HPG_READ_HEAD];
	struct stat st;
	hp_meta		m;
	int			len;
	int			fd;

	hpg_store_path(path, dir, name);
	if ((fd = hpg_read_head(path, head, &len, &st, ERROR)) < 0)
		return false;
	CloseTransientFile(fd);
	*owner = hp_read_meta(head, (size_t) len, &m) ? m.owner : InvalidOid;
	return true;
}

bool
hpg_store_drop(const char *dir, const char *name, Oid owner)
{
	char		path[MAXPGPATH];
	char		kept[MAXPGPATH];
	char		head[HPG_READ_HEAD];
	struct stat read_st;
	hp_meta		m;
	int			len;
	int			fd;
	int			rc;

	hpg_store_path(path, dir, name);
	/* kept open until the end: its inode cannot go to another file meanwhile */
	if ((fd = hpg_read_head(path, head, &len, &read_st, ERROR)) < 0)
		return false;
	if (OidIsValid(owner) && (!hp_read_meta(head, (size_t) len, &m) || m.owner != owner))
	{
		CloseTransientFile(fd);
		return false;
	}
	if (!hpg_can_read(head, len))
		hpg_deny(name, "drop");
	rc = hpg_store_remove_judged(dir, path, &read_st, kept);
	CloseTransientFile(fd);
	if (rc == ENOENT)
		return false;			/* dropped meanwhile */
	if (rc == ESTALE)
	{
		/* a file stored under the name since it was read: kept, not dropped */
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("heap profile \"%s\" was replaced while it was being dropped", name),
				 errdetail("The profile stored meanwhile is kept as \"%s\".", kept),
				 errhint("Look at heapprof_snapshots() and try again.")));
	}
	if (rc != 0)
	{
		errno = rc;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not remove heap profile \"%s\": %m", path)));
	}
	return true;
}

/* ---- writing, in a backend ---- */

void
hpg_store_put(const char *dir, const char *name, const char *text, size_t len,
			  const hpg_quota *q, void (*refused) (const hpg_usage *u, void *arg), void *arg)
{
	hpg_draft	d;
	int			rc;

	hpg_store_make_dir(dir);
	if ((rc = hpg_draft_open(&d, dir)) != 0 || (rc = hpg_draft_write(&d, text, len)) != 0)
		write_failed(rc, dir, name);
	/* d is not changed before the last call that can throw */
	PG_TRY();
	{
		hpg_usage	u;

		if (hpg_store_room(dir, q, GetUserId(), superuser(), 0, 0, false, &u) != 0)
			refused(&u, arg);
	}
	PG_CATCH();
	{
		hpg_draft_discard(&d);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if ((rc = hpg_draft_publish(&d, name, false)) == EEXIST)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("heap profile \"%s\" already exists", name),
				 errhint("Another session stored a profile of that name meanwhile; choose another name, or drop that one first.")));
	if (rc != 0)
		write_failed(rc, dir, name);
}

void
hpg_store_usage(const char *dir, int64 *count, int64 *bytes)
{
	DIR		   *d = open_store_dir(dir);
	struct dirent *de;

	*count = *bytes = 0;
	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL)
	{
		struct stat st;

		if (de->d_name[0] != '.' && fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			!S_ISDIR(st.st_mode))
		{
			(*count)++;
			*bytes += st.st_size;
		}
	}
	closedir(d);
}

/* ---- plain C: drafts and publication, also at process exit and in a target ---- */

/* Remove the draft, keeping errno. */
void
hpg_draft_discard(hpg_draft *d)
{
	int			save = errno;

	if (d->fd >= 0)
		close(d->fd);
	if (d->path[0])
		unlink(d->path);
	d->fd = -1;
	d->path[0] = '\0';
	errno = save;
}

/* Discard the draft after a failure with errno rc (0: errno as it is); returns the errno. */
static int
draft_failed(hpg_draft *d, int rc)
{
	if (rc == 0)
		rc = errno ? errno : EIO;
	hpg_draft_discard(d);
	return rc;
}

int
hpg_draft_open(hpg_draft *d, const char *dir)
{
	d->dir = dir;
	d->fd = -1;
	d->path[0] = '\0';
	/* a planted file, link or FIFO at a name only makes the next name be tried */
	for (int attempt = 0; attempt < 100; attempt++)
	{
		snprintf(d->path, sizeof(d->path), "%s/" HPG_DRAFT_PREFIX "%d.%u", dir, MyProcPid, draft_seq++);
		d->fd = open(d->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | PG_BINARY, S_IRUSR | S_IWUSR);
		if (d->fd >= 0)
			return 0;
		if (errno != EEXIST)
			break;
	}
	d->path[0] = '\0';
	return errno;
}

int
hpg_draft_close(hpg_draft *d)
{
	int			rc = close(d->fd);

	d->fd = -1;
	return rc == 0 ? 0 : draft_failed(d, 0);
}

static bool store_statement_text = false;

static int
put_piece(void *arg, const char *piece, size_t n)
{
	return hpg_write_all(*(int *) arg, piece, n) ? 0 : (errno ? errno : EIO);
}

int
hpg_draft_write(hpg_draft *d, const char *buf, size_t len)
{
	/* every file of the store is written here: no statement's text unless the DBA keeps them */
	int			rc = store_statement_text ? put_piece(&d->fd, buf, len) :
		hp_put_without_texts(buf, len, put_piece, &d->fd);

	return rc == 0 ? 0 : draft_failed(d, rc);
}

int
hpg_draft_append_file(hpg_draft *d, const char *path)
{
	int			in = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | PG_BINARY);
	struct stat st;
	char		buf[32768];
	int64		copied = 0;
	int			rc = 0;

	if (in < 0)
		return draft_failed(d, 0);
	if (fstat(in, &st) != 0)
		rc = errno;
	else if (!S_ISREG(st.st_mode))
		rc = EINVAL;
	while (rc == 0)
	{
		ssize_t		n = read(in, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			rc = errno;
		else if (n == 0)
			break;
		else if ((copied += n) > HPG_MAX_FILE_BYTES)
			rc = EFBIG;
		else if (!hpg_write_all(d->fd, buf, (size_t) n))
			rc = errno ? errno : EIO;
	}
	close(in);
	return rc == 0 ? 0 : draft_failed(d, rc);
}

/* fsync a file or directory by path; best effort for a directory. */
static int
sync_path(const char *path, bool dir)
{
	int			fd = open(path, (dir ? O_RDONLY | O_DIRECTORY : O_RDONLY | O_NOFOLLOW) | PG_BINARY);
	int			rc;

	if (fd < 0)
		return errno;
	rc = pg_fsync(fd) == 0 ? 0 : errno;
	close(fd);
	return rc;
}

int
hpg_draft_publish(hpg_draft *d, const char *name, bool replace)
{
	char		final[MAXPGPATH];
	int			rc;

	/* a replaced file (a peak) outlives neither its process nor a restart: no fsync */
	if (d->fd >= 0 && ((!replace && pg_fsync(d->fd) != 0) || close(d->fd) != 0))
		return draft_failed(d, 0);
	if (d->fd < 0 && !replace && (rc = sync_path(d->path, false)) != 0)
		return draft_failed(d, rc);
	d->fd = -1;
	hpg_store_path(final, d->dir, name);
	/* a new name is taken atomically or refused (EEXIST) */
	rc = replace ? (rename(d->path, final) == 0 ? 0 : errno) : rename_new(d->path, final);
	if (rc != 0)
		return draft_failed(d, rc);
	d->path[0] = '\0';
	if (!replace)
		(void) sync_path(d->dir, true);
	return 0;
}

/* mkdir dir unless a real directory is there; 0 or an errno. */
static int
real_dir(const char *dir)
{
	struct stat st;

	if (mkdir(dir, pg_dir_create_mode) == 0)
		return 0;
	if (errno != EEXIST)
		return errno;
	if (lstat(dir, &st) != 0)
		return errno;
	return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
}

int
hpg_store_dir_ready(const char *dir)
{
	int			rc = real_dir(HPG_STORE_DIR);

	return rc != 0 ? rc : real_dir(dir);
}

void
hpg_store_time_name(char *name, size_t size, const char *kind)
{
	struct timeval tv;
	struct tm	tm;
	char		stamp[32];

	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	snprintf(name, size, "%s.%06ldZ-%d-%s", stamp, (long) tv.tv_usec, MyProcPid, kind);
}

/* The number at *p (digits only, at most INT_MAX), ending where *end says; -1 if none. */
static long
number(const char *p, const char **end)
{
	long		v = 0;
	const char *q = p;

	for (; *q >= '0' && *q <= '9' && v <= INT_MAX; q++)
		v = v * 10 + (*q - '0');
	*end = q;
	return q == p || v > INT_MAX ? -1 : v;
}

/*
 * The writer's pid if fname is a draft -- exactly tmp.PID.N, or
 * NAME.heap.tmpPID as heapprof 1.0 named them -- else 0.  No profile file
 * (NAME.heap) is ever one, whatever NAME.
 */
static int
draft_writer(const char *fname)
{
	const char *p;
	const char *end;
	long		pid;

	if (strncmp(fname, HPG_DRAFT_PREFIX, strlen(HPG_DRAFT_PREFIX)) == 0)
	{
		pid = number(fname + strlen(HPG_DRAFT_PREFIX), &end);
		if (pid <= 0 || *end != '.' || number(end + 1, &p) < 0 || *p != '\0')
			return 0;
		return (int) pid;
	}
	if ((p = strstr(fname, HPG_SUFFIX ".tmp")) == NULL)
		return 0;
	pid = number(p + strlen(HPG_SUFFIX ".tmp"), &end);
	return pid > 0 && *end == '\0' ? (int) pid : 0;
}

/*
 * Open a folder of the store for a sweep, or NULL: never through a link,
 * neither heapprof/ nor dir (a DBA's symlinked folder is not emptied).
 */
static DIR *
open_store_dir(const char *dir)
{
	struct stat st;
	int			fd;
	DIR		   *d;

	if (lstat(HPG_STORE_DIR, &st) != 0 || !S_ISDIR(st.st_mode))
		return NULL;
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW)) < 0)
		return NULL;
	if ((d = fdopendir(fd)) == NULL)
		close(fd);
	return d;
}

/* Is the draft's writer gone?  Its pid may be reused: then the draft waits. */
static bool
writer_gone(int pid)
{
	return pid != MyProcPid && kill(pid, 0) != 0 && errno == ESRCH;
}

/*
 * A lock file, NAME.lock, that nobody holds (its holder died: the kernel let
 * go of the flock): removed while held, as its holders remove it, and only
 * if it is still the file at path.
 */
static void
remove_stale_lock(const char *path)
{
	int			fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | PG_BINARY);
	struct stat st;
	struct stat ls;

	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && flock(fd, LOCK_EX | LOCK_NB) == 0 &&
		lstat(path, &ls) == 0 && ls.st_dev == st.st_dev && ls.st_ino == st.st_ino)
		(void) unlink(path);
	close(fd);
}

static bool
is_lock(const char *fname)
{
	size_t		n = strlen(fname);

	return n > strlen(HPG_SUFFIX ".lock") && strcmp(fname + n - strlen(".lock"), ".lock") == 0;
}

/* The owner named by the first line of the profile file at path; InvalidOid if none. */
static Oid
file_owner(const char *path)
{
	char		head[HPG_READ_HEAD];
	int			fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | PG_BINARY);
	struct stat st;
	ssize_t		n = -1;
	hp_meta		m;

	if (fd < 0)
		return InvalidOid;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		n = pread(fd, head, sizeof(head), 0);
	close(fd);
	return n > 0 && hp_read_meta(head, (size_t) n, &m) ? m.owner : InvalidOid;
}

typedef struct store_file
{
	char		name[NAME_MAX + 1];
	struct timespec mtime;
	off_t		size;
	bool		own;			/* counts in the owner's share */
	bool		removable;		/* a profile file of the owner's, which may make room */
} store_file;

/* Oldest first: by the time the file was written, then by name (names start with the time). */
static int
store_file_cmp(const void *a, const void *b)
{
	const store_file *x = a;
	const store_file *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

/*
 * Every file of dir into *files (malloc'ed; NULL and 0 if the folder cannot
 * be read), after removing drafts of writers that are gone and lock files
 * nobody holds; each file's owner read from its first line.
 */
static size_t
scan_store(const char *dir, Oid owner, store_file **files)
{
	DIR		   *d = open_store_dir(dir);
	struct dirent *de;
	size_t		n = 0;
	size_t		cap = 0;

	*files = NULL;
	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL)
	{
		size_t		len = strlen(de->d_name);
		int			writer = draft_writer(de->d_name);
		char		path[MAXPGPATH];
		struct stat st;
		bool		profile;

		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (writer != 0 && writer_gone(writer))
		{
			unlink(path);
			continue;
		}
		if (writer == 0 && is_lock(de->d_name))
			remove_stale_lock(path);
		if (de->d_name[0] == '.' || lstat(path, &st) != 0 || S_ISDIR(st.st_mode))
			continue;
		if (n == cap)
		{
			size_t		ncap = cap ? cap * 2 : 64;
			store_file *v = realloc(*files, ncap * sizeof(*v));

			if (v == NULL)
				break;
			*files = v;
			cap = ncap;
		}
		/* only regular profile files are ever removed to make room */
		profile = writer == 0 && S_ISREG(st.st_mode) && len > strlen(HPG_SUFFIX) &&
			strcmp(de->d_name + len - strlen(HPG_SUFFIX), HPG_SUFFIX) == 0;
		strlcpy((*files)[n].name, de->d_name, sizeof((*files)[n].name));
		(*files)[n].mtime = st.st_mtim;
		(*files)[n].size = st.st_size;
		/* drafts hold their owner line too: other sessions of the role count in its share */
		(*files)[n].own = owner == HPG_SHARED || writer == MyProcPid ||
			((profile || writer != 0) && file_owner(path) == owner);
		(*files)[n].removable = profile && (*files)[n].own;
		n++;
	}
	closedir(d);
	if (n > 1)
		qsort(*files, n, sizeof(**files), store_file_cmp);
	return n;
}

int			hpg_role_share = 50;

/* Is the login role a superuser?  -1 until learnt in a transaction: process exit cannot ask. */
static int	login_super = -1;

void
hpg_store_learn_login(void)
{
	if (login_super < 0 && IsTransactionState() && OidIsValid(GetAuthenticatedUserId()))
		login_super = superuser_arg(GetAuthenticatedUserId());
}

bool
hpg_store_login_super(void)
{
	return login_super > 0;
}

/* Would u, with c more files of b bytes, fit the caps and the owner's share? */
static bool
fits(const hpg_usage *u, int64 cap_count, int64 cap_bytes, int64 c, int64 b)
{
	return u->count + c <= cap_count && u->bytes + b <= cap_bytes &&
		u->own_count + c <= u->share_count && u->own_bytes + b <= u->share_bytes;
}

int
hpg_store_room(const char *dir, const hpg_quota *q, Oid owner, bool super,
			   int add_count, int64 add_bytes, bool prune, hpg_usage *u)
{
	store_file *files;
	size_t		n;
	hpg_usage	use = {0};
	hpg_usage	bare;
	int64		cap_count = q->max_count;
	int64		cap_bytes = q->max_bytes;
	bool		ok;

	/* only the symbol indexes and the history are nobody's: a writer without a role has no room */
	if (owner == HPG_SHARED && strcmp(dir, HPG_SYMBOL_DIR) != 0 && strcmp(dir, HPG_HISTORY_DIR) != 0)
		return EDQUOT;
	n = scan_store(dir, owner, &files);
	for (size_t i = 0; i < n; i++)
	{
		use.count++;
		use.bytes += files[i].size;
		use.own_count += files[i].own;
		use.own_bytes += files[i].own ? files[i].size : 0;
	}
	use.share_count = q->max_count;
	use.share_bytes = q->max_bytes;
	if (!super && owner != HPG_SHARED)
	{
		/* a role's share; and all such roles leave superusers the last tenth */
		use.share_count = Max(1, (int64) q->max_count * hpg_role_share / 100);
		use.share_bytes = q->max_bytes / 100 * hpg_role_share;
		cap_count -= q->max_count / 10;
		cap_bytes -= q->max_bytes / 10;
	}
	ok = fits(&use, cap_count, cap_bytes, add_count, add_bytes);
	/* what would be left with every removable file gone: if the file does not fit even so, none goes */
	bare = use;
	for (size_t i = 0; i < n; i++)
		if (files[i].removable)
		{
			bare.count--;
			bare.bytes -= files[i].size;
			bare.own_count--;
			bare.own_bytes -= files[i].size;
		}
	if (!ok && prune && fits(&bare, cap_count, cap_bytes, add_count, add_bytes))
	{
		for (size_t i = 0; i < n && !ok; i++)
		{
			char		path[MAXPGPATH];

			if (!files[i].removable)
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, files[i].name);
			if (unlink(path) == 0 || errno == ENOENT)
			{
				use.count--;
				use.bytes -= files[i].size;
				use.own_count--;
				use.own_bytes -= files[i].size;
				ok = fits(&use, cap_count, cap_bytes, add_count, add_bytes);
			}
		}
	}
	free(files);
	if (u)
		*u = use;
	return ok ? 0 : EDQUOT;
}

void
hpg_store_gucs(void)
{
	DefineCustomIntVariable("heapprof.role_share",
							"Most of each store's limits one role that is not superuser may hold, in percent.",
							"Snapshots, exit dumps and captures: a role's files push out only its own; "
							"such roles together never take the last tenth of a limit, which superusers keep.",
							&hpg_role_share,
							50, 1, 100,
							PGC_SUSET, 0,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("heapprof.store_statement_text",
							 "Files under $PGDATA/heapprof keep the text of statements, literals included.",
							 "Off: peaks, exit dumps, persisted snapshots and captures keep a statement's queryid only.",
							 &store_statement_text,
							 false,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);
}

/* A peak's file, PID.heap, or one heapprof 1.0 left beside it (.ids, .new)? */
static bool
peak_file(const char *fname)
{
	const char *end;

	return number(fname, &end) > 0 &&
		(strcmp(end, HPG_SUFFIX) == 0 || strcmp(end, HPG_SUFFIX ".ids") == 0 ||
		 strcmp(end, HPG_SUFFIX ".new") == 0 || strcmp(end, HPG_SUFFIX ".new.ids") == 0);
}

/*
 * At server start and after a crash no writer is running: remove every
 * draft and lock file, and every peak (each belongs to a process of the
 * last run).  Nothing else, and never through a link.
 */
static void
sweep_store(void)
{
	for (int i = 0; i < (int) lengthof(store_dirs); i++)
	{
		bool		peaks = strcmp(store_dirs[i], HPG_PEAK_DIR) == 0;
		DIR		   *d = open_store_dir(store_dirs[i]);
		struct dirent *de;

		if (d == NULL)
			continue;
		while ((de = readdir(d)) != NULL)
		{
			char		path[MAXPGPATH];

			if (draft_writer(de->d_name) == 0 && !is_lock(de->d_name) &&
				!(peaks && peak_file(de->d_name)))
				continue;
			snprintf(path, sizeof(path), "%s/%s", store_dirs[i], de->d_name);
			unlink(path);
		}
		closedir(d);
	}
}

static void
startup_store(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	sweep_store();
}

void
hpg_store_init(void)
{
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = startup_store;
}
