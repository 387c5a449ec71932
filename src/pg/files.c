/*
 * files.c -- reading and writing heapprof's files safely.
 *
 * Files under $PGDATA/heapprof can be put there by anyone who can write the
 * data directory, so a reader trusts nothing about them: a FIFO would block
 * open() beyond the reach of statement_timeout, a symbolic link would read
 * elsewhere, a huge file would exhaust memory.  Files are opened
 * non-blocking and without following links, and only regular files of
 * bounded size are read.  The profiles heapprof keeps are written by
 * store.c, through drafts and one rename each.
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "miscadmin.h"
#include "storage/fd.h"

#include "files.h"

/*
 * Open the profile file at path: the file (a transient file: an error closes
 * it), or -1 if missing (and missing_ok) or, below ERROR, unusable.  st:
 * what fstat said of it.
 */
static int
open_profile(const char *path, bool missing_ok, int elevel, struct stat *st)
{
	int			fd = OpenTransientFile(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | PG_BINARY);
	const char *why = NULL;

	if (fd < 0 && errno == ENOENT && missing_ok)
		return -1;
	if (fd < 0)
	{
		bool		link = errno == ELOOP;

		if (link)
			ereport(elevel,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("heap profile \"%s\" is a symbolic link", path),
					 errhint("heapprof does not follow symbolic links in its folders; remove the link.")));
		else
			ereport(elevel,
					(errcode_for_file_access(),
					 errmsg("could not open heap profile \"%s\": %m", path),
					 errhint("Check the permissions of the data directory's heapprof folder.")));
		return -1;
	}
	if (fstat(fd, st) != 0)
		why = "could not be examined";
	else if (!S_ISREG(st->st_mode))
		why = "is not a regular file";
	if (why)
	{
		CloseTransientFile(fd);
		ereport(elevel,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("heap profile \"%s\" %s", path, why),
				 errhint("Remove or move the file; heapprof only writes regular files there.")));
		return -1;
	}
	if (st->st_size > HPG_MAX_FILE_BYTES)
	{
		CloseTransientFile(fd);
		ereport(elevel,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("heap profile \"%s\" is larger than 256 MB (" INT64_FORMAT " bytes)", path, (int64) st->st_size),
				 errhint("Report on it off the server: copy the file and run heapprof-report on it.")));
		return -1;
	}
	return fd;
}

/* The file's first bytes, at most HPG_READ_HEAD; their number (0 on a failed read). */
static int
read_head(int fd, char *head)
{
	ssize_t		n = pread(fd, head, HPG_READ_HEAD, 0);

	return n < 0 ? 0 : (int) n;
}

/*
 * Read path into out; returns the file, still open, or -1 as open_profile
 * does.  check, if given, sees the opened file's first bytes and size
 * before anything more is read, and then exactly that size must be read:
 * what it judged is what is read.
 */
static int
read_file(const char *path, StringInfo out, bool missing_ok, int elevel, struct stat *st,
		  hpg_read_check check, void *arg)
{
	int			fd = open_profile(path, missing_ok, elevel, st);
	int			start = out->len;
	int64		limit = HPG_MAX_FILE_BYTES;

	if (fd < 0)
		return -1;
	if (check)
	{
		char		head[HPG_READ_HEAD];

		check(head, read_head(fd, head), (int64) st->st_size, arg);
		limit = (int64) st->st_size;
	}
	for (;;)
	{
		ssize_t		n;

		CHECK_FOR_INTERRUPTS();
		enlargeStringInfo(out, 65536);
		n = read(fd, out->data + out->len, out->maxlen - out->len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		/* what check judged is what is read: no more, and (at the end) no less */
		if (n < 0 || out->len - start + n > limit || (n == 0 && check && out->len - start < limit))
		{
			int			save = errno;

			CloseTransientFile(fd);
			out->len = start;
			out->data[start] = '\0';
			errno = save;
			if (n < 0)
				ereport(elevel,
						(errcode_for_file_access(),
						 errmsg("could not read heap profile \"%s\": %m", path)));
			else
				ereport(elevel,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("heap profile \"%s\" changed while being read", path),
						 errhint("heapprof publishes a profile whole, by one rename; something else writes this file.")));
			return -1;
		}
		if (n == 0)
			break;
		out->len += (int) n;
		out->data[out->len] = '\0';
	}
	return fd;
}

/* read_file, closing the file: false if there was none to read */
static bool
read_and_close(const char *path, StringInfo out, bool missing_ok, int elevel,
			   hpg_read_check check, void *arg)
{
	struct stat st;
	int			fd = read_file(path, out, missing_ok, elevel, &st, check, arg);

	if (fd < 0)
		return false;
	CloseTransientFile(fd);
	return true;
}

int
hpg_read_head(const char *path, char *head, int *len, struct stat *st, int elevel)
{
	int			fd = open_profile(path, true, elevel, st);

	*len = fd < 0 ? 0 : read_head(fd, head);
	return fd;
}

bool
hpg_read_file_checked(const char *path, StringInfo out, bool missing_ok, hpg_read_check check, void *arg)
{
	return read_and_close(path, out, missing_ok, ERROR, check, arg);
}

bool
hpg_read_file(const char *path, StringInfo out, bool missing_ok)
{
	return read_and_close(path, out, missing_ok, ERROR, NULL, NULL);
}

bool
hpg_write_all(int fd, const char *buf, size_t len)
{
	while (len > 0)
	{
		ssize_t		n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
		{
			if (n == 0)
				errno = ENOSPC;
			return false;
		}
		buf += n;
		len -= (size_t) n;
	}
	return true;
}

bool
hpg_write_file(const char *path, const char *text, size_t len)
{
	int			fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | PG_BINARY, S_IRUSR | S_IWUSR);
	bool		ok;
	int			save;

	if (fd < 0)
		return false;
	ok = hpg_write_all(fd, text, len);
	save = errno;
	if (close(fd) != 0 && ok)
		return false;
	errno = save;
	return ok;
}
