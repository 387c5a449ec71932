/*
 * snapshots.c -- heapprof_snapshot(), heapprof_snapshots(), heapprof_drop_snapshot().
 *
 * A snapshot keeps a process's profile under a name: for the session (in
 * TopMemoryContext) and, persisted, as $PGDATA/heapprof/snapshots/NAME.heap
 * so other sessions can compare with it.  Names are one namespace with exit
 * dumps (reports read either by name), so a snapshot may not take the name
 * of an exit dump, and a name found in both places is refused rather than
 * guessed.  heapprof.max_snapshots and heapprof.max_snapshot_bytes bound
 * what roles other than superusers may keep, on disk (persisted snapshots of
 * all sessions) and in one session's memory alike; a snapshot beyond them is
 * refused before anything is written.
 */
#include "postgres.h"

#include <sys/stat.h>
#include <unistd.h>

#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "analysis.h"
#include "compat.h"
#include "files.h"
#include "process.h"
#include "snapshots.h"
#include "store.h"

PG_FUNCTION_INFO_V1(heapprof_snapshot);
PG_FUNCTION_INFO_V1(heapprof_snapshots);
PG_FUNCTION_INFO_V1(heapprof_drop_snapshot);

/* This session's snapshots, in TopMemoryContext. */
typedef struct snapshot
{
	char		name[HPG_MAX_NAME + 1];
	char	   *text;
	int			len;
	struct snapshot *next;
} snapshot;

static snapshot *snapshots;

static int	max_snapshots = 100;
static int	max_snapshot_bytes_kb = 100 * 1024;

void
hpg_snapshots_init(void)
{
	DefineCustomIntVariable("heapprof.max_snapshots",
							"Most persisted snapshots, and most snapshots one session keeps, for roles other than superusers.",
							NULL,
							&max_snapshots,
							100, 0, 1000000,
							PGC_SUSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("heapprof.max_snapshot_bytes",
							"Most disk space persisted snapshots take, and most memory one session's snapshots take, for roles other than superusers.",
							NULL,
							&max_snapshot_bytes_kb,
							100 * 1024, 0, MAX_KILOBYTES,
							PGC_SUSET, GUC_UNIT_KB,
							NULL, NULL, NULL);
}

/* ERROR if count snapshots of bytes, this one of len included, go beyond the limits */
static void
check_limits(int64 count, int64 bytes, int len, const char *where)
{
	if (superuser() || (count <= max_snapshots && bytes <= (int64) max_snapshot_bytes_kb * 1024))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
			 errmsg("too many heap profile snapshots"),
			 errdetail("%s " INT64_FORMAT " snapshot(s) of " INT64_FORMAT " bytes; this one has %d bytes; heapprof.max_snapshots is %d, heapprof.max_snapshot_bytes %d kB.",
					   where, count - 1, bytes - len, len, max_snapshots, max_snapshot_bytes_kb),
			 errhint("Drop snapshots with heapprof_drop_snapshot(), or ask a superuser to raise the limits.")));
}

/* hpg_store_put's limit: what the folder holds, this snapshot's draft included */
static void
disk_limit(int64 count, int64 bytes, void *arg)
{
	check_limits(count, bytes, *(int *) arg, "The persisted snapshots hold");
}

static snapshot *
find_session(const char *name)
{
	for (snapshot *s = snapshots; s; s = s->next)
		if (strcmp(s->name, name) == 0)
			return s;
	return NULL;
}

void
hpg_profile_by_name(const char *name, StringInfo out)
{
	snapshot   *s;

	hpg_check_name(name);
	if ((s = find_session(name)) != NULL)
		appendBinaryStringInfo(out, s->text, s->len);
	else if (!hpg_store_read(name, out))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("heap profile \"%s\" does not exist", name),
				 errhint("heapprof_snapshots(), heapprof_dumps() and heapprof_captures() list the profiles you can read; a session snapshot lives only in the session that took it (persist => true keeps it for others).")));
	/* a session's own snapshots too: SET ROLE may have changed who asks */
	if (!hpg_can_read(out->data, out->len))
		hpg_deny(name, "read");
}

