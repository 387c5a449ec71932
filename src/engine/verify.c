/*
 * verify.c -- is a file from outside the build asked for (see verify.h)?
 */
#include "verify.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <gelf.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define CRC_CHUNK 32768

bool
hp_verify_id(const uint8_t *have, size_t havelen, const uint8_t *want, size_t wantlen)
{
	return havelen > 0 && havelen == wantlen && memcmp(have, want, wantlen) == 0;
}

/* The CRC-32 of the whole file at fd (gdb's and binutils' debuglink CRC is zlib's). */
static bool
file_crc(hp_env *env, int fd, uint32_t *crc)
{
	unsigned char buf[CRC_CHUNK];
	uLong		c = crc32(0L, Z_NULL, 0);
	off_t		off = 0;

	for (;;)
	{
		ssize_t		n = pread(fd, buf, sizeof(buf), off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return false;
		if (n == 0)
			break;
		c = crc32(c, buf, (uInt) n);
		off += n;
		if (env)
			hp_work(env, 1);
	}
	*crc = (uint32_t) c;
	return true;
}

const char *
hp_verify_file(hp_env *env, int fd, const hp_want *w)
{
	Elf		   *elf;
	const void *bits = NULL;
	ssize_t		len;
	uint32_t	crc;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf == NULL || elf_kind(elf) != ELF_K_ELF)
	{
		elf_end(elf);
		return "not an ELF file";
	}
	len = dwelf_elf_gnu_build_id(elf, &bits);
	if (w->idlen > 0)
	{
		bool		same = len > 0 && hp_verify_id(bits, (size_t) len, w->id, w->idlen);

		elf_end(elf);
		return same ? NULL : len > 0 ? "build-id mismatch" : "no build-id";
	}
	elf_end(elf);
	if (!w->has_crc)
		return "nothing to check it by";
	if (!file_crc(env, fd, &crc))
		return "unreadable";
	return crc == w->crc ? NULL : "CRC mismatch";
}
