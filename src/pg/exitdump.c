/*
 * exitdump.c -- heapprof_dumps(), and the profile a backend leaves at exit.
 *
 * A backend exiting with more than heapprof.dump_on_exit_threshold allocated
 * leaves its profile in $PGDATA/heapprof/dumps, the oldest removed first
 * beyond heapprof.max_dumps files or heapprof.max_dump_bytes.  A backend that
 * sampled nothing leaves nothing: an empty dump would only use up a place.
 * A backend whose peak (peak.c) passed the threshold, an eighth above what
 * it holds at exit, leaves that profile too, as NAME-peak: the spike that
 * made the DBA look is often gone by exit.
 * The dump's owner is the role that logged in, whatever SET SESSION
 * AUTHORIZATION or SET ROLE did since, so it is readable by those who could
 * have profiled the session.
 */
#include "postgres.h"

#include <limits.h>

#include <fcntl.h>
#include <setjmp.h>
#include <sys/stat.h>
#include <unistd.h>

#include "funcapi.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "exitdump.h"
#include "files.h"
#include "jemalloc.h"
#include "myprofile.h"
#include "peak.h"
#include "store.h"
#include "stored.h"
#include "engine/format.h"
#include "engine/report.h"

PG_FUNCTION_INFO_V1(heapprof_dumps);

static int	threshold_kb = -1;
static int	max_dumps = 20;
static int	max_dump_bytes_kb = 100 * 1024;

void
hpg_exitdump_init(void)
{
	DefineCustomIntVariable("heapprof.dump_on_exit_threshold",
							"A backend exiting with more than this allocated leaves its heap profile in $PGDATA/heapprof/dumps.",
							"-1 disables exit dumps. Needs shared_preload_libraries = 'heapprof'.",
							&threshold_kb,
							-1, -1, MAX_KILOBYTES,
							PGC_SUSET, GUC_UNIT_KB,
							NULL, NULL, NULL);
	DefineCustomIntVariable("heapprof.max_dumps",
							"Most exit dumps kept; the oldest are removed first.",
							NULL,
							&max_dumps,
							20, 0, 1000000,
							PGC_SUSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("heapprof.max_dump_bytes",
							"Most disk space exit dumps may take; the oldest are removed first.",
							NULL,
							&max_dump_bytes_kb,
							100 * 1024, 0, MAX_KILOBYTES,
							PGC_SUSET, GUC_UNIT_KB,
							NULL, NULL, NULL);
}

/* heapprof_dumps(): name, pid, backend_type, owner, taken_at, total_bytes, file_bytes */
Datum
heapprof_dumps(PG_FUNCTION_ARGS)
{
	InitMaterializedSRF(fcinfo, 0);
	hpg_stored_list_dumps((ReturnSetInfo *) fcinfo->resultinfo);
	return (Datum) 0;
}

/* ---- at exit: plain C throughout, an ERROR would become FATAL ---- */

/* Read a whole file with malloc; NULL on any error. */
static char *
slurp(const char *path, size_t *len)
{
	int			fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | PG_BINARY);
	struct stat st;
	char	   *buf = NULL;
	size_t		n = 0;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < HPG_MAX_FILE_BYTES &&
		(buf = malloc((size_t) st.st_size + 1)) != NULL)
	{
		ssize_t		got;

		while (n < (size_t) st.st_size && (got = read(fd, buf + n, (size_t) st.st_size - n)) > 0)
			n += (size_t) got;
		if (n != (size_t) st.st_size)
		{
			free(buf);
			buf = NULL;
		}
	}
	close(fd);
	*len = n;
	return buf;
}

/* The engine's environment at exit: malloc, and errors end the exit dump. */
static jmp_buf exit_env_failed;

static void *
exit_alloc(void *ctx, size_t size)
{
	void	   *p = malloc(size);

	if (p == NULL)
		longjmp(exit_env_failed, 1);
	return p;
}

static void
exit_free(void *ctx, void *ptr)
{
	free(ptr);
}

static void
exit_error(void *ctx, hp_status code, const char *message)
{
	longjmp(exit_env_failed, 1);
}

/* Did the dump sample anything?  An unreadable one counts as empty. */
static bool
sampled_anything(const char *text, size_t len)
{
	hp_env		env = {exit_alloc, exit_free, exit_error};
	double		bytes = 0;
	double		objs;
	size_t		stacks = 0;
	char		err[64];

	if (setjmp(exit_env_failed) != 0)
		return false;
	return hp_summarize(&env, text, len, &bytes, &objs, &stacks, err, sizeof(err)) == HP_OK &&
		bytes > 0;
}

