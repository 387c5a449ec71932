/*
 * store.c -- heap profiles kept for later: snapshots and exit dumps.
 *
 * Leak hunting compares a profile with an earlier one.  A snapshot keeps the
 * calling backend's profile under a name for the session and, persisted, as
 * $PGDATA/heapprof/snapshots/NAME.heap so other sessions can compare with it.
 * A backend exiting with more than heapprof.dump_on_exit_threshold allocated
 * leaves its profile in $PGDATA/heapprof/dumps, the oldest removed first
 * beyond heapprof.max_dumps files or heapprof.max_dump_bytes.
 *
 * A stored profile is jemalloc's dump after "%" lines, which jeprof ignores:
 * "%heapprof pid=P owner=ROLE taken_at=T backend_type=..." and the identity
 * lines of dump.c.  Reading one takes the privileges of its owner (the role
 * that took a snapshot, the login role of an exiting backend), the rule
 * pg_signal_backend uses.  Files are written
 * under a temporary name and renamed, so a reader never sees a partial file,
 * not even when the disk fills up.
 */
#include "postgres.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "heapprof_pg.h"
#include "engine/report.h"

PG_FUNCTION_INFO_V1(heapprof_snapshot);
PG_FUNCTION_INFO_V1(heapprof_snapshots);
PG_FUNCTION_INFO_V1(heapprof_drop_snapshot);
PG_FUNCTION_INFO_V1(heapprof_dumps);

#define STORE_DIR "heapprof"
#define SNAPSHOT_DIR STORE_DIR "/snapshots"
#define EXIT_DIR STORE_DIR "/dumps"
#define SUFFIX ".heap"
#define MAX_NAME 63
#define MAX_IDENTITY_TEXT (1024 * 170)

int			hp_dump_on_exit_threshold_kb = -1;
int			hp_max_dumps = 20;
int			hp_max_dump_bytes_kb = 100 * 1024;

/* This session's snapshots, in TopMemoryContext. */
typedef struct snapshot
{
	char		name[MAX_NAME + 1];
	char	   *text;
	int			len;
	struct snapshot *next;
} snapshot;

static snapshot *snapshots;

/* What a stored profile's "%heapprof" line says. */
typedef struct meta
{
	int			pid;
	Oid			owner;
	TimestampTz taken_at;
	char		backend_type[64];
} meta;

/* ---- names, metadata, privileges ---- */

static void
check_name(const char *name)
{
	size_t		len = strlen(name);

	if (len == 0 || len > MAX_NAME || strspn(name,
											 "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != len ||
		name[0] == '.' || name[0] == '-')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid heap profile name \"%s\"", name),
				 errhint("Use 1 to %d letters, digits, \"_\", \".\" or \"-\", starting with a letter, digit or \"_\".", MAX_NAME)));
}

static void
append_meta(StringInfo out, int pid, Oid owner, TimestampTz at, const char *backend_type)
{
	appendStringInfo(out, "%%heapprof pid=%d owner=%u taken_at=" INT64_FORMAT " backend_type=%s\n",
					 pid, owner, at, backend_type);
}

/* The "%heapprof" line among the leading "%" lines; false if there is none. */
static bool
parse_meta(const char *text, int len, meta *m)
{
	const char *p = text;
	const char *end = text + len;

	memset(m, 0, sizeof(*m));
	while (p < end && *p == '%')
	{
		const char *nl = memchr(p, '\n', end - p);
		char		line[256];
		int			n = (int) Min((nl ? nl : end) - p, (int) sizeof(line) - 1);
		long long	at;
		int			pos = 0;

		memcpy(line, p, n);
		line[n] = '\0';
		if (sscanf(line, "%%heapprof pid=%d owner=%u taken_at=%lld backend_type=%n",
				   &m->pid, &m->owner, &at, &pos) == 3 && pos > 0)
		{
			m->taken_at = (TimestampTz) at;
			strlcpy(m->backend_type, line + pos, sizeof(m->backend_type));
			return true;
		}
		p = nl ? nl + 1 : end;
	}
	return false;
}

/* May the current user read a profile of a backend that ran as owner? */
static bool
can_read(const meta *m, bool has_meta)
{
	if (superuser())
		return true;
	return has_meta && OidIsValid(m->owner) && !superuser_arg(m->owner) &&
		has_privs_of_role(GetUserId(), m->owner);
}

