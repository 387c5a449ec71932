/*
 * fetch.h -- executables and debug info by build-id from debuginfod, for
 * the command-line tools: symbolize where the debug info is, not where the
 * server is.  The server never links this.
 */
#ifndef HEAPPROF_FETCH_H
#define HEAPPROF_FETCH_H

#include "engine/symbolize.h"

typedef struct hp_fetch hp_fetch;

/*
 * A client for the servers in DEBUGINFOD_URLS, or NULL when it is unset
 * or empty.  Call it before hp_symbolizer_new, which clears the variable.
 */
extern hp_fetch *hp_fetch_open(const char *progname);
/* Let s ask f for what this machine lacks. */
extern void hp_fetch_attach(hp_fetch *f, hp_symbolizer *s);
/* Say what was fetched, and free f (NULL is fine). */
extern void hp_fetch_close(hp_fetch *f);

#endif
