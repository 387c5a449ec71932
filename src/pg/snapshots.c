/*
 * snapshots.c -- heapprof_snapshot(), heapprof_snapshots(), heapprof_drop_snapshot().
 *
 * A snapshot keeps a process's profile under a name: for the session (in
 * TopMemoryContext) and, persisted, as $PGDATA/heapprof/snapshots/NAME.heap
 * so other sessions can compare with it.  Names are one namespace with exit
 * dumps and captures (reports read any of them by name, stored.c), so a
 * snapshot may not take the name of another stored profile.  heapprof.max_snapshots and heapprof.max_snapshot_bytes bound
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
#include "stored.h"

PG_FUNCTION_INFO_V1(heapprof_snapshot);
PG_FUNCTION_INFO_V1(heapprof_snapshots);
PG_FUNCTION_INFO_V1(heapprof_drop_snapshot);

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

/*
 * hpg_proc_dump's check: this session's snapshots and this one (what prof
 * holds already -- its meta and identity lines -- and the dump's size)
 * within the limits, before the dump is read
 */
static void
session_limit(const char *head, int len, int64 size, void *prof)
{
	int64		count;
	int64		held;
	int64		mine = (int64) ((StringInfo) prof)->len + size;

	hpg_stored_session_usage(&count, &held);
	check_limits(count + 1, held + mine, (int) mine, "This session holds");
}

/* hpg_store_put's refusal: no room in the role's share, this snapshot's draft counted; superusers pass */
static void
disk_refused(const hpg_usage *u, void *arg)
{
	if (superuser())
		return;
	ereport(ERROR,
			(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
			 errmsg("too many heap profile snapshots"),
			 errdetail("Your role's persisted snapshots, this one included (%d bytes), would be " INT64_FORMAT " of its share of " INT64_FORMAT " and " INT64_FORMAT " of " INT64_FORMAT " bytes (heapprof.role_share %d%% of heapprof.max_snapshots %d and heapprof.max_snapshot_bytes %d kB)%s.",
					   *(int *) arg, u->own_count, u->share_count, u->own_bytes, u->share_bytes,
					   hpg_role_share, max_snapshots, max_snapshot_bytes_kb,
					   u->own_count <= u->share_count && u->own_bytes <= u->share_bytes ?
					   "; the folder is full with other roles' snapshots" : ""),
			 errhint("Drop snapshots with heapprof_drop_snapshot(), or ask a superuser to raise the limits.")));
}

/* heapprof_snapshot(name, persist, pid): returns the profile's total bytes */
Datum
heapprof_snapshot(PG_FUNCTION_ARGS)
{
	char	   *name;
	bool		persist;
	StringInfoData prof;
	int64		bytes;
	int64		stacks;
	hpg_proc	proc;
	Oid			owner;
	bool		on_disk;
	hpg_quota	q = {max_snapshots, (int64) max_snapshot_bytes_kb * 1024};
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
	/*
	 * Early answers; the name is taken atomically when the file is written.
	 * A name means one thing: a session snapshot may share its name only
	 * with a persisted one of the same role.
	 */
	on_disk = hpg_store_owner(HPG_SNAPSHOT_DIR, name, &owner);
	if (hpg_stored_in_session(name) || (on_disk && persist))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("heap profile snapshot \"%s\" already exists", name),
				 errhint("Drop it with heapprof_drop_snapshot('%s') or choose another name.", name)));
	if (on_disk && owner != GetUserId())
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("heap profile snapshot \"%s\" already exists", name),
				 errdetail("Another role persisted a snapshot of that name."),
				 errhint("Choose another name.")));
	if (hpg_stored_taken(name))
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
	hpg_proc_dump(proc, &prof, true, session_limit, &prof);
	if (persist)
		hpg_store_put(HPG_SNAPSHOT_DIR, name, prof.data, prof.len, &q, disk_refused, &prof.len);
	hpg_stored_keep(name, prof.data, prof.len, persist);
	hpg_summarize(prof.data, prof.len, &bytes, &stacks);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	PG_RETURN_INT64(bytes);
}

/* heapprof_snapshots(): name, pid, owner, taken_at, total_bytes, samples, persisted */
Datum
heapprof_snapshots(PG_FUNCTION_ARGS)
{
	InitMaterializedSRF(fcinfo, 0);
	hpg_stored_list_snapshots((ReturnSetInfo *) fcinfo->resultinfo);
	return (Datum) 0;
}

/* heapprof_drop_snapshot(name): forget it in this session and remove its file */
Datum
heapprof_drop_snapshot(PG_FUNCTION_ARGS)
{
	char	   *name;
	bool		found;
	Oid			owner;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("name must not be NULL"),
				 errhint("heapprof_snapshots() lists the snapshots you can drop.")));
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	hpg_check_name(name);
	/* the session's copy of a name: only the file its own role persisted goes with it */
	found = hpg_store_drop(HPG_SNAPSHOT_DIR, name,
						   hpg_stored_session_owner(name, &owner) ? owner : InvalidOid);
	/* dropping the file proved the right to forget the session's copy */
	if (hpg_stored_forget(name, found))
		found = true;
	if (!found)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("heap profile snapshot \"%s\" does not exist", name),
				 errhint("heapprof_snapshots() lists the snapshots you can drop.")));
	PG_RETURN_VOID();
}
