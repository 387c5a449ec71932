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

#define HPG_READ_HEAD 1024

/*
 * A profile file's first bytes alone (at most HPG_READ_HEAD: the owner line
 * fits), judged as hpg_read_file judges a file (below ERROR, elevel: -1
 * with that message): its descriptor, still open (a transient file, closed
 * by an error), or -1 if missing; st as fstat says.  Whoever must act on
 * the very file that was judged keeps it open: its inode cannot be reused
 * meanwhile.
 */
struct stat;
extern int	hpg_read_head(const char *path, char *head, int *len, struct stat *st, int elevel);

/*
 * hpg_read_file, but check (if not NULL) is first given the opened file's
 * first bytes (at most HPG_READ_HEAD; a profile's owner line fits) and its
 * size, before it is read; it raises an ERROR to refuse.  Then exactly that
 * size must be read, so a file changed in place after the check is an
 * ERROR, never read past or short of what check judged.
 */
typedef void (*hpg_read_check) (const char *head, int len, int64 size, void *arg);
extern bool hpg_read_file_checked(const char *path, StringInfo out, bool missing_ok,
								  hpg_read_check check, void *arg);


/* Plain C (errno, never an error), so that a target process and process exit can use them. */
extern bool hpg_write_all(int fd, const char *buf, size_t len);
/*
 * Create path with text: a new file (never an existing one, a link or a
 * FIFO: EEXIST), for a request's files in base/pgsql_tmp.
 */
extern bool hpg_write_file(const char *path, const char *text, size_t len);

#endif