static void
path_of(char *path, const char *dir, const char *name)
{
	snprintf(path, MAXPGPATH, "%s/%s%s", dir, name, SUFFIX);
}

/* ---- files ---- */


static void
make_dirs(void)
{
	if ((MakePGDirectory(STORE_DIR) < 0 && errno != EEXIST) ||
		(MakePGDirectory(SNAPSHOT_DIR) < 0 && errno != EEXIST) ||
		(MakePGDirectory(EXIT_DIR) < 0 && errno != EEXIST))
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", SNAPSHOT_DIR)));
}

/*
 * Write text to path through a temporary file and rename: the file appears
 * whole or not at all.  Plain C (errno, no ereport), so it also serves at
 * process exit; returns false with errno set.
 */
static bool
write_atomically(const char *path, const char *text, size_t len)
{
	char		tmp[MAXPGPATH];
	int			fd;

	snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, MyProcPid);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY, S_IRUSR | S_IWUSR);
	if (fd < 0)
		return false;
	if (!hp_write_all(fd, text, len))
	{
		int			save = errno;

		close(fd);
		unlink(tmp);
		errno = save;
		return false;
	}
	if (pg_fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0)
	{
		int			save = errno;

		unlink(tmp);
		errno = save;
		return false;
	}
	return true;
}

/* ---- taking and finding profiles ---- */

/* Process pid's profile with its metadata; owner may read it later. */
static void
take_profile(StringInfo out, Oid owner, int pid)
{
	if (pid != MyProcPid)
	{
		append_meta(out, pid, owner, GetCurrentTimestamp(), hp_backend_type_of(pid));
		hp_take_remote_dump(pid, out);
		return;
	}
	append_meta(out, MyProcPid, owner, GetCurrentTimestamp(),
				GetBackendTypeDesc(MyBackendType));
	hp_take_dump(out, true);
}

static snapshot *
find_session(const char *name)
{
	for (snapshot *s = snapshots; s; s = s->next)
		if (strcmp(s->name, name) == 0)
			return s;
	return NULL;
}

/*
 * The stored profile called name: this session's snapshot, a persisted
 * snapshot, or an exit dump, in that order.  Errors if there is none or the
 * current user may not read it.
 */
void
hp_store_read(const char *name, StringInfo out)
{
	static const char *const dirs[] = {SNAPSHOT_DIR, EXIT_DIR};
	snapshot   *s;

	check_name(name);
	if ((s = find_session(name)) != NULL)
		appendBinaryStringInfo(out, s->text, s->len);
	else
	{
		for (int i = 0; i < 2 && out->len == 0; i++)
		{
			char		path[MAXPGPATH];

			path_of(path, dirs[i], name);
			hp_read_file(path, out, true);
		}
	}
	if (out->len > 0)
	{
		meta		m;

		/* a session's own snapshots too: SET ROLE may have changed who asks */
		if (!can_read(&m, parse_meta(out->data, out->len, &m)))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied for heap profile \"%s\"", name),
					 errhint("Only superusers and roles with the privileges of the role that took it may read it.")));
		return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("heap profile \"%s\" does not exist", name),
			 errhint("heapprof_snapshots() and heapprof_dumps() list the profiles you can read; a stored one may have been removed meanwhile.")));
}

static void
summarize(const char *text, int len, int64 *bytes, int64 *stacks)
{
	double		b;
	double		objs;
	size_t		n;
	char		err[256];

	if (hp_summarize(text, len, &b, &objs, &n, err, sizeof(err)) != HP_OK)
	{
		*bytes = -1;			/* unreadable: listed, with no totals */
		*stacks = -1;
		return;
	}
	*bytes = (int64) b;
	*stacks = (int64) n;
}

/* ---- SQL: snapshots ---- */