/*
 * Leave HPG_EXIT_DIR/NAME.heap: the metadata and identity lines, then the
 * dump in the file at raw -- unless it sampled nothing, or it does not fit
 * in the owner's share of the folder (older dumps of the owner's make room,
 * never another role's).  A failure leaves nothing behind.
 */
static void
leave(const char *name, const char *head, size_t hlen, const char *ids, size_t idlen, const char *raw,
	  const hpg_quota *q, Oid owner)
{
	/* a raw dump in the folder is a draft of this process's: counted already */
	bool		counted = strncmp(raw, HPG_EXIT_DIR "/", strlen(HPG_EXIT_DIR "/")) == 0;
	size_t		len = 0;
	char	   *text = slurp(raw, &len);
	hpg_draft	d;

	if (text != NULL && sampled_anything(text, len) &&
		hpg_store_room(HPG_EXIT_DIR, q, owner, hpg_store_login_super(), counted ? 0 : 1,
					   (int64) (hlen + idlen + (counted ? 0 : len)), true, NULL) == 0 &&
		hpg_draft_open(&d, HPG_EXIT_DIR) == 0 && hpg_draft_write(&d, head, hlen) == 0 &&
		hpg_draft_write(&d, ids, idlen) == 0 && hpg_draft_write(&d, text, len) == 0)
		(void) hpg_draft_publish(&d, name, false);
	free(text);
}

/*
 * on_proc_exit callback: leave this backend's profile in heapprof/dumps when
 * it holds more than heapprof.dump_on_exit_threshold, and its peak profile
 * as NAME-peak when that passed the threshold and is not what it holds now
 * (peak.c removes its own files after this).  A failure just leaves nothing behind.
 */
static void
exit_dump(int code, Datum arg)
{
	static char identity[HP_IDENTITY_MAX];
	hpj_status	st;
	hpg_peak	peak;
	bool		keep_dump;
	bool		keep_peak;
	char		type[64];
	char		name[HPG_MAX_NAME + 1];
	char		path[MAXPGPATH];
	hpg_draft	raw;
	hpg_quota	q = {max_dumps, (int64) max_dump_bytes_kb * 1024};
	char		head[256];
	size_t		hlen;
	hp_meta		m = {HP_FORMAT_VERSION, MyProcPid};

	if (threshold_kb < 0 || hpj_probe() != HPJ_USABLE)
		return;
	hpj_get_status(&st);
	hpg_peak_get(&peak);
	keep_dump = st.have_stats && st.allocated > (uint64) threshold_kb * 1024;
	/* a peak worth keeping: above the threshold, and not what the exit dump shows anyway */
	keep_peak = peak.taken_at != 0 && peak.bytes > (int64) threshold_kb * 1024 &&
		peak.profile_bytes > hpj_thread_net() + hpj_thread_net() / 8;
	/* a login that failed after authentication (no such role) has no owner */
	if ((!keep_dump && !keep_peak) || !OidIsValid(GetAuthenticatedUserId()))
		return;

	strlcpy(type, GetBackendTypeDesc(MyBackendType), sizeof(type));
	for (char *p = type; *p; p++)
		if (*p == ' ')
			*p = '_';
	hpg_store_time_name(name, sizeof(name), type);
	if (hpg_store_dir_ready(HPG_EXIT_DIR) != 0)
		return;
	m.owner = GetAuthenticatedUserId();
	/* room first, for the dump jemalloc writes (also when the disk is full) */
	(void) hpg_store_room(HPG_EXIT_DIR, &q, m.owner, hpg_store_login_super(), 1, 0, true, NULL);
	m.taken_at = GetCurrentTimestamp();
	strlcpy(m.backend_type, GetBackendTypeDesc(MyBackendType), sizeof(m.backend_type));
	hlen = hp_format_meta(head, sizeof(head), &m);
	/* jemalloc writes the dump to a path: a draft's, removed on every path */
	if (keep_dump && hpg_draft_open(&raw, HPG_EXIT_DIR) == 0 && hpg_draft_close(&raw) == 0)
	{
		if (hpj_dump(raw.path) == 0)
			leave(name, head, hlen, identity, hpg_identity_text(identity, sizeof(identity), true), raw.path,
				  &q, m.owner);
		hpg_draft_discard(&raw);
	}
	if (keep_peak)
	{
		char		peak_name[MAXPGPATH];

		/* the peak file holds its identity lines already */
		hpg_peak_path(path, sizeof(path), MyProcPid);
		snprintf(peak_name, sizeof(peak_name), "%s-peak", name);
		leave(peak_name, head, hlen, "", 0, path, &q, m.owner);
	}
	(void) hpg_store_room(HPG_EXIT_DIR, &q, m.owner, hpg_store_login_super(), 0, 0, true, NULL);
}

void
hpg_exitdump_register(void)
{
	on_proc_exit(exit_dump, (Datum) 0);
}
