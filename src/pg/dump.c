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

static hp_build_id *hp_loaded_build_ids(int *n);

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

/*
 * What the analysis needs to trust files on disk, as "%" lines before the
 * dump: where jemalloc is loaded and every loaded object's build-id.
 */
static void
write_identity(StringInfo out)
{
	int			n;
	hp_build_id *ids = hp_loaded_build_ids(&n);

	appendStringInfo(out, "%%heapprof-allocator %llx\n", (unsigned long long) hpj_library_base());
	for (int i = 0; i < n; i++)
	{
		appendStringInfo(out, "%%heapprof-build-id %llx ", (unsigned long long) ids[i].bias);
		for (size_t k = 0; k < ids[i].len; k++)
			appendStringInfo(out, "%02x", ids[i].id[k]);
		appendStringInfoChar(out, '\n');
	}
	pfree(ids);
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

/*
 * Build-ids of the objects loaded in this process, read from memory.  Taken
 * with the dump, they let the symbolizer refuse a file on disk that is no
 * longer the one that was loaded (an upgrade replaced it in place).
 */
static hp_build_id *
hp_loaded_build_ids(int *n)
{
	id_list		list = {palloc(MAX_OBJECTS * sizeof(hp_build_id)), 0};

	dl_iterate_phdr(add_build_id, &list);
	*n = list.n;
	return list.ids;
}