/* heapprof_snapshot(name, persist, pid): returns the profile's total bytes */
Datum
heapprof_snapshot(PG_FUNCTION_ARGS)
{
	char	   *name;
	bool		persist;
	StringInfoData prof;
	snapshot   *s;
	char		path[MAXPGPATH];
	struct stat st;
	int64		bytes;
	int64		stacks;
	bool		was_active = true;
	bool		switched;
	int			pid;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("name and persist must not be NULL"),
				 errhint("Allowed values: a name, and true or false.")));
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	persist = PG_GETARG_BOOL(1);
	if (!hp_is_other(fcinfo, 2, &pid))
		pid = MyProcPid;
	check_name(name);
	path_of(path, SNAPSHOT_DIR, name);
	if (find_session(name) || (persist && stat(path, &st) == 0))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("heap profile snapshot \"%s\" already exists", name),
				 errhint("Drop it with heapprof_drop_snapshot('%s') or choose another name.", name)));

	/* the snapshot's own memory must not show up in later profiles */
	switched = !hp_profile_self && hpj_thread_active(false, &was_active) == 0;
	PG_TRY();
	{
		initStringInfo(&prof);
		take_profile(&prof, GetUserId(), pid);
		if (persist)
		{
			make_dirs();
			if (!write_atomically(path, prof.data, prof.len))
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("could not write heap profile snapshot \"%s\": %m", path),
						 errhint("Check free space and permissions of the data directory's %s folder; nothing was left behind.", SNAPSHOT_DIR)));
		}
		s = MemoryContextAllocZero(TopMemoryContext, sizeof(snapshot));
		strlcpy(s->name, name, sizeof(s->name));
		s->text = MemoryContextAlloc(TopMemoryContext, prof.len + 1);
		memcpy(s->text, prof.data, prof.len + 1);
		s->len = prof.len;
		s->next = snapshots;
		snapshots = s;
	}
	PG_FINALLY();
	{
		if (switched)
			hpj_thread_active(was_active, NULL);
	}
	PG_END_TRY();

	summarize(prof.data, prof.len, &bytes, &stacks);
	PG_RETURN_INT64(bytes);
}

