/*
 * sym_identity.c -- is the file on disk the one the dumping process had?
 *
 * libdwfl opens a module by its path today; the process may have mapped
 * another file there: deleted since ("(deleted)" in the maps), replaced by
 * an upgrade (another inode), or rewritten in place (only the build-id the
 * process recorded at dump time can tell).  Such a file's names would be
 * plausible and wrong, so the symbolizer gives none for it.
 *
 * A build-id recorded at dump time decides.  Without one, the same inode
 * does; a file with another inode (a dump from another machine, or a copy)
 * is the one only if the code says so: every return address of the dump in
 * it must follow a call instruction in the file, which a file whose code
 * moved fails after a few addresses.
 */
#include "sym_internal.h"

#include "maps.h"

#include <gelf.h>
#include <stdio.h>
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

static int
file_cmp(const void *x, const void *y)
{
	const sym_map_file *a = x;
	const sym_map_file *b = y;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return (a->order > b->order) - (a->order < b->order);
}

/* First index in sorted v[0..n) whose value is >= key. */
static size_t
lower_bound(const uint64_t *v, size_t n, uint64_t key)
{
	size_t		lo = 0;

	while (n > 0)
	{
		size_t		half = n / 2;

		if (v[lo + half] < key)
		{
			lo += half + 1;
			n -= half + 1;
		}
		else
			n = half;
	}
	return lo;
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
		id->files[id->nfiles] = (sym_map_file) {m.start, m.dev_major, m.dev_minor, m.inode, id->nfiles};
		id->nfiles++;
	}
	/* looked up by start per module: sorted, the first line at a start first */
	if (id->nfiles > 0)
		qsort(id->files, id->nfiles, sizeof(*id->files), file_cmp);
	return HP_OK;
}

