/*
 * errors.c -- the messages and hints for profiling that is not usable.
 *
 * heapprof_status() must work on any server: it is the diagnostic that tells
 * the DBA what to set.  Every other function raises one of these errors, with
 * SQLSTATE 55000 and a hint naming LD_PRELOAD and MALLOC_CONF.
 */
#include "postgres.h"

#include <stdlib.h>

#include "errors.h"

#define SETUP_HINT_TAIL \
	"in the postmaster's environment and restart the server (on Debian: /etc/postgresql/" PG_MAJORVERSION "/<cluster>/environment)."

const char *
hpg_setup_hint(hpj_state state)
{
	switch (state)
	{
		case HPJ_USABLE:
			return NULL;
		case HPJ_NOT_LOADED:
			return "Set LD_PRELOAD=" HEAPPROF_JEMALLOC_SO " and MALLOC_CONF="
				HEAPPROF_MALLOC_CONF " " SETUP_HINT_TAIL;
		case HPJ_NOT_ALLOCATOR:
			return "jemalloc must replace malloc for the whole server: set LD_PRELOAD="
				HEAPPROF_JEMALLOC_SO " and MALLOC_CONF=" HEAPPROF_MALLOC_CONF " "
				SETUP_HINT_TAIL " Loading it later (dlopen, shared_preload_libraries) is not enough.";
		case HPJ_NO_PROF_BUILD:
			return "Use a jemalloc built with --enable-prof (Debian's libjemalloc2 is): set LD_PRELOAD="
				HEAPPROF_JEMALLOC_SO " and MALLOC_CONF=" HEAPPROF_MALLOC_CONF " " SETUP_HINT_TAIL;
		case HPJ_PROF_OFF:
			return "Set MALLOC_CONF=" HEAPPROF_MALLOC_CONF " (prof:true is required; other options may follow) "
				SETUP_HINT_TAIL;
	}
	return NULL;
}

const char *
hpg_state_message(hpj_state state)
{
	switch (state)
	{
		case HPJ_USABLE:
			break;
		case HPJ_NOT_LOADED:
			return "jemalloc is not loaded in this server process";
		case HPJ_NOT_ALLOCATOR:
			return "jemalloc is loaded but is not this server process's allocator";
		case HPJ_NO_PROF_BUILD:
			return "the loaded jemalloc was built without heap profiling";
		case HPJ_PROF_OFF:
			return "jemalloc heap profiling was not enabled when the server started";
	}
	return "jemalloc heap profiling is usable";
}

void
hpg_require_profiling(void)
{
	hpj_state	state = hpj_probe();
	const char *conf;

	if (state == HPJ_USABLE)
		return;
	conf = getenv("MALLOC_CONF");
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("%s", hpg_state_message(state)),
			 state == HPJ_PROF_OFF ?
			 errdetail("MALLOC_CONF is \"%s\".", conf ? conf : "") : 0,
			 errhint("%s", hpg_setup_hint(state))));
}

void
hpg_check_mallctl(int rc, const char *what)
{
	if (rc == 0)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_SYSTEM_ERROR),
			 errmsg("jemalloc could not %s: %s", what, strerror(rc)),
			 errhint("Check heapprof_status() and the server log; the server's MALLOC_CONF may restrict profiling.")));
}
