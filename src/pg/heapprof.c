/*
 * heapprof.c -- module entry point.
 *
 * heapprof puts jemalloc's heap profiler behind SQL.  This file only holds
 * what PostgreSQL needs to load the module, its settings and its hooks; the
 * SQL functions live with their purpose: control.c (status and switches),
 * reports.c (profiles as rows), store.c (snapshots and exit dumps).
 */
#include "postgres.h"

#include <limits.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "heapprof_pg.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

/*
 * libpq/auth.h declares this hook, but includes GSSAPI headers that a PGXS
 * build need not have; the declaration is repeated here instead.
 */
struct Port;
typedef void (*client_auth_hook) (struct Port *port, int status);
extern PGDLLIMPORT client_auth_hook ClientAuthentication_hook;

static bool enable_at_start = false;
static client_auth_hook prev_client_auth_hook;

/*
 * Every client backend, once authenticated: arrange its exit dump and, with
 * heapprof.enable_at_start, switch its profiling on.
 */
static void
client_started(struct Port *port, int status)
{
	if (prev_client_auth_hook)
		prev_client_auth_hook(port, status);
	if (status != STATUS_OK)
		return;
	hp_store_register_exit();
	/* publish only what changed: most backends start with nothing to tell */
	if (enable_at_start && hpj_probe() == HPJ_USABLE && hpj_set_active(true) == 0)
		hp_publish_state();
}

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
	DefineCustomIntVariable("heapprof.dump_on_exit_threshold",
							"A backend exiting with more than this allocated leaves its heap profile in $PGDATA/heapprof/dumps.",
							"-1 disables exit dumps. Needs shared_preload_libraries = 'heapprof'.",
							&hp_dump_on_exit_threshold_kb,
							-1, -1, MAX_KILOBYTES,
							PGC_SUSET, GUC_UNIT_KB,
							NULL, NULL, NULL);
	DefineCustomIntVariable("heapprof.max_dumps",
							"Most exit dumps kept; the oldest are removed first.",
							NULL,
							&hp_max_dumps,
							20, 0, 1000000,
							PGC_SUSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("heapprof.max_dump_bytes",
							"Most disk space exit dumps may take; the oldest are removed first.",
							NULL,
							&hp_max_dump_bytes_kb,
							100 * 1024, 0, MAX_KILOBYTES,
							PGC_SUSET, GUC_UNIT_KB,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("heapprof.enable_at_start",
							 "Client backends start with heap profiling active.",
							 "For exit dumps of every session. Needs shared_preload_libraries = 'heapprof'.",
							 &enable_at_start,
							 false,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("heapprof.profile_self",
							 "Sample heapprof's own allocations too.",
							 "Off, heapprof keeps its own work out of the profiles it reports; on, it shows it (to check heapprof itself).",
							 &hp_profile_self,
							 false,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("heapprof.request_timeout",
							"How long a request to another process (pid => N) waits for its answer.",
							NULL,
							&hp_request_timeout_ms,
							5000, 1, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	MarkGUCPrefixReserved("heapprof");

	if (process_shared_preload_libraries_in_progress)
	{
		/* in the postmaster: shared memory, hooks every process inherits */
		hp_remote_init();
		prev_client_auth_hook = ClientAuthentication_hook;
		ClientAuthentication_hook = client_started;
	}
	else
		hp_store_register_exit();	/* loaded by this backend only */
}
