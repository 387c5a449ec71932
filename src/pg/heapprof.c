/*
 * heapprof.c -- module entry point.
 *
 * heapprof puts jemalloc's heap profiler behind SQL.  This file only holds
 * what PostgreSQL needs to load the module and what happens when a client
 * backend starts; each part defines its own settings (analysis.c,
 * exitdump.c, labels.c, request.c, peak.c, recording.c, statements.c) and
 * the SQL functions live with their purpose: control.c (status and switches),
 * reports.c (profiles as rows and values), snapshots.c, exitdump.c and
 * statements.c (profiles kept under a name), stored.c (any of them by name),
 * objects.c (debug info of the loaded objects).
 *
 * The layers, each using only those below it, are drawn once, in
 * docs/architecture.md (tests/t_layers.sh checks them on the built objects).
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "analysis.h"
#include "collector.h"
#include "errors.h"
#include "exitdump.h"
#include "fold.h"
#include "jemalloc.h"
#include "labels.h"
#include "peak.h"
#include "recording.h"
#include "request.h"
#include "shmem.h"
#include "snapshots.h"
#include "statements.h"
#include "store.h"
#include "symindex.h"
#include "target.h"
#include "values.h"

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
	hpg_peak_register();		/* before the exit dump: that may keep the peak */
	hpg_exitdump_register();
	/* publish only what changed: most backends start with nothing to tell */
	if (enable_at_start && hpj_probe() == HPJ_USABLE && hpj_set_active(true) == 0)
	{
		hpg_labels_follow(true);
		hpg_publish_state();
	}
}

void
_PG_init(void)
{
	hpg_errors_init();
	hpg_analysis_init();
	hpg_symindex_init();
	hpg_exitdump_init();
	hpg_request_init();
	hpg_snapshots_init();
	hpg_recording_init();
	hpg_statements_init();
	hpg_peak_init();
	hpg_labels_init();
	hpg_store_gucs();
	hpg_collector_init();
	DefineCustomBoolVariable("heapprof.enable_at_start",
							 "Client backends start with heap profiling active.",
							 "For exit dumps of every session. Needs shared_preload_libraries = 'heapprof'.",
							 &enable_at_start,
							 false,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);
	MarkGUCPrefixReserved("heapprof");
	hpg_fold_init();
	/* started with prof_active:true: the postmaster has sampled since it started */
	hpj_active_since(HPG_UNIX_OF_TIMESTAMP(PgStartTime ? PgStartTime : GetCurrentTimestamp()));

	if (process_shared_preload_libraries_in_progress)
	{
		hpj_status	st;

		/*
		 * in the postmaster: shared memory and hooks every process inherits;
		 * first the labels' owners if it samples already (prof_active:true),
		 * so that a context's method table copied later copies the wrappers
		 */
		hpj_get_status(&st);
		if (hpj_probe() == HPJ_USABLE && st.active)
			hpg_labels_follow(true);
		hpg_shmem_init();
		hpg_target_init();
		hpg_store_init();
		prev_client_auth_hook = ClientAuthentication_hook;
		ClientAuthentication_hook = client_started;
	}
	else
		hpg_exitdump_register();	/* loaded by this backend only */
}
