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
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/fd.h"

#include "heapprof_pg.h"
#include "engine/symbolize.h"

#define DUMP_DIR "base/" PG_TEMP_FILES_DIR


/* Append a whole file to out; false if it does not exist and missing_ok. */
bool
hp_read_file(const char *path, StringInfo out, bool missing_ok)
{
	int			fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);

	if (fd < 0 && missing_ok && errno == ENOENT)
		return false;
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
	return true;
}

#define MAX_OBJECTS 1024

typedef struct id_list
{
	hp_build_id *ids;
	int			n;
} id_list;

/* Is [addr, addr + len) inside one of the object's loaded segments? */
static bool
in_load_segment(const struct dl_phdr_info *info, ElfW(Addr) addr, size_t len)
{
	for (int i = 0; i < info->dlpi_phnum; i++)
	{
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && addr >= ph->p_vaddr &&
			addr + len >= addr && addr + len <= ph->p_vaddr + ph->p_memsz)
			return true;
	}
	return false;
}

/*
 * dl_iterate_phdr callback: the GNU build-id note of one loaded object.  It
 * runs under the dynamic loader's lock, so it allocates nothing and cannot
 * raise an error.
 */
static int
add_build_id(struct dl_phdr_info *info, size_t size, void *arg)
{
	id_list    *list = arg;

	if (list->n >= MAX_OBJECTS)
		return 1;
	for (int i = 0; i < info->dlpi_phnum; i++)
	{
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const char *p;
		const char *end;

		if (ph->p_type != PT_NOTE || !in_load_segment(info, ph->p_vaddr, ph->p_memsz))
			continue;
		p = (const char *) (info->dlpi_addr + ph->p_vaddr);
		end = p + ph->p_memsz;
		while ((size_t) (end - p) >= sizeof(ElfW(Nhdr)))
		{
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *) p;
			size_t		namesz = ((size_t) nh->n_namesz + 3) & ~(size_t) 3;
			size_t		descsz = ((size_t) nh->n_descsz + 3) & ~(size_t) 3;
			const char *name = p + sizeof(*nh);
			const char *desc = name + namesz;

			if (namesz > (size_t) (end - name) || descsz > (size_t) (end - desc))
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
				memcmp(name, "GNU", 4) == 0 && nh->n_descsz <= sizeof(list->ids[0].id))
			{
				list->ids[list->n].bias = info->dlpi_addr;
				memcpy(list->ids[list->n].id, desc, nh->n_descsz);
				list->ids[list->n].len = nh->n_descsz;
				list->n++;
				return 0;
			}
			p = desc + descsz;
		}
	}
	return 0;
}

/* Room for the identity lines of every object a backend may load. */
#define IDENTITY_MAX (MAX_OBJECTS * 170)

/*
 * What the analysis needs to trust files on disk, as "%" lines before the
 * dump: where jemalloc is loaded and every loaded object's build-id.  Plain
 * C into a caller's buffer: a target process writes it while serving a
 * request.  Returns the length.
 */
size_t
hp_identity_text(char *buf, size_t size)
{
	static hp_build_id all[MAX_OBJECTS];
	id_list		list = {all, 0};
	size_t		n;
	size_t		len;

	dl_iterate_phdr(add_build_id, &list);
	len = (size_t) snprintf(buf, size, "%%heapprof-allocator %llx\n",
							(unsigned long long) hpj_library_base());
	/* a line is at most 19 + 16 + 1 + 2 * 64 + 1 = 165 bytes */
	for (int i = 0; i < list.n && len + 170 < size; i++)
	{
		len += (size_t) snprintf(buf + len, size - len, "%%heapprof-build-id %llx ",
								 (unsigned long long) all[i].bias);
		for (n = 0; n < all[i].len; n++)
			len += (size_t) snprintf(buf + len, size - len, "%02x", all[i].id[n]);
		buf[len++] = '\n';
	}
	buf[len] = '\0';
	return len;
}

static void
write_identity(StringInfo out)
{
	char	   *buf = palloc(IDENTITY_MAX);
	size_t		len = hp_identity_text(buf, IDENTITY_MAX);

	appendBinaryStringInfo(out, buf, (int) len);
	pfree(buf);
}

/* Write all of buf to fd; false with errno set (ENOSPC for a short write). Plain C. */
bool
hp_write_all(int fd, const char *buf, size_t len)
{
	while (len > 0)
	{
		ssize_t		n = write(fd, buf, len);

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

/* In a target process: the identity lines beside its dump.  0 or an errno. */
int
hp_write_identity_file(const char *dump_path)
{
	static char buf[IDENTITY_MAX];
	char		path[MAXPGPATH];
	size_t		len = hp_identity_text(buf, sizeof(buf));
	int			fd;

	snprintf(path, sizeof(path), "%s.ids", dump_path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY, S_IRUSR | S_IWUSR);
	if (fd < 0)
		return errno;
	if (!hp_write_all(fd, buf, len))
	{
		int			save = errno;

		close(fd);
		return save;
	}
	return close(fd) == 0 ? 0 : errno;
}

void
hp_remove_dump_files(const char *dump_path)
{
	char		path[MAXPGPATH];

	snprintf(path, sizeof(path), "%s.ids", dump_path);
	unlink(dump_path);
	unlink(path);
}

/*
 * Dump this backend's live sampled allocations into out (a heap_v2 text),
 * after the identity lines when asked (heapprof_dump_raw gives jemalloc's
 * text verbatim).
 */
void
hp_take_dump(StringInfo out, bool identity)
{
	static uint32 seq = 0;
	char		path[MAXPGPATH];

	hp_require_profiling();
	if (identity)
		write_identity(out);
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
		hp_read_file(path, out, false);
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


/*
 * Dump process pid's live sampled allocations into out, after its identity
 * lines.  The target writes both files; they are removed on every path.
 */
void
hp_take_remote_dump(int pid, StringInfo out)
{
	static uint32 seq = 0;
	char		path[MAXPGPATH];
	char		ids[MAXPGPATH];
	hp_remote	r;

	if (MakePGDirectory(DUMP_DIR) < 0 && errno != EEXIST)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", DUMP_DIR)));
	snprintf(path, sizeof(path), "%s/%s%d.heapprof.remote.%u",
			 DUMP_DIR, PG_TEMP_FILE_PREFIX, MyProcPid, seq++);
	snprintf(ids, sizeof(ids), "%s.ids", path);
	PG_TRY();
	{
		hp_remote_call(pid, HP_OP_DUMP, -1, path, &r);
		hp_check_remote(pid, &r, "write the heap profile");
		hp_read_file(ids, out, false);
		hp_read_file(path, out, false);
	}
	PG_FINALLY();
	{
		hp_remove_dump_files(path);
	}
	PG_END_TRY();
}
