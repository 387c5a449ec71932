/*
 * heapprof.c -- module entry point.
 *
 * heapprof puts jemalloc's heap profiler behind SQL.  This file only holds
 * what PostgreSQL needs to load the module and its settings; the SQL
 * functions live with their purpose: control.c (status and switches),
 * reports.c (profiles as rows).
 */
#include "postgres.h"

#include <limits.h>

#include "fmgr.h"
#include "utils/guc.h"

#include "heapprof_pg.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	DefineCustomIntVariable("heapprof.symbol_cache_limit",
							"Most memory a backend keeps for symbolizing heap profiles.",
							"Symbol tables and debug info stay cached between reports; "
							"above this they are dropped after the report that exceeded it.",
							&hp_symbol_cache_limit_kb,
							65536, 0, MAX_KILOBYTES,
							PGC_SUSET, GUC_UNIT_KB,
							NULL, NULL, NULL);
	MarkGUCPrefixReserved("heapprof");
}