hp_status
sym_identity_expect(sym_identity *id, const hp_build_id *ids, size_t n,
					uint64_t allocator_base, const uint64_t *calls, size_t ncalls)
{
	hp_build_id *copy = n ? malloc(n * sizeof(*ids)) : NULL;

	id->allocator_base = allocator_base;
	id->calls = calls;
	id->ncalls = ncalls;
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
 * devices in maps than stat does.  *other: the inode differs.
 */
static const char *
file_mismatch(const sym_identity *id, const char *path, uint64_t low, bool *other)
{
	struct stat st;
	size_t		lo = 0;
	size_t		n = id->nfiles;

	*other = false;
	if (sym_identity_name_len(path) != strlen(path))
		return "deleted";

	/* the first line at low, by binary search */
	while (n > 0)
	{
		size_t		half = n / 2;

		if (id->files[lo + half].start < low)
		{
			lo += half + 1;
			n -= half + 1;
		}
		else
			n = half;
	}
	for (size_t i = lo; i < id->nfiles; i++)
	{
		const sym_map_file *m = &id->files[i];

		if (m->start != low)
			break;
		if (stat(path, &st) != 0)
			return "missing";
		*other = major(st.st_dev) == m->dev_major && minor(st.st_dev) == m->dev_minor &&
			st.st_ino != m->inode;
		break;
	}
	return NULL;
}

/* 1: the recorded build-id (if any) matches the file's, 0: not, -1: none recorded. */
static int
build_id_matches(const sym_identity *id, Dwfl_Module *mod, uint64_t bias)
{
	const unsigned char *bits;
	GElf_Addr	vaddr;
	int			len;

	for (size_t i = 0; i < id->nids; i++)
	{
		if (id->ids[i].bias != bias)
			continue;
		if (id->ids[i].len == 0)
			return -1;			/* none recorded: the inode and the code decide */
		/* a file without one is not the build recorded */
		len = dwfl_module_build_id(mod, &bits, &vaddr);
		return len > 0 && (size_t) len == id->ids[i].len && memcmp(bits, id->ids[i].id, (size_t) len) == 0;
	}
	return -1;
}

/*
 * x86-64: does a call instruction end at c[n] (c[0..n) readable, n >= 16)?
 * ra, lo, hi: file addresses of c[n] and of the loaded image's bounds.
 */
static bool
x86_call_before(const unsigned char *c, size_t n, uint64_t ra, uint64_t lo, uint64_t hi)
{
	int32_t		rel;

	/* call rel32, to a place inside the file's loaded image */
	if (c[n - 5] == 0xe8)
	{
		memcpy(&rel, c + n - 4, sizeof(rel));
		if (ra + (uint64_t) (int64_t) rel >= lo && ra + (uint64_t) (int64_t) rel < hi)
			return true;
	}
	/* call r/m64: ff /2 (any prefix before it does not matter) */
	for (size_t len = 2; len <= 7; len++)
	{
		const unsigned char *op = c + n - len;
		unsigned	mod = op[1] >> 6;
		unsigned	rm = op[1] & 7;
		size_t		need = 2;

		if (op[0] != 0xff || ((op[1] >> 3) & 7) != 2)
			continue;
		if (mod != 3 && rm == 4)
		{
			if (len < 3)
				continue;		/* the SIB byte would be past the call */
			need += 1 + (mod == 0 && (op[2] & 7) == 5 ? 4 : 0);
		}
		need += mod == 1 ? 1 : mod == 2 ? 4 : mod == 0 && rm == 5 ? 4 : 0;
		if (need == len)
			return true;
	}
	return false;
}

/* aarch64: bl or blr just before? */
static bool
arm_call_before(const unsigned char *c, size_t n)
{
	uint32_t	insn = (uint32_t) c[n - 4] | (uint32_t) c[n - 3] << 8 |
		(uint32_t) c[n - 2] << 16 | (uint32_t) c[n - 1] << 24;

	return (insn & 0xfc000000u) == 0x94000000u || (insn & 0xfffffc1fu) == 0xd63f0000u;
}

/*
 * How many of the profile's return addresses in [low, high) follow a call
 * instruction in the file (bias: its load bias); stops at the first that
 * does not.  *n: how many there are.
 */
static size_t
calls_found(const sym_identity *id, Elf *elf, uint64_t bias, uint64_t low, uint64_t high,
			size_t *n)
{
	size_t		size;
	const unsigned char *img = (const unsigned char *) elf_rawfile(elf, &size);
	GElf_Ehdr	eh;
	size_t		nph;
	size_t		ok = 0;

	size_t		first = lower_bound(id->calls, id->ncalls, low);
	size_t		last = lower_bound(id->calls, id->ncalls, high);

	*n = low < high ? last - first : 0;
	if (img == NULL || gelf_getehdr(elf, &eh) == NULL || elf_getphdrnum(elf, &nph) != 0 ||
		(eh.e_machine != EM_X86_64 && eh.e_machine != EM_AARCH64))
		return 0;
	for (size_t i = first; i < first + *n; i++)
	{
		/* calls[] hold return address - 1 */
		uint64_t	ra = id->calls[i] + 1 - bias;
		bool		found = false;

		for (size_t k = 0; k < nph && !found; k++)
		{
			GElf_Phdr	ph;

			if (gelf_getphdr(elf, (int) k, &ph) == NULL || ph.p_type != PT_LOAD ||
				!(ph.p_flags & PF_X) || ra < ph.p_vaddr || ra - ph.p_vaddr < 16 ||
				ra - ph.p_vaddr > ph.p_filesz || ph.p_offset > size || ph.p_filesz > size - ph.p_offset)
				continue;
			found = eh.e_machine == EM_X86_64 ?
				x86_call_before(img + ph.p_offset + (ra - ph.p_vaddr) - 16, 16,
								ra, low - bias, high - bias) :
				arm_call_before(img + ph.p_offset + (ra - ph.p_vaddr) - 4, 4);
		}
		if (!found)
			break;
		ok++;
	}
	return ok;
}

const char *
sym_identity_check(const sym_identity *id, Dwfl_Module *mod, const char *path,
				   uint64_t low, uint64_t high, Elf *elf, uint64_t bias,
				   char *evidence, size_t len)
{
	bool		other;
	const char *why = file_mismatch(id, path, low, &other);
	int			bid;
	size_t		ok;
	size_t		n;

	snprintf(evidence, len, "%s", why ? why : "");
	if (why)
		return why;
	if (id->ids_lost)
		return snprintf(evidence, len, "build-id unknown"), "build-id unknown";
	if (elf == NULL)
		return snprintf(evidence, len, "unreadable"), NULL;
	bid = build_id_matches(id, mod, bias);
	if (bid >= 0)
	{
		snprintf(evidence, len, bid ? "build-id" : "build-id mismatch");
		return bid ? NULL : "build-id mismatch";
	}
	if (!other)
		return snprintf(evidence, len, "inode"), NULL;
	ok = calls_found(id, elf, bias, low, high, &n);
	if (n > 0 && ok == n)
		return snprintf(evidence, len, "other inode, code: all %zu return addresses follow a call", n), NULL;
	if (n == 0)
		snprintf(evidence, len, "other inode, no return address to check the code");
	else
		snprintf(evidence, len, "other inode, code: return address %zu of %zu follows no call", ok + 1, n);
	return "replaced";
}
void
sym_identity_free(sym_identity *id)
{
	free(id->files);
	free(id->ids);
}
