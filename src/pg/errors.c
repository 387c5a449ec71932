/*
 * errors.c -- the messages and hints for profiling that is not usable.
 *
 * heapprof_status() must work on any server: it is the diagnostic that tells
 * the DBA what to set.  Every other function raises one of these errors, with
 * SQLSTATE 55000 and the same hint.  The hint is lines to paste: into the
 * environment file of a Debian cluster (pg_ctlcluster reads KEY = 'value'
 * lines from it), otherwise a systemd unit's and a shell's form.  And the
 * hint PostgreSQL's own error for a missing grant lacks.
 */
#include "postgres.h"

#include <stdlib.h>

#include "catalog/pg_authid_d.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/varlena.h"

#include "compat.h"
#include "errors.h"

static emit_log_hook_type prev_emit_log_hook;

/*
 * PostgreSQL's own "permission denied for function heapprof_..." (42501)
 * comes before any heapprof code runs, so no heapprof function can give it a
 * hint: this hook on every error report gives it one, saying how a role gets
 * heapprof's functions (in the backends that have heapprof loaded: all of
 * them when it is preloaded).
 */
static void
hint_grant(ErrorData *edata)
{
	if (edata->sqlerrcode == ERRCODE_INSUFFICIENT_PRIVILEGE && edata->hint == NULL &&
		edata->message_id && strcmp(edata->message_id, "permission denied for function %s") == 0 &&
		edata->message && strstr(edata->message, "heapprof_") != NULL)
	{
		const char *role = GetConfigOption("session_authorization", true, false);
		const char *r = quote_literal_cstr(role ? role : "ROLE");

		edata->hint = psprintf("heapprof grants its functions by workflow, as a superuser (or the extension's owner) "
							   "runs them: SELECT heapprof_grant(%s) names the workflows, "
							   "SELECT heapprof_grant(%s, 'WORKFLOW') grants one.", r, r);
	}
	if (prev_emit_log_hook)
		prev_emit_log_hook(edata);
}

void
hpg_errors_init(void)
{
	prev_emit_log_hook = emit_log_hook;
	emit_log_hook = hint_grant;
}

/*
 * The Debian cluster (version and name) whose configuration is config_file,
 * /etc/postgresql/<version>/<cluster>/postgresql.conf; false for any other.
 */
static bool
debian_cluster(char **version, char **cluster)
{
	const char *conf = GetConfigOption("config_file", true, false);
	const char *prefix = "/etc/postgresql/";
	char	   *v,
			   *c,
			   *slash;

	if (conf == NULL || strncmp(conf, prefix, strlen(prefix)) != 0)
		return false;
	v = pstrdup(conf + strlen(prefix));
	if ((slash = strchr(v, '/')) == NULL)
		return false;
	*slash = '\0';
	c = slash + 1;
	if ((slash = strchr(c, '/')) == NULL || strcmp(slash, "/postgresql.conf") != 0 ||
		*v == '\0' || *c == '\0')
		return false;
	*slash = '\0';
	*version = v;
	*cluster = c;
	return true;
}

/*
 * An ALTER SYSTEM line that adds heapprof to shared_preload_libraries and
 * keeps what is there, or NULL when heapprof is already listed (or the list
 * cannot be read).  Each library is its own literal: one literal holding
 * "a, b" would name a single library "a, b".
 */
static char *
preload_line(void)
{
	const char *cur = GetConfigOption("shared_preload_libraries", true, false);
	char	   *copy = pstrdup(cur ? cur : "");
	List	   *libs;
	ListCell   *lc;
	StringInfoData s;

	if (!SplitDirectoriesString(copy, ',', &libs))
		return NULL;
	initStringInfo(&s);
	appendStringInfoString(&s, "ALTER SYSTEM SET shared_preload_libraries = ");
	foreach(lc, libs)
	{
		const char *lib = lfirst(lc);

		if (strcmp(lib, "heapprof") == 0)
			return NULL;
		appendStringInfo(&s, "%s, ", quote_literal_cstr(lib));
	}
	appendStringInfoString(&s, "'heapprof';");
	return s.data;
}