/* One row of heapprof_snapshots() / heapprof_dumps(). */
static void
put_profile_row(ReturnSetInfo *rsinfo, const char *name, const char *text, int len,
				bool persisted, int64 file_bytes, bool dumps)
{
	Datum		values[7];
	bool		nulls[7] = {0};
	meta		m;
	bool		has_meta = parse_meta(text, len, &m);
	int64		bytes;
	int64		stacks;
	char	   *owner = has_meta ? GetUserNameFromId(m.owner, true) : NULL;
	int			i = 0;

	summarize(text, len, &bytes, &stacks);
	values[i++] = CStringGetTextDatum(name);
	values[i] = Int32GetDatum(m.pid);
	nulls[i++] = !has_meta;
	if (dumps)
	{
		values[i] = CStringGetTextDatum(m.backend_type);
		nulls[i++] = !has_meta;
	}
	values[i] = owner ? CStringGetTextDatum(owner) : (Datum) 0;
	nulls[i++] = owner == NULL;
	values[i] = TimestampTzGetDatum(m.taken_at);
	nulls[i++] = !has_meta;
	values[i] = Int64GetDatum(bytes);
	nulls[i++] = bytes < 0;
	if (dumps)
		values[i++] = Int64GetDatum(file_bytes);
	else
	{
		values[i] = Int64GetDatum(stacks);
		nulls[i++] = stacks < 0;
		values[i++] = BoolGetDatum(persisted);
	}
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* Every readable profile file of dir, as rows; skip names in session list. */
static void
list_dir(ReturnSetInfo *rsinfo, const char *dir, bool dumps)
{
	DIR		   *d = AllocateDir(dir);
	struct dirent *de;

	if (d == NULL && errno == ENOENT)
		return;
	while ((de = ReadDir(d, dir)) != NULL)
	{
		size_t		n = strlen(de->d_name);
		char		name[MAX_NAME + 1];
		char		path[MAXPGPATH];
		StringInfoData prof;
		meta		m;
		struct stat st;

		if (de->d_name[0] == '.' || n <= strlen(SUFFIX) || n - strlen(SUFFIX) > MAX_NAME ||
			strcmp(de->d_name + n - strlen(SUFFIX), SUFFIX) != 0)
			continue;
		memcpy(name, de->d_name, n - strlen(SUFFIX));
		name[n - strlen(SUFFIX)] = '\0';
		if (!dumps && find_session(name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		initStringInfo(&prof);
		/* removed meanwhile: not listed */
		if (stat(path, &st) != 0 || !hp_read_file(path, &prof, true))
			continue;
		if (can_read(&m, parse_meta(prof.data, prof.len, &m)))
			put_profile_row(rsinfo, name, prof.data, prof.len, true, (int64) st.st_size, dumps);
		pfree(prof.data);
	}
	FreeDir(d);
}

/* heapprof_snapshots(): name, pid, owner, taken_at, total_bytes, samples, persisted */
Datum
heapprof_snapshots(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	for (snapshot *s = snapshots; s; s = s->next)
	{
		char		path[MAXPGPATH];
		struct stat st;
		meta		m;

		if (!can_read(&m, parse_meta(s->text, s->len, &m)))
			continue;
		path_of(path, SNAPSHOT_DIR, s->name);
		put_profile_row(rsinfo, s->name, s->text, s->len, stat(path, &st) == 0, 0, false);
	}
	list_dir(rsinfo, SNAPSHOT_DIR, false);
	return (Datum) 0;
}

/* heapprof_drop_snapshot(name): forget it in this session and remove its file */
Datum
heapprof_drop_snapshot(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char		path[MAXPGPATH];
	StringInfoData prof;
	bool		found = false;
	meta		m;

	check_name(name);
	path_of(path, SNAPSHOT_DIR, name);
	initStringInfo(&prof);
	if (hp_read_file(path, &prof, true))
	{
		if (!can_read(&m, parse_meta(prof.data, prof.len, &m)))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied for heap profile \"%s\"", name),
					 errhint("Only superusers and roles with the privileges of the role that took it may drop it.")));
		if (unlink(path) < 0 && errno != ENOENT)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not remove heap profile \"%s\": %m", path)));
		found = true;
	}
	for (snapshot **p = &snapshots; *p; p = &(*p)->next)
		if (strcmp((*p)->name, name) == 0)
		{
			snapshot   *s = *p;

			if (!found && !can_read(&m, parse_meta(s->text, s->len, &m)))
				ereport(ERROR,
						(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
						 errmsg("permission denied for heap profile \"%s\"", name),
						 errhint("Only superusers and roles with the privileges of the role that took it may drop it.")));
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

/* heapprof_dumps(): name, pid, backend_type, owner, taken_at, total_bytes, file_bytes */
Datum
heapprof_dumps(PG_FUNCTION_ARGS)
{
	InitMaterializedSRF(fcinfo, 0);
	list_dir((ReturnSetInfo *) fcinfo->resultinfo, EXIT_DIR, true);
	return (Datum) 0;
}

/* ---- exit dumps ---- */

typedef struct dump_file
{
	char		name[NAME_MAX + 1];
	off_t		size;
} dump_file;

static int
dump_file_cmp(const void *a, const void *b)
{
	return strcmp(((const dump_file *) a)->name, ((const dump_file *) b)->name);
}

/* A temporary file (NAME.heap.tmpPID) of a process that no longer runs? */
static bool
stale_tmp(const char *name)
{
	const char *t = strstr(name, SUFFIX ".tmp");
	int			pid;

	if (t == NULL || (pid = atoi(t + strlen(SUFFIX ".tmp"))) <= 0)
		return false;
	return kill(pid, 0) != 0 && errno == ESRCH;
}

/*
 * Remove the oldest exit dumps beyond heapprof.max_dumps / max_dump_bytes,
 * and temporary files that crashed writers left.  Plain C: it runs at exit.
 */
static void
prune_exit_dumps(void)
{
	DIR		   *d = opendir(EXIT_DIR);
	struct dirent *de;
	dump_file  *files = NULL;
	size_t		n = 0;
	size_t		cap = 0;
	int64		total = 0;

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL)
	{
		size_t		len = strlen(de->d_name);
		char		path[MAXPGPATH];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", EXIT_DIR, de->d_name);
		if (stale_tmp(de->d_name))
		{
			unlink(path);
			continue;
		}
		if (de->d_name[0] == '.' || len <= strlen(SUFFIX) ||
			strcmp(de->d_name + len - strlen(SUFFIX), SUFFIX) != 0)
			continue;
		if (stat(path, &st) != 0)
			continue;
		if (n == cap)
		{
			size_t		ncap = cap ? cap * 2 : 64;
			dump_file  *v = realloc(files, ncap * sizeof(*v));

			if (v == NULL)
				break;
			files = v;
			cap = ncap;
		}
		strlcpy(files[n].name, de->d_name, sizeof(files[n].name));
		files[n].size = st.st_size;
		total += st.st_size;
		n++;
	}
	closedir(d);
	/* names start with the time: sorted, the oldest come first */
	if (n > 1)
		qsort(files, n, sizeof(*files), dump_file_cmp);
	for (size_t i = 0; i < n && ((int64) (n - i) > hp_max_dumps ||
								 total > (int64) hp_max_dump_bytes_kb * 1024); i++)
	{
		char		path[MAXPGPATH];

		snprintf(path, sizeof(path), "%s/%s", EXIT_DIR, files[i].name);
		if (unlink(path) == 0 || errno == ENOENT)
			total -= files[i].size;
	}
	free(files);
}

