/*
 * store.c -- heap profiles kept as files: names, folders, owners, listings.
 *
 * Leak hunting compares a profile with an earlier one, possibly from another
 * session or a process that has exited: persisted snapshots live in
 * $PGDATA/heapprof/snapshots/NAME.heap, exit dumps in $PGDATA/heapprof/dumps.
 * A stored profile starts with a metadata line (engine/format.h)
 * naming its owner: the role that took a snapshot, the login role of an
 * exiting backend.  Reading one takes the privileges of its owner, the rule
 * pg_signal_backend uses.
 */
#include "postgres.h"

#include <dirent.h>
#include <signal.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "funcapi.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "analysis.h"
#include "compat.h"
#include "files.h"
#include "store.h"
#include "engine/format.h"

void
hpg_check_name(const char *name)
{
	size_t		len = strlen(name);

	if (len == 0 || len > HPG_MAX_NAME ||
		strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != len ||
		name[0] == '.' || name[0] == '-')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid heap profile name \"%s\"", name),
				 errhint("Use 1 to %d letters, digits, \"_\", \".\" or \"-\", starting with a letter, digit or \"_\".", HPG_MAX_NAME)));
}

void
hpg_store_path(char *path, const char *dir, const char *name)
{
	snprintf(path, MAXPGPATH, "%s/%s%s", dir, name, HPG_SUFFIX);
}

void
hpg_store_make_dirs(void)
{
	if ((MakePGDirectory(HPG_STORE_DIR) < 0 && errno != EEXIST) ||
		(MakePGDirectory(HPG_SNAPSHOT_DIR) < 0 && errno != EEXIST) ||
		(MakePGDirectory(HPG_EXIT_DIR) < 0 && errno != EEXIST) ||
		(MakePGDirectory(HPG_CAPTURE_DIR) < 0 && errno != EEXIST))
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", HPG_SNAPSHOT_DIR),
				 errhint("Check free space and permissions of the data directory.")));
}

void
hpg_append_meta(StringInfo out, int pid, Oid owner, const char *backend_type)
{
	hp_meta		m = {HP_FORMAT_VERSION, pid, owner, GetCurrentTimestamp()};
	char		line[256];

	strlcpy(m.backend_type, backend_type, sizeof(m.backend_type));
	appendBinaryStringInfo(out, line, (int) hp_format_meta(line, sizeof(line), &m));
}

bool
hpg_can_read(const char *text, int len)
{
	hp_meta		m;

	if (superuser())
		return true;
	return hp_read_meta(text, (size_t) len, &m) && OidIsValid(m.owner) &&
		!superuser_arg(m.owner) && has_privs_of_role(GetUserId(), m.owner);
}

void
hpg_deny(const char *name, const char *verb)
{
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied for heap profile \"%s\"", name),
			 errhint("Only superusers and roles with the privileges of the role that took it may %s it.", verb)));
}

