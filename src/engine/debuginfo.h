/*
 * debuginfo.h -- does this machine hold an object's debug info, and where
 * would it be?  For heapprof_objects() and heapprof_status(): what a DBA
 * must install for real names instead of "postgres+0x..." labels.
 */
#ifndef HEAPPROF_DEBUGINFO_H
#define HEAPPROF_DEBUGINFO_H

#include <stdbool.h>
#include <stddef.h>

typedef struct hp_debuginfo
{
	char		build_id[129];	/* hex, "" when the file has none */
	bool		found;			/* DWARF in the file or in a separate debug file */
	char		file[4096];		/* the file holding it; when not found, the
								 * build-id path looked at ("" without a build-id) */
	const char *refused;		/* why a file there was refused (another build), or NULL */
	char		refused_file[4096];
} hp_debuginfo;

/*
 * Look where libdwfl looks, locally only: the file's own .debug_info,
 * /usr/lib/debug/.build-id/xx/rest.debug, and its .gnu_debuglink name next
 * to it, in .debug/ and under /usr/lib/debug.  A file there of another
 * build (its build-id, or without one the link's CRC) is refused: not
 * found, and said in refused.  False when the file cannot be read as ELF.
 */
extern bool hp_debuginfo_probe(const char *path, hp_debuginfo *out);

#endif
