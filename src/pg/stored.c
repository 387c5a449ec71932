/*
 * stored.c -- every stored profile by name and kind; heapprof_stored().
 *
 * Reports read a stored profile by name (stored => NAME, base => NAME), and
 * a name is one namespace over every kind: this session's snapshots (in
 * TopMemoryContext), persisted snapshots, exit dumps and statement captures
 * (files of store.c).  This file is where readers find, open and validate
 * one, and where every listing of them is made, so a kind cannot be
 * readable without being listed or listed without being readable.  A name
 * found in two places is refused rather than guessed.  Peaks are not read
 * by name: each process has one (heapprof_peak(), peak => true).
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "funcapi.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "analysis.h"
#include "files.h"
#include "peak.h"
#include "sqltext.h"
#include "store.h"
#include "stored.h"
#include "engine/format.h"

PG_FUNCTION_INFO_V1(heapprof_stored);

/* The kinds kept in files, in the order a name is looked for. */
enum
{
	K_SNAPSHOT, K_EXIT, K_CAPTURE
};
static const struct
{
	const char *kind;
	const char *dir;
}			kinds[] = {
	[K_SNAPSHOT] = {"snapshot", HPG_SNAPSHOT_DIR},
	[K_EXIT] = {"exit dump", HPG_EXIT_DIR},
	[K_CAPTURE] = {"capture", HPG_CAPTURE_DIR},
};

/* This session's snapshots. */
typedef struct session_profile
{
	char		name[HPG_MAX_NAME + 1];
	char	   *text;
	int			len;
	Oid			owner;			/* the role that took it */
	bool		persisted;		/* this session persisted it too */
	struct session_profile *next;
} session_profile;

static session_profile *session;

static session_profile *
find_session(const char *name)
{
	for (session_profile *s = session; s; s = s->next)
		if (strcmp(s->name, name) == 0)
			return s;
	return NULL;
}

bool
hpg_stored_in_session(const char *name)
{
	return find_session(name) != NULL;
}

bool
hpg_stored_session_owner(const char *name, Oid *owner)
{
	session_profile *s = find_session(name);

	if (s)
		*owner = s->owner;
	return s != NULL;
}

void
hpg_stored_keep(const char *name, const char *text, int len, bool persisted)
{
	session_profile *s = MemoryContextAllocZero(TopMemoryContext, sizeof(session_profile));
	hp_meta		m;

	s->owner = hp_read_meta(text, (size_t) len, &m) ? m.owner : InvalidOid;
	s->persisted = persisted;
	strlcpy(s->name, name, sizeof(s->name));
	s->text = MemoryContextAlloc(TopMemoryContext, len + 1);
	memcpy(s->text, text, len);
	s->text[len] = '\0';
	s->len = len;
	s->next = session;
	session = s;
}

bool
hpg_stored_forget(const char *name, bool checked)
{
	for (session_profile **p = &session; *p; p = &(*p)->next)
		if (strcmp((*p)->name, name) == 0)
		{
			session_profile *s = *p;

			if (!checked && !hpg_can_read(s->text, s->len))
				hpg_deny(name, "drop");
			*p = s->next;
			pfree(s->text);
			pfree(s);
			return true;
		}
	return false;
}

void
hpg_stored_session_usage(int64 *count, int64 *bytes)
{
	*count = 0;
	*bytes = 0;
	for (session_profile *s = session; s; s = s->next)
	{
		(*count)++;
		*bytes += s->len;
	}
}

/* The folder holding name, or NULL; ERROR if two do. */
static int
find_file(const char *name)
{
	int			found = -1;

	for (int i = 0; i < (int) lengthof(kinds); i++)
	{
		if (!hpg_store_exists(kinds[i].dir, name))
			continue;
		if (found >= 0)
			ereport(ERROR,
					(errcode(ERRCODE_AMBIGUOUS_PARAMETER),
					 errmsg("heap profile name \"%s\" is in both %s and %s", name, kinds[found].dir, kinds[i].dir),
					 errhint("A superuser should rename or remove one of the files in the data directory.")));
		found = i;
	}
	return found;
}

typedef struct
{
	const char *name;			/* NULL: a peak, readable by whoever asked for its pid */
	int64		held;
} read_check;

/*
 * Before a stored profile is read: may the current user read it (by its
 * first line, where every writer puts the owner), then does held plus its
 * size fit the budget.  In this order, so that a refusal for size does not
 * tell the size of a profile the user may not read.  The whole file's owner
 * is checked again once read.
 */
