/*
 * sym_identity.c -- is the file on disk the one the dumping process had?
 *
 * libdwfl opens a module by its path today; the process may have mapped
 * another file there: deleted since ("(deleted)" in the maps), replaced by
 * an upgrade (another inode), or rewritten in place (only the build-id the
 * process recorded at dump time can tell).  Such a file's names would be
 * plausible and wrong, so the symbolizer gives none for it.
 */
#include "sym_internal.h"

#include "maps.h"

#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#define DELETED_SUFFIX " (deleted)"

size_t
sym_identity_name_len(const char *object)
{
	size_t		len = strlen(object);

	if (len > strlen(DELETED_SUFFIX) &&
		strcmp(object + len - strlen(DELETED_SUFFIX), DELETED_SUFFIX) == 0)
		len -= strlen(DELETED_SUFFIX);
	return len;
}

/* Index the lines of a maps text that map a file (none when maps is NULL). */
hp_status
sym_identity_maps(sym_identity *id, const char *maps, size_t len)
{
	size_t		cap = 0;
	const char *p = maps;
	const char *end = maps ? maps + len : NULL;
	hp_mapping	m;

	free(id->files);
	id->files = NULL;
	id->nfiles = 0;
	while (hp_maps_next(&p, end, &m))
	{
		if (m.path == NULL)
			continue;
		if (id->nfiles == cap)
		{
			sym_map_file *v = grow_array(id->files, &cap, 64, sizeof(*v));

			if (v == NULL)
				return HP_ENOMEM;
			id->files = v;
		}
		id->files[id->nfiles++] = (sym_map_file) {m.start, m.dev_major, m.dev_minor, m.inode};
	}
	return HP_OK;
}

hp_status
sym_identity_expect(sym_identity *id, const hp_build_id *ids, size_t n,
					uint64_t allocator_base)
{
	hp_build_id *copy = n ? malloc(n * sizeof(*ids)) : NULL;

	id->allocator_base = allocator_base;
	free(id->ids);
	id->ids = NULL;
	id->nids = 0;
	/* without the build-ids no file can be checked: none is trusted */
	id->ids_lost = n && copy == NULL;
	if (id->ids_lost)
		return HP_ENOMEM;
	if (n)
		memcpy(copy, ids, n * sizeof(*ids));
	id->ids = copy;
	id->nids = n;
	return HP_OK;
}

/*
 * Deleted, or another file than the maps' line at low?  Device and inode
 * are compared only on the same device: overlay file systems show other
 * devices in maps than stat does.
 */
static const char *
file_mismatch(const sym_identity *id, const char *path, uint64_t low)
{
	struct stat st;

	if (sym_identity_name_len(path) != strlen(path))
		return "deleted";
	for (size_t i = 0; i < id->nfiles; i++)
	{
		const sym_map_file *m = &id->files[i];

		if (m->start != low)
			continue;
		if (stat(path, &st) != 0)
			return "missing";
		if (major(st.st_dev) == m->dev_major && minor(st.st_dev) == m->dev_minor &&
			st.st_ino != m->inode)
			return "replaced";
		break;
	}
	return NULL;
}

/* Does the build-id recorded at dump time (if any) match the file's? */
static bool
build_id_matches(const sym_identity *id, Dwfl_Module *mod, uint64_t bias)
{
	const unsigned char *bits;
	GElf_Addr	vaddr;
	int			len;

	for (size_t i = 0; i < id->nids; i++)
	{
		if (id->ids[i].bias != bias)
			continue;
		len = dwfl_module_build_id(mod, &bits, &vaddr);
		return len <= 0 || ((size_t) len == id->ids[i].len && memcmp(bits, id->ids[i].id, (size_t) len) == 0);
	}
	return true;
}

const char *
sym_identity_check(const sym_identity *id, Dwfl_Module *mod, const char *path,
				   uint64_t low, bool has_elf, uint64_t bias)
{
	const char *why = file_mismatch(id, path, low);

	if (why == NULL && id->ids_lost)
		why = "build-id unknown";
	if (why == NULL && has_elf && !build_id_matches(id, mod, bias))
		why = "build-id mismatch";
	return why;
}

void
sym_identity_free(sym_identity *id)
{
	free(id->files);
	free(id->ids);
}
