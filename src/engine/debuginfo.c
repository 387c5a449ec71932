/*
 * debuginfo.c -- whether an object's debug info is on this machine.
 *
 * The same places, in the same order, as libdwfl's standard search
 * (dwfl_standard_find_debuginfo with its default path), so that "found"
 * here means the reports will have names, lines and inline frames.
 */
#include "debuginfo.h"
#include "verify.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEBUG_ROOT "/usr/lib/debug"

static bool
has_dwarf(Elf *elf)
{
	size_t		shstrndx;
	Elf_Scn    *scn = NULL;
	GElf_Shdr	sh;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return false;
	while ((scn = elf_nextscn(elf, scn)) != NULL)
	{
		const char *name;

		if (gelf_getshdr(scn, &sh) == NULL)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && strcmp(name, ".debug_info") == 0 && sh.sh_type != SHT_NOBITS && sh.sh_size > 0)
			return true;
	}
	return false;
}

/*
 * Is the file at path the debug file w asks for (verify.h)?  The reason a
 * file there is refused goes to out, the first such.
 */
static bool
admitted(const char *path, const hp_want *w, hp_debuginfo *out)
{
	int			fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	const char *why;

	if (fd < 0)
		return false;
	why = fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ? "not a regular file" : hp_verify_file(NULL, fd, w);
	close(fd);
	if (why && out->refused == NULL)
	{
		out->refused = why;
		snprintf(out->refused_file, sizeof(out->refused_file), "%s", path);
	}
	return why == NULL;
}

/* The .gnu_debuglink file next to path, in .debug/ or under DEBUG_ROOT. */
static bool
find_link(Elf *elf, const char *path, const hp_want *id, hp_debuginfo *out)
{
	hp_want		w = *id;
	const char *link = dwelf_elf_gnu_debuglink(elf, &w.crc);
	const char *slash = strrchr(path, '/');
	int			dirlen = slash ? (int) (slash - path) : 0;
	static const char *const forms[] = {"%.*s/%s", "%.*s/.debug/%s", DEBUG_ROOT "%.*s/%s"};
	char		file[sizeof(out->file)];

	if (link == NULL || strchr(link, '/') != NULL)
		return false;
	/* without a build-id, the link's CRC is what tells the file */
	w.has_crc = w.idlen == 0;
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
	{
		int			n = snprintf(file, sizeof(file), forms[i], dirlen, path, link);

		/* the object itself is no debug file, even when the link names it */
		if (n > 0 && (size_t) n < sizeof(file) && strcmp(file, path) != 0 && admitted(file, &w, out))
		{
			memcpy(out->file, file, sizeof(file));
			return true;
		}
	}
	return false;
}

bool
hp_debuginfo_probe(const char *path, hp_debuginfo *out)
{
	int			fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf		   *elf;
	const void *bits = NULL;
	ssize_t		len;
	hp_want		w = {NULL, 0, false, 0};
	char		built[sizeof(out->file)];

	memset(out, 0, sizeof(*out));
	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf == NULL || elf_kind(elf) != ELF_K_ELF)
	{
		elf_end(elf);
		close(fd);
		return false;
	}
	len = dwelf_elf_gnu_build_id(elf, &bits);
	if (len > 0 && (size_t) len * 2 < sizeof(out->build_id))
	{
		for (ssize_t i = 0; i < len; i++)
			snprintf(out->build_id + 2 * i, 3, "%02x", ((const unsigned char *) bits)[i]);
		w = (hp_want) {bits, (size_t) len, false, 0};
	}
	built[0] = '\0';
	if (out->build_id[0])
		snprintf(built, sizeof(built), DEBUG_ROOT "/.build-id/%.2s/%s.debug",
				 out->build_id, out->build_id + 2);
	if (has_dwarf(elf))
	{
		out->found = true;
		snprintf(out->file, sizeof(out->file), "%s", path);
	}
	else if (built[0] && admitted(built, &w, out))
	{
		out->found = true;
		memcpy(out->file, built, sizeof(built));
	}
	else if (find_link(elf, path, &w, out))
		out->found = true;
	else
		memcpy(out->file, built, sizeof(built));
	if (out->found)
		out->refused = NULL;
	elf_end(elf);
	close(fd);
	return true;
}