/* Append the file at path to fd; false on any error. */
static bool
copy_file_to(const char *path, int fd)
{
	char		buf[65536];
	int			in = open(path, O_RDONLY | PG_BINARY);
	ssize_t		n;
	bool		ok = in >= 0;

	while (ok && (n = read(in, buf, sizeof(buf))) != 0)
		ok = n > 0 && hp_write_all(fd, buf, (size_t) n);
	if (in >= 0)
		close(in);
	return ok;
}

/*
 * on_proc_exit callback: leave this backend's profile in heapprof/dumps when
 * it holds more than heapprof.dump_on_exit_threshold.  During exit an ERROR
 * would become FATAL, so this is plain C throughout -- jemalloc writes its
 * dump to a file, heapprof writes the metadata and identity lines and copies
 * the dump after them into a temporary file, then renames it -- and a
 * failure just leaves nothing behind.
 */
static void
exit_dump(int code, Datum arg)
{
	static char identity[MAX_IDENTITY_TEXT];
	hpj_status	st;
	struct timeval tv;
	struct tm	tm;
	char		stamp[32];
	char		type[64];
	char		path[MAXPGPATH];
	char		tmp[MAXPGPATH];
	char		raw[MAXPGPATH];
	char		head[256];
	int			fd;
	bool		ok;

	if (hp_dump_on_exit_threshold_kb < 0 || hpj_probe() != HPJ_USABLE)
		return;
	hpj_get_status(&st);
	if (!st.have_stats || st.allocated <= (uint64) hp_dump_on_exit_threshold_kb * 1024)
		return;

	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	strlcpy(type, GetBackendTypeDesc(MyBackendType), sizeof(type));
	for (char *p = type; *p; p++)
		if (*p == ' ')
			*p = '_';
	snprintf(path, sizeof(path), "%s/%s.%06ldZ-%d-%s%s", EXIT_DIR, stamp, (long) tv.tv_usec,
			 MyProcPid, type, SUFFIX);
	snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, MyProcPid);
	snprintf(raw, sizeof(raw), "%s/raw%s.tmp%d", EXIT_DIR, SUFFIX, MyProcPid);

	(void) mkdir(STORE_DIR, S_IRWXU);
	(void) mkdir(EXIT_DIR, S_IRWXU);
	prune_exit_dumps();			/* room first, also when the disk is full */
	if (hpj_dump(raw) != 0)
	{
		unlink(raw);
		return;
	}
	snprintf(head, sizeof(head), "%%heapprof pid=%d owner=%u taken_at=" INT64_FORMAT " backend_type=%s\n",
			 MyProcPid, GetSessionUserId(), GetCurrentTimestamp(), GetBackendTypeDesc(MyBackendType));
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY, S_IRUSR | S_IWUSR);
	ok = fd >= 0;
	if (ok)
	{
		size_t		idlen = hp_identity_text(identity, sizeof(identity));

		ok = hp_write_all(fd, head, strlen(head)) && hp_write_all(fd, identity, idlen) &&
			copy_file_to(raw, fd) && pg_fsync(fd) == 0;
		ok = close(fd) == 0 && ok;
	}
	unlink(raw);
	if (!ok || rename(tmp, path) != 0)
	{
		unlink(tmp);
		return;
	}
	prune_exit_dumps();
}

/* Arrange for this backend's exit dump (see exit_dump). */
void
hp_store_register_exit(void)
{
	on_proc_exit(exit_dump, (Datum) 0);
}