/* Why profiling is not usable, as the hint's first line. */
static const char *
setup_reason(hpj_state state)
{
	switch (state)
	{
		case HPJ_USABLE:
			break;
		case HPJ_NOT_LOADED:
			return "Preload jemalloc with profiling compiled in and enabled.";
		case HPJ_NOT_ALLOCATOR:
			return "jemalloc must replace malloc for the whole server: loading it later (dlopen, shared_preload_libraries) is not enough.";
		case HPJ_NO_PROF_BUILD:
			return "Preload a jemalloc built with --enable-prof (Debian's libjemalloc2 is).";
		case HPJ_PROF_OFF:
			return "MALLOC_CONF needs prof:true (other jemalloc options may follow it).";
	}
	return "";
}

const char *
hpg_setup_hint(hpj_state state)
{
	StringInfoData s;
	char	   *version,
			   *cluster,
			   *preload;

	if (state == HPJ_USABLE)
		return NULL;
	initStringInfo(&s);
	appendStringInfo(&s, "%s\n", setup_reason(state));
	/* the configuration's paths and preloaded libraries are privileged */
	if (!has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_SETTINGS))
	{
		appendStringInfoString(&s, "heapprof_status() run by a superuser gives the lines to set on this server.");
		return s.data;
	}
	if ((preload = preload_line()) != NULL)
		appendStringInfo(&s, "For pid => N, exit dumps and heapprof_backends(), run as a superuser:\n%s\n",
						 preload);
	if (debian_cluster(&version, &cluster))
		/* later lines win in that file, so appending is enough */
		appendStringInfo(&s,
						 "Append to /etc/postgresql/%s/%s/environment:\n"
						 "LD_PRELOAD = '%s'\n"
						 "MALLOC_CONF = '%s'\n"
						 "Then restart the cluster:\n"
						 "pg_ctlcluster %s %s restart",
						 version, cluster, HEAPPROF_JEMALLOC_SO, HEAPPROF_MALLOC_CONF,
						 version, cluster);
	else
		appendStringInfo(&s,
						 "In a systemd unit that starts the server, under [Service]:\n"
						 "Environment=LD_PRELOAD=%s\n"
						 "Environment=MALLOC_CONF=%s\n"
						 "then systemctl daemon-reload and restart the unit; or from a shell:\n"
						 "LD_PRELOAD=%s MALLOC_CONF=%s pg_ctl restart -D \"$PGDATA\"",
						 HEAPPROF_JEMALLOC_SO, HEAPPROF_MALLOC_CONF,
						 HEAPPROF_JEMALLOC_SO, HEAPPROF_MALLOC_CONF);
	return s.data;
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
	/* the server's environment is a setting: shown as its hint shows paths */
	conf = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_SETTINGS) ? getenv("MALLOC_CONF") : NULL;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("%s", hpg_state_message(state)),
			 state == HPJ_PROF_OFF && conf ?
			 errdetail("MALLOC_CONF is \"%s\".", conf) : 0,
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

/*
 * A file heapprof or jemalloc could not write under base/pgsql_tmp, in this
 * process or in process pid (rc is then that process's errno): the SQLSTATE
 * PostgreSQL gives its own file errors (ENOSPC: 53100 disk_full, EIO: 58030).
 * EFAULT is prof.dump's answer when it gave no cause (jemalloc.c).
 */
void
hpg_check_write(int rc, const char *what, const char *path, int pid)
{
	const char *hint = rc == ENOSPC || rc == EDQUOT ?
		"Free space in the file system of the data directory's base/" PG_TEMP_FILES_DIR " folder: heapprof writes profiles there before reading them." :
		"Check the data directory's base/" PG_TEMP_FILES_DIR " folder (permissions, file system) and the server log.";

	if (rc == 0)
		return;
	if (rc == EFAULT)
		ereport(ERROR,
				(errcode(ERRCODE_IO_ERROR),
				 pid ? errmsg("process %d could not write %s \"%s\"", pid, what, path) :
				 errmsg("could not write %s \"%s\"", what, path),
				 errdetail("jemalloc gives no cause; it logs one line to the server's standard error."),
				 errhint("%s", hint)));
	errno = rc;
	ereport(ERROR,
			(errcode_for_file_access(),
			 pid ? errmsg("process %d could not write %s \"%s\": %m", pid, what, path) :
			 errmsg("could not write %s \"%s\": %m", what, path),
			 errhint("%s", hint)));
}
