/*
 * client_report.h -- pg_heapprof's reports symbolized on the client: the
 * server sends its raw dump (with the build-ids of its objects) and
 * heapprof-report names it here, from this machine's files and debuginfod.
 */
#ifndef HEAPPROF_CLIENT_REPORT_H
#define HEAPPROF_CLIENT_REPORT_H

#include <stddef.h>

/*
 * Write the report of raw (heapprof_dump_raw's text) in pg_heapprof's
 * format to path (NULL or "-": standard output).  opts: fold, objects,
 * focus, ignore as pg_heapprof passes them ("true"/"false", or NULL).
 * Returns 0, or -1 after printing why to stderr.
 */
extern int	hp_client_report(const char *progname, const char *raw, size_t len,
							 const char *format, const char *const opts[4], const char *path);

#endif
