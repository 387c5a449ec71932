/*
 * args.h -- the named arguments of the report functions, from one table.
 */
#ifndef HEAPPROF_ARGS_H
#define HEAPPROF_ARGS_H

#include "fmgr.h"

#include "process.h"
#include "engine/report.h"

/* What a report function's arguments ask for. */
typedef struct hpg_report_args
{
	hp_options	o;
	size_t		limit;			/* rows (n); SIZE_MAX: every row */
	const char *stored;			/* stored profile to report on, or NULL */
	const char *stored_arg;		/* its argument's name: stored (1.0 and 1.1: dump) */
	const char *base;			/* stored profile to subtract, or NULL */
	const char *title;			/* flame graph title, or NULL */
	hpg_proc	proc;			/* without stored: this process or pid */
	bool		peak;			/* the profile at the highest memory use */
	double		seconds;		/* > 0: allocations during a window of this many seconds */
} hpg_report_args;

/*
 * Read every argument of the calling report function by its SQL name,
 * check it and apply it; kind tells what NULL means for n.
 */
extern void hpg_report_args_get(FunctionCallInfo fcinfo, hp_report_kind kind, hpg_report_args *a);

#endif
