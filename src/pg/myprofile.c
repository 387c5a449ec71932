/*
 * myprofile.c -- take this process's heap profile as text.
 *
 * jemalloc writes a dump only to a file (prof.dump).  The file goes to
 * base/pgsql_tmp under a pgsql_tmp name, so even a crash between writing and
 * removing it leaves nothing behind: the server removes such files at start.
 * jemalloc creates it under the postmaster's umask (0077), so only the
 * server's OS user can read it, and it is removed on every path, errors
 * included.
 *
 * Before the dump go the identity lines (engine/format.h): every loaded
 * object's build-id, where jemalloc is loaded and where the allocator's
 * nameless functions start, so that an analysis -- in this process, in
 * another, or offline -- can trust or refuse the files it finds on disk.
 */
#include "postgres.h"

#include <fcntl.h>
#include <link.h>
#include <unistd.h>

#include "mb/pg_wchar.h"
#include "miscadmin.h"

#include "analysis.h"
#include "compat.h"
#include "errors.h"
#include "files.h"
#include "fold.h"
#include "jemalloc.h"
#include "labels.h"
#include "myprofile.h"
#include "engine/format.h"

#define DUMP_DIR "base/" PG_TEMP_FILES_DIR

typedef struct id_list
{
	hp_build_id *ids;
	size_t		n;
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

	if (list->n >= HP_MAX_OBJECTS)
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

size_t
hpg_identity_text(char *buf, size_t size, bool coverage)
{
	static hp_build_id all[HP_MAX_OBJECTS];
	id_list		list = {all, 0};
	hp_identity id = {0};
	hpj_status	st;

	dl_iterate_phdr(add_build_id, &list);
	id.allocator_base = hpj_library_base();
	id.ids = all;
	id.nids = list.n;
	id.fold_starts = hpg_fold_starts(&id.nfold_starts);
	hpj_get_status(&st);
	id.coverage.known = coverage && st.have_stats;
	id.coverage.since = st.sampling_since;
	/* heapprof's own caches are never sampled: not what the profile misses */
	id.coverage.allocated = st.allocated - Min(st.allocated, (uint64) Max(hpg_symbolizer_bytes(), 0));
	hpg_labels_tables(&id);
	id.encoding = GetDatabaseEncodingName();
	return hp_format_identity(buf, size, &id);
}

int
hpg_write_identity_file(const char *dump_path, bool coverage)
{
	static char buf[HP_IDENTITY_MAX];
	char		path[MAXPGPATH];
	size_t		len = hpg_identity_text(buf, sizeof(buf), coverage);

	snprintf(path, sizeof(path), "%s.ids", dump_path);
	return hpg_write_file(path, buf, len) ? 0 : errno;
}

/*
 * The maps of this process as a dump's MAPPED_LIBRARIES section, for
 * jemalloc's records of recent allocations, which carry only addresses.
 */
int
hpg_write_maps_file(const char *dump_path)
{
	static const char head[] = "\nMAPPED_LIBRARIES:\n";
	char		path[MAXPGPATH];
	char		buf[8192];
	int			in;
	int			out;
	ssize_t		n;
	int			rc = 0;

	snprintf(path, sizeof(path), "%s.maps", dump_path);
	if ((in = open("/proc/self/maps", O_RDONLY)) < 0)
		return errno;
	out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | PG_BINARY, S_IRUSR | S_IWUSR);
	if (out < 0)
		rc = errno;
	else if (!hpg_write_all(out, head, sizeof(head) - 1))
		rc = errno;
	while (rc == 0 && (n = read(in, buf, sizeof(buf))) != 0)
	{
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || !hpg_write_all(out, buf, (size_t) n))
			rc = errno ? errno : EIO;
	}
	if (out >= 0 && close(out) != 0 && rc == 0)
		rc = errno;
	close(in);
	return rc;
}

void
hpg_remove_dump_files(const char *dump_path)
{
	char		path[MAXPGPATH];

	unlink(dump_path);
	snprintf(path, sizeof(path), "%s.ids", dump_path);
	unlink(path);
	snprintf(path, sizeof(path), "%s.maps", dump_path);
	unlink(path);
}

void
hpg_dump_path(char *path, size_t size, const char *kind)
{
	static uint32 seq = 0;

	if (MakePGDirectory(DUMP_DIR) < 0 && errno != EEXIST)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", DUMP_DIR),
				 errhint("Check free space and permissions of the data directory.")));
	snprintf(path, size, "%s/%s%d.heapprof.%s.%u",
			 DUMP_DIR, PG_TEMP_FILE_PREFIX, MyProcPid, kind, seq++);
}

void
hpg_my_profile(StringInfo out, bool identity, hpg_read_check check, void *arg)
{
	char		path[MAXPGPATH];

	hpg_require_profiling();
	if (identity)
	{
		char	   *buf = palloc(HP_IDENTITY_MAX);
		size_t		len = hpg_identity_text(buf, HP_IDENTITY_MAX, true);

		appendBinaryStringInfo(out, buf, (int) len);
		pfree(buf);
	}
	hpg_dump_path(path, sizeof(path), "self");
	PG_TRY();
	{
		hpg_check_write(hpj_dump(path), "the heap profile", path, 0);
		hpg_read_file_checked(path, out, false, check, arg);
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
