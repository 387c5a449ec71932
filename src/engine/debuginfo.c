/*
 * debuginfo.c -- whether an object's debug info is on this machine.
 *
 * The same places, in the same order, as libdwfl's standard search
 * (dwfl_standard_find_debuginfo with its default path), so that "found"
 * here means the reports will have names, lines and inline frames.
 */
#include "debuginfo.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <string.h>
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

static bool
readable(const char *path)
{
	return access(path, R_OK) == 0;
}

/* The .gnu_debuglink file next to path, in .debug/ or under DEBUG_ROOT. */
static bool
find_link(Elf *elf, const char *path, char *out, size_t size)
{
	GElf_Word	crc;
	const char *link = dwelf_elf_gnu_debuglink(elf, &crc);
	const char *slash = strrchr(path, '/');
	int			dirlen = slash ? (int) (slash - path) : 0;
	static const char *const forms[] = {"%.*s/%s", "%.*s/.debug/%s", DEBUG_ROOT "%.*s/%s"};

	if (link == NULL || strchr(link, '/') != NULL)
		return false;
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
	{
		int			n = snprintf(out, size, forms[i], dirlen, path, link);

		/* the object itself is no debug file, even when the link names it */
		if (n > 0 && (size_t) n < size && strcmp(out, path) != 0 && readable(out))
			return true;
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
		for (ssize_t i = 0; i < len; i++)
			snprintf(out->build_id + 2 * i, 3, "%02x", ((const unsigned char *) bits)[i]);
	built[0] = '\0';
	if (out->build_id[0])
		snprintf(built, sizeof(built), DEBUG_ROOT "/.build-id/%.2s/%s.debug",
				 out->build_id, out->build_id + 2);
	if (has_dwarf(elf))
	{
		out->found = true;
		snprintf(out->file, sizeof(out->file), "%s", path);
	}
	else if (built[0] && readable(built))
	{
		out->found = true;
		memcpy(out->file, built, sizeof(built));
	}
	else if (find_link(elf, path, out->file, sizeof(out->file)))
		out->found = true;
	else
		memcpy(out->file, built, sizeof(built));
	elf_end(elf);
	close(fd);
	return true;
}
