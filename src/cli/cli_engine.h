/*
 * cli_engine.h -- the engine as the command-line tools drive it, shared by
 * heapprof-report and pg_heapprof --client-symbols so that both name and
 * render a dump the same way: malloc for memory, POSIX extended regular
 * expressions for --focus / --ignore, an elfutils symbolizer that asks
 * debuginfod (DEBUGINFOD_URLS) for what this machine lacks, and an error
 * that ends the program with a message naming what was read.
 */
#ifndef HEAPPROF_CLI_ENGINE_H
#define HEAPPROF_CLI_ENGINE_H

#include <stdbool.h>

#include "engine/report.h"
#include "fetch.h"

typedef struct hp_cli_engine
{
	hp_env		env;
	hp_fetch   *fetch;			/* NULL: no DEBUGINFOD_URLS */
	hp_symbolizer *sym;
	const char *progname;
	const char *prefix;			/* before the subject of an error: "" or "error: " */
	const char *subject;		/* what is analysed, named in errors */
} hp_cli_engine;

/*
 * Start the symbolizer (and debuginfod's client, which must come first);
 * false with a message printed when elfutils cannot be started.
 */
extern bool hp_cli_engine_open(hp_cli_engine *e, const char *progname, const char *prefix);
extern void hp_cli_engine_close(hp_cli_engine *e);

/*
 * s as a terminal may show it: sink.h's terminal sink (lines: HP_SINK_LINES,
 * newlines and tabs kept), the one way text from a profile or a server
 * reaches standard output or error.  The copy lives for the next
 * HP_CLI_SHOWN calls (of the main thread: the only one that prints).
 */
#define HP_CLI_SHOWN 16
extern const char *hp_cli_shown(const char *s, bool lines);

/* data[0, len) of several lines onto a terminal (standard output) through its sink; false if it failed */
extern bool hp_cli_put_terminal(const char *data, size_t len);

/* pattern compiled for hp_options.focus / ignore, or NULL with regerror's message in err */
extern void *hp_cli_regex(const char *pattern, char *err, size_t errlen);

#endif
