/*
 * files.h -- reading and writing heapprof's files safely.
 */
#ifndef HEAPPROF_FILES_H
#define HEAPPROF_FILES_H

#include "lib/stringinfo.h"

/* Largest profile file heapprof reads. */
#define HPG_MAX_FILE_BYTES (256 * 1024 * 1024)

/*
 * Append a whole profile file to out.  Only a regular file, not reached
 * through a symbolic link, of at most HPG_MAX_FILE_BYTES: anything else is
 * an ERROR, as is a failed read.  A missing file returns false if
 * missing_ok.
 */
extern bool hpg_read_file(const char *path, StringInfo out, bool missing_ok);

/*
 * The same (missing_ok), but the file stays open: its descriptor (a
 * transient file, closed by an error), -1 if missing; st as fstat says.
 * Whoever must act on the very file that was read keeps it open: its inode
 * cannot be reused meanwhile.
 */
struct stat;
extern int	hpg_read_file_open(const char *path, StringInfo out, struct stat *st);

/*
 * hpg_read_file, but check (if not NULL) is first given the opened file's
 * first bytes (at most HPG_READ_HEAD; a profile's owner line fits) and its
 * size, before it is read; it raises an ERROR to refuse.  Then exactly that
 * size must be read, so a file changed in place after the check is an
 * ERROR, never read past or short of what check judged.
 */
#define HPG_READ_HEAD 1024
typedef void (*hpg_read_check) (const char *head, int len, int64 size, void *arg);
extern bool hpg_read_file_checked(const char *path, StringInfo out, bool missing_ok,
								  hpg_read_check check, void *arg);

/* The same for listings: false, with a WARNING, for anything unusable; silent if missing. */
extern bool hpg_read_file_or_warn(const char *path, StringInfo out);

/* Plain C (errno, never an error), so that a target process and process exit can use them. */
extern bool hpg_write_all(int fd, const char *buf, size_t len);
/*
 * Create path with text: a new file (never an existing one, a link or a
 * FIFO: EEXIST), for a request's files in base/pgsql_tmp.
 */
extern bool hpg_write_file(const char *path, const char *text, size_t len);

#endif