void
hpg_store_put_row(ReturnSetInfo *rsinfo, const char *name, const char *text, int len,
				  bool persisted, int64 file_bytes, bool dumps)
{
	Datum		values[7];
	bool		nulls[7] = {0};
	hp_meta		m;
	bool		has_meta = hp_read_meta(text, (size_t) len, &m);
	int64		bytes;
	int64		stacks;
	char	   *owner = has_meta ? GetUserNameFromId(m.owner, true) : NULL;
	int			i = 0;

	hpg_summarize(text, len, &bytes, &stacks);
	values[i++] = CStringGetTextDatum(name);
	values[i] = Int32GetDatum(m.pid);
	nulls[i++] = !has_meta;
	if (dumps)
	{
		values[i] = CStringGetTextDatum(has_meta ? m.backend_type : "");
		nulls[i++] = !has_meta;
	}
	values[i] = owner ? CStringGetTextDatum(owner) : (Datum) 0;
	nulls[i++] = owner == NULL;
	values[i] = TimestampTzGetDatum((TimestampTz) m.taken_at);
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

/* Length of the profile name a directory entry holds ("NAME.heap"), or 0 if none. */
static size_t
profile_name_length(const char *fname)
{
	size_t		n = strlen(fname);
	size_t		suffix = strlen(HPG_SUFFIX);

	if (fname[0] == '.' || n <= suffix || n - suffix > HPG_MAX_NAME ||
		strcmp(fname + n - suffix, HPG_SUFFIX) != 0)
		return 0;
	return n - suffix;
}

void
hpg_store_usage(const char *dir, int64 *count, int64 *bytes)
{
	DIR		   *d = AllocateDir(dir);
	struct dirent *de;

	*count = *bytes = 0;
	if (d == NULL && errno == ENOENT)
		return;
	while ((de = ReadDir(d, dir)) != NULL)
	{
		char		path[MAXPGPATH];
		struct stat st;

		CHECK_FOR_INTERRUPTS();
		if (profile_name_length(de->d_name) == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (lstat(path, &st) == 0 && S_ISREG(st.st_mode))
		{
			(*count)++;
			*bytes += st.st_size;
		}
	}
	FreeDir(d);
}

static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

char	  **
hpg_store_names(const char *dir, int *count)
{
	DIR		   *d = AllocateDir(dir);
	struct dirent *de;
	char	  **names = NULL;
	int			n = 0;
	int			cap = 0;

	*count = 0;
	if (d == NULL && errno == ENOENT)
		return NULL;
	while ((de = ReadDir(d, dir)) != NULL)
	{
		size_t		len = profile_name_length(de->d_name);

		CHECK_FOR_INTERRUPTS();
		if (len == 0)
			continue;
		if (n == cap)
		{
			cap = cap ? cap * 2 : 64;
			names = names ? repalloc(names, cap * sizeof(char *)) : palloc(cap * sizeof(char *));
		}
		names[n++] = pnstrdup(de->d_name, len);
	}
	FreeDir(d);
	if (n > 1)
		qsort(names, n, sizeof(char *), cmp_names);
	*count = n;
	return names;
}

void
hpg_store_list(ReturnSetInfo *rsinfo, const char *dir, bool dumps, bool (*skip) (const char *name))
{
	DIR		   *d = AllocateDir(dir);
	struct dirent *de;

	if (d == NULL && errno == ENOENT)
		return;
	while ((de = ReadDir(d, dir)) != NULL)
	{
		size_t		n = profile_name_length(de->d_name);
		char		name[HPG_MAX_NAME + 1];
		char		path[MAXPGPATH];
		StringInfoData prof;

		CHECK_FOR_INTERRUPTS();
		if (n == 0)
			continue;
		memcpy(name, de->d_name, n);
		name[n] = '\0';
		if (skip && skip(name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		initStringInfo(&prof);
		/* removed meanwhile, or not a profile file: not listed */
		if (hpg_read_file_or_warn(path, &prof) && prof.len == 0)
			ereport(WARNING,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("heap profile \"%s\" is an empty file", path),
					 errhint("Remove the file; heapprof never writes an empty profile.")));
		else if (prof.len > 0 && hpg_can_read(prof.data, prof.len))
			hpg_store_put_row(rsinfo, name, prof.data, prof.len, true, (int64) prof.len, dumps);
		pfree(prof.data);
	}
	FreeDir(d);
}

/* ---- plain C: exit dumps are named and pruned at process exit ---- */

void
hpg_store_time_name(char *name, size_t size, const char *kind)
{
	struct timeval tv;
	struct tm	tm;
	char		stamp[32];

	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	snprintf(name, size, "%s.%06ldZ-%d-%s", stamp, (long) tv.tv_usec, MyProcPid, kind);
}

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
	const char *t = strstr(name, HPG_SUFFIX ".tmp");
	int			pid;

	if (t == NULL || (pid = atoi(t + strlen(HPG_SUFFIX ".tmp"))) <= 0)
		return false;
	return kill(pid, 0) != 0 && errno == ESRCH;
}

void
hpg_store_prune(const char *dir, int max_count, int64 max_bytes)
{
	DIR		   *d = opendir(dir);
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

		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (stale_tmp(de->d_name))
		{
			unlink(path);
			continue;
		}
		if (de->d_name[0] == '.' || len <= strlen(HPG_SUFFIX) ||
			strcmp(de->d_name + len - strlen(HPG_SUFFIX), HPG_SUFFIX) != 0)
			continue;
		if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
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
	for (size_t i = 0; i < n && ((int64) (n - i) > max_count ||
								 total > max_bytes); i++)
	{
		char		path[MAXPGPATH];

		snprintf(path, sizeof(path), "%s/%s", dir, files[i].name);
		if (unlink(path) == 0 || errno == ENOENT)
			total -= files[i].size;
	}
	free(files);
}
