/*
 * verify.h -- the one check of every file from outside the analysed object.
 *
 * A separate debug file (found by build-id, by .gnu_debuglink, in a debug
 * directory, or fetched from debuginfod), a dwz file, a fetched executable,
 * a shared symbol index: each names code only when it is the build asked
 * for.  A file of another build would give plausible, wrong names (another
 * build's functions at the genuine addresses), so a mismatch is refused,
 * never trusted nor kept: the callers record why and remove what a cache
 * holds of it.
 */
#ifndef HEAPPROF_VERIFY_H
#define HEAPPROF_VERIFY_H

#include "env.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct hp_want
{
	const uint8_t *id;			/* the GNU build-id asked for; idlen 0: none */
	size_t		idlen;
	bool		has_crc;		/* without a build-id: .gnu_debuglink's CRC-32 */
	uint32_t	crc;			/* of the whole file */
} hp_want;

/*
 * NULL when the ELF file open at fd is the one w asks for: its
 * NT_GNU_BUILD_ID note is w's build-id or, when w has none, the file's
 * CRC-32 is w's.  Else why not: "build-id mismatch", "no build-id", "CRC
 * mismatch", "not an ELF file", "unreadable", "nothing to check it by".
 * fd's offset is left alone.  env (may be NULL: a libdwfl callback must not
 * be left by a longjmp) counts the reading of a whole file for its CRC.
 */
extern const char *hp_verify_file(hp_env *env, int fd, const hp_want *w);

/* Is the build-id have[0..havelen) the one asked for, want[0..wantlen)? */
extern bool hp_verify_id(const uint8_t *have, size_t havelen,
						 const uint8_t *want, size_t wantlen);

#endif
