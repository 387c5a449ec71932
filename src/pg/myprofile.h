/*
 * myprofile.h -- this process's heap profile, taken from jemalloc.
 */
#ifndef HEAPPROF_MYPROFILE_H
#define HEAPPROF_MYPROFILE_H

#include "lib/stringinfo.h"

#include "files.h"

/* A fresh path in base/pgsql_tmp for a dump (kind: "self", "remote"); ERROR if the folder cannot be made. */
extern void hpg_dump_path(char *path, size_t size, const char *kind);

/*
 * Append this process's live sampled allocations to out, after the identity
 * lines when asked; check (if not NULL) judges the dump before it is read.
 */
extern void hpg_my_profile(StringInfo out, bool identity, hpg_read_check check, void *arg);

/*
 * Plain C, for a target serving a request and for process exit: this
 * process's identity lines into buf (see engine/format.h), and the same
 * beside a dump file, as DUMP.ids (0 or an errno).  coverage: with the
 * line saying what the live heap covers (not for recent allocations).
 */
extern size_t hpg_identity_text(char *buf, size_t size, bool coverage);
extern int	hpg_write_identity_file(const char *dump_path, bool coverage);
/* /proc/self/maps as a MAPPED_LIBRARIES section, in DUMP.maps (0 or an errno). */
extern int	hpg_write_maps_file(const char *dump_path);
/* Remove DUMP and its .ids and .maps files. */
extern void hpg_remove_dump_files(const char *dump_path);

#endif