/* heapprof_snapshot(name, persist, pid): returns the profile's total bytes */
Datum
heapprof_snapshot(PG_FUNCTION_ARGS)
{
	char	   *name;
	bool		persist;
	StringInfoData prof;
	snapshot   *s;
	int64		bytes;
	int64		stacks;
	int64		held = 0;
	int64		count = 0;
	hpg_proc	proc;
	MemoryContext cxt;
	MemoryContext old;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("name and persist must not be NULL"),
				 errhint("Allowed values: a name, and true or false.")));
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	persist = PG_GETARG_BOOL(1);
	proc = hpg_proc_of(PG_ARGISNULL(2), PG_GETARG_INT32(2));
	hpg_check_name(name);
	/* early answers; the name is taken atomically when the file is written */
	if (find_session(name) || (persist && hpg_store_exists(HPG_SNAPSHOT_DIR, name)))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("heap profile snapshot \"%s\" already exists", name),
				 errhint("Drop it with heapprof_drop_snapshot('%s') or choose another name.", name)));
	if (hpg_store_exists(HPG_EXIT_DIR, name) || hpg_store_exists(HPG_CAPTURE_DIR, name))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("heap profile \"%s\" is the name of a stored profile", name),
				 errhint("Choose another name: reports read snapshots, exit dumps and captures by name.")));

	/* the snapshot's own memory must not show up in later profiles */
	cxt = AllocSetContextCreate(CurrentMemoryContext, "heapprof snapshot", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	hpg_unsampled_while_context();
	initStringInfo(&prof);
	hpg_append_meta(&prof, proc.pid, GetUserId(), hpg_proc_type(proc));
	hpg_proc_dump(proc, &prof, true);
	for (snapshot *t = snapshots; t; t = t->next)
	{
		count++;
		held += t->len;
	}
	check_limits(count + 1, held + prof.len, prof.len, "This session holds");
	if (persist)
		hpg_store_put(HPG_SNAPSHOT_DIR, name, prof.data, prof.len, disk_limit, &prof.len);
	s = MemoryContextAllocZero(TopMemoryContext, sizeof(snapshot));
	strlcpy(s->name, name, sizeof(s->name));
	s->text = MemoryContextAlloc(TopMemoryContext, prof.len + 1);
	memcpy(s->text, prof.data, prof.len + 1);
	s->len = prof.len;
	s->next = snapshots;
	snapshots = s;
	hpg_summarize(prof.data, prof.len, &bytes, &stacks);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	PG_RETURN_INT64(bytes);
}

static bool
in_session(const char *name)
{
	return find_session(name) != NULL;
}

/* heapprof_snapshots(): name, pid, owner, taken_at, total_bytes, samples, persisted */
Datum
heapprof_snapshots(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	for (snapshot *s = snapshots; s; s = s->next)
		if (hpg_can_read(s->text, s->len))
			hpg_store_put_row(rsinfo, s->name, s->text, s->len,
							  hpg_store_exists(HPG_SNAPSHOT_DIR, s->name), 0, false);
	hpg_store_list(rsinfo, HPG_SNAPSHOT_DIR, false, in_session);
	return (Datum) 0;
}

/* heapprof_drop_snapshot(name): forget it in this session and remove its file */
Datum
heapprof_drop_snapshot(PG_FUNCTION_ARGS)
{
	char	   *name;
	bool		found;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("name must not be NULL"),
				 errhint("heapprof_snapshots() lists the snapshots you can drop.")));
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	hpg_check_name(name);
	found = hpg_store_drop(HPG_SNAPSHOT_DIR, name);
	for (snapshot **p = &snapshots; *p; p = &(*p)->next)
		if (strcmp((*p)->name, name) == 0)
		{
			snapshot   *s = *p;

			if (!found && !hpg_can_read(s->text, s->len))
				hpg_deny(name, "drop");
			*p = s->next;
			pfree(s->text);
			pfree(s);
			found = true;
			break;
		}
	if (!found)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("heap profile snapshot \"%s\" does not exist", name),
				 errhint("heapprof_snapshots() lists the snapshots you can drop.")));
	PG_RETURN_VOID();
}
