/*
 * pg_heapprof -- heap profiles of PostgreSQL servers' processes, from the shell.
 *
 * A libpq client of the heapprof extension: lists the processes it can
 * reach, switches their profiling, and writes any report of them (dot, svg,
 * flamegraph, collapsed, pprof, raw, text, top): of the heap they hold, of
 * their peak, of what they allocate during a window, or of a stored
 * profile (a statement capture, ...).  Leak mode takes a snapshot, waits,
 * and writes what grew.  Connection options and PG* environment variables
 * work as for psql.
 *
 * main only wires the stages (see pg_heapprof.h): the options, the fleet of
 * servers that gathers their answers, and the output.
 */
#include <stdlib.h>

#include "pg_heapprof.h"

int
main(int argc, char **argv)
{
	cli_opts	o;
	fleet		f;
	bool		failed;

	parse_options(argc, argv, &o);
	fleet_init(&f, &o);
	fleet_gather(&f);
	if (interrupted)
		fail("interrupted; nothing written");
	failed = print_problems(&f);
	failed |= !print_results(&f);
	fleet_free(&f);
	free_options(&o);
	return failed ? 1 : 0;
}
