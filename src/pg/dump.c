/*
 * dump.c -- take this backend's heap profile as text.
 *
 * jemalloc writes a dump only to a file (prof.dump).  The file goes to
 * base/pgsql_tmp under a pgsql_tmp name, so even a crash between writing and
 * removing it leaves nothing behind: the server removes such files at start.
 * jemalloc creates it under the postmaster's umask (0077), so only the
 * server's OS user can read it, and it is removed on every path, errors
 * included.
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/fd.h"

#include "heapprof_pg.h"

#define DUMP_DIR "base/" PG_TEMP_FILES_DIR

static void
read_whole_file(const char *path, StringInfo out)
{
	int			fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);

	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open heap profile \"%s\": %m", path)));
	for (;;)
	{
		ssize_t		n;

		enlargeStringInfo(out, 65536);
		n = read(fd, out->data + out->len, out->maxlen - out->len - 1);
		if (n < 0)
		{
			int			save = errno;

			CloseTransientFile(fd);
			errno = save;
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not read heap profile \"%s\": %m", path)));
		}
		if (n == 0)
			break;
		out->len += (int) n;
		out->data[out->len] = '\0';
	}
	CloseTransientFile(fd);
}

/* Dump this backend's live sampled allocations into out (a heap_v2 text). */
void
hp_take_dump(StringInfo out)
{
	static uint32 seq = 0;
	char		path[MAXPGPATH];

	hp_require_profiling();
	if (MakePGDirectory(DUMP_DIR) < 0 && errno != EEXIST)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", DUMP_DIR)));
	snprintf(path, sizeof(path), "%s/%s%d.heapprof.%u",
			 DUMP_DIR, PG_TEMP_FILE_PREFIX, MyProcPid, seq++);

	PG_TRY();
	{
		int			rc = hpj_dump(path);

		if (rc != 0)
			ereport(ERROR,
					(errcode(ERRCODE_IO_ERROR),
					 errmsg("jemalloc could not write the heap profile to \"%s\": %s",
							path, strerror(rc)),
					 errhint("Check free space and permissions of the data directory's %s folder.",
							 DUMP_DIR)));
		read_whole_file(path, out);
	}
	PG_FINALLY();
	{
		if (unlink(path) < 0 && errno != ENOENT)
			ereport(WARNING,
					(errcode_for_file_access(),
					 errmsg("could not remove heap profile \"%s\": %m", path)));
	}
	PG_END_TRY();
}