static void
check_before_read(const char *head, int len, int64 size, void *arg)
{
	read_check *c = arg;

	if (len == 0)
		return;					/* the reader reports an empty file */
	if (c->name && !hpg_can_read(head, len))
		hpg_deny(c->name, "read");
	hpg_report_budget_check(c->held + size, c->name ? "the stored profile" : "the peak profile");
}

bool
hpg_stored_read_peak(int pid, StringInfo out)
{
	char		path[MAXPGPATH];
	read_check c = {NULL, 0};

	hpg_peak_path(path, sizeof(path), pid);
	return hpg_read_file_checked(path, out, true, check_before_read, &c);
}

bool
hpg_stored_taken(const char *name)
{
	for (int i = 0; i < (int) lengthof(kinds); i++)
		if (i != K_SNAPSHOT && hpg_store_exists(kinds[i].dir, name))
			return true;
	return false;
}

const char *
hpg_stored_read(const char *name, StringInfo out, int64 held)
{
	session_profile *s;
	const char *kind = "snapshot";
	int			start = out->len;

	hpg_check_name(name);
	if ((s = find_session(name)) != NULL)
	{
		if (!hpg_can_read(s->text, s->len))
			hpg_deny(name, "read");
		hpg_report_budget_check(held + s->len, "the stored profile");
		appendBinaryStringInfo(out, s->text, s->len);
	}
	else
	{
		int			i = find_file(name);
		char		path[MAXPGPATH];
		read_check	c = {name, held};

		if (i >= 0)
			hpg_store_path(path, kinds[i].dir, name);
		if (i < 0 || !hpg_read_file_checked(path, out, true, check_before_read, &c))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("heap profile \"%s\" does not exist", name),
					 errhint("heapprof_stored() lists the profiles you can read; a session snapshot lives only in the session that took it (persist => true keeps it for others).")));
		if (out->len == start)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("heap profile \"%s\" is an empty file", path),
					 errhint("Remove the file; heapprof never writes an empty profile.")));
		kind = kinds[i].kind;
	}
	/* a session's own snapshots too: SET ROLE may have changed who asks */
	if (!hpg_can_read(out->data + start, out->len - start))
		hpg_deny(name, "read");
	return kind;
}

/* ---- listings ---- */

typedef enum row_kind
{
	ROW_SNAPSHOTS,				/* name, pid, owner, taken_at, total_bytes, samples, persisted */
	ROW_DUMPS,					/* name, pid, backend_type, owner, taken_at, total_bytes, file_bytes */
	ROW_STORED					/* name, kind, pid, owner, taken_at, total_bytes, file_bytes */
} row_kind;

/*
 * A row of a listing: text is the whole profile, or (whole false: larger
 * than a report may read) its first bytes, and then its totals are NULL.
 * size: the file's, or -1 for a snapshot kept only in this session.
 */
static void
put_row(ReturnSetInfo *rsinfo, row_kind rk, const char *name, const char *kind,
		const char *text, int len, bool whole, int64 size, bool persisted)
{
	Datum		values[7];
	bool		nulls[7] = {0};
	hp_meta		m;
	bool		has_meta = hp_read_meta(text, (size_t) len, &m);
	int64		bytes = -1;
	int64		stacks = -1;
	char	   *owner = has_meta ? GetUserNameFromId(m.owner, true) : NULL;
	int			i = 0;

	if (whole)
		hpg_summarize(text, len, &bytes, &stacks);
	values[i++] = HpgTextDatum(name);
	if (rk == ROW_STORED)
		values[i++] = CStringGetTextDatum(kind);
	values[i] = Int32GetDatum(m.pid);
	nulls[i++] = !has_meta;
	if (rk == ROW_DUMPS)
	{
		values[i] = HpgTextDatum(has_meta ? m.backend_type : "");
		nulls[i++] = !has_meta;
	}
	values[i] = owner ? CStringGetTextDatum(owner) : (Datum) 0;
	nulls[i++] = owner == NULL;
	values[i] = TimestampTzGetDatum((TimestampTz) m.taken_at);
	nulls[i++] = !has_meta;
	values[i] = Int64GetDatum(bytes);
	nulls[i++] = bytes < 0;
	if (rk == ROW_SNAPSHOTS)
	{
		values[i] = Int64GetDatum(stacks);
		nulls[i++] = stacks < 0;
		values[i++] = BoolGetDatum(persisted);
	}
	else
	{
		/* the file's size; a snapshot kept only in this session has none */
		values[i] = Int64GetDatum(size);
		nulls[i++] = size < 0;
	}
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

static void
list_file(int k, const char *name, bool skip_session, hpg_stored_fn fn, void *arg)
{
	char		path[MAXPGPATH];
	char		head[HPG_READ_HEAD];
	struct stat st;
	hp_meta		m;
	session_profile *s;
	int			len;
	int			fd;

	hpg_store_path(path, kinds[k].dir, name);
	/* removed meanwhile, or not a profile file (a WARNING): not listed */
	if ((fd = hpg_read_head(path, head, &len, &st, WARNING)) < 0)
		return;
	CloseTransientFile(fd);
	if (len == 0)
		ereport(WARNING,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("heap profile \"%s\" is an empty file", path),
				 errhint("Remove the file; heapprof never writes an empty profile.")));
	else if (!hpg_can_read(head, len))
		return;
	/* the file this session persisted is listed as its session copy */
	else if (skip_session && (s = find_session(name)) != NULL && s->persisted &&
			 hp_read_meta(head, (size_t) len, &m) && m.owner == s->owner)
		return;
	else if (!hpg_report_budget_fits((int64) st.st_size))
		fn(name, head, len, false, (int64) st.st_size, arg);
	else
	{
		StringInfoData prof;
		read_check	c = {name, 0};

		initStringInfo(&prof);
		if (hpg_read_file_checked(path, &prof, true, check_before_read, &c) && prof.len > 0)
			fn(name, prof.data, prof.len, true, (int64) prof.len, arg);
		pfree(prof.data);
	}
}

/*
 * fn for each profile of kinds[k]'s folder the current user may read,
 * oldest first (names start with the time where a process named them),
 * skipping what this session keeps of its own snapshots when skip_session.
 * Only a file's first bytes are read before its owner is checked, and a
 * file larger than a report may read is not read further: fn gets its
 * first bytes, whole false.
 */
static void
each_file(int k, bool skip_session, hpg_stored_fn fn, void *arg)
{
	int			n;
	char	  **names = hpg_store_names(kinds[k].dir, &n);

	for (int i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		list_file(k, names[i], skip_session, fn, arg);
		pfree(names[i]);
	}
}

typedef struct row_arg
{
	ReturnSetInfo *rsinfo;
	row_kind	rk;
	int			k;
} row_arg;

static void
file_row(const char *name, const char *text, int len, bool whole, int64 size, void *arg)
{
	row_arg    *r = arg;

	put_row(r->rsinfo, r->rk, name, kinds[r->k].kind, text, len, whole, size, true);
}

static void
list_files(ReturnSetInfo *rsinfo, row_kind rk, int k)
{
	row_arg		r = {rsinfo, rk, k};

	each_file(k, rk != ROW_DUMPS, file_row, &r);
}

void
hpg_stored_each_capture(hpg_stored_fn fn, void *arg)
{
	each_file(K_CAPTURE, false, fn, arg);
}

static void
list_session(ReturnSetInfo *rsinfo, row_kind rk)
{
	for (session_profile *s = session; s; s = s->next)
	{
		Oid			owner;
		bool		persisted;

		if (!hpg_can_read(s->text, s->len))
			continue;
		/* persisted: by this session, and still the file of its role */
		persisted = s->persisted && hpg_store_owner(HPG_SNAPSHOT_DIR, s->name, &owner) && owner == s->owner;
		put_row(rsinfo, rk, s->name, "snapshot", s->text, s->len, true,
				persisted ? (int64) s->len : -1, persisted);
	}
}

void
hpg_stored_list_snapshots(ReturnSetInfo *rsinfo)
{
	list_session(rsinfo, ROW_SNAPSHOTS);
	list_files(rsinfo, ROW_SNAPSHOTS, K_SNAPSHOT);
}

void
hpg_stored_list_dumps(ReturnSetInfo *rsinfo)
{
	list_files(rsinfo, ROW_DUMPS, K_EXIT);
}

/* heapprof_stored(): name, kind, pid, owner, taken_at, total_bytes, file_bytes */
Datum
heapprof_stored(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	list_session(rsinfo, ROW_STORED);
	for (int k = 0; k < (int) lengthof(kinds); k++)
		list_files(rsinfo, ROW_STORED, k);
	return (Datum) 0;
}
