/*
 * jemalloc.c -- find jemalloc in the running process and drive its profiler.
 *
 * See jemalloc.h for why mallctl is resolved at run time.  Facts relied on
 * (jemalloc 5.3): opt.prof tells whether profiling was compiled in and enabled
 * at start (opt.prof_active reads true even when prof is off); every prof.*
 * write answers ENOENT when it was not; stats.* are a snapshot refreshed by
 * writing epoch.
 */
#include "jemalloc.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

typedef int (*mallctl_fn) (const char *, void *, size_t *, void *, size_t);

static mallctl_fn mallctl_ptr;
static uintptr_t lib_base;
static bool probed;
static hpj_state state;

/*
 * When the samples of this process's profile began to be taken (Unix
 * microseconds): the first activation since start or the last reset; 0 if
 * none.  A forked backend inherits the postmaster's, as it inherits its
 * samples.
 */
static uint64_t since;

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

/*
 * The binding initialises itself: every entry point probes first (cheap
 * after the first call), so no caller depends on another having probed.
 */
static mallctl_fn
ctl(void)
{
	hpj_probe();
	return mallctl_ptr;
}

/* Read a mallctl value of exactly the size of *out. */
#define READ_CTL(name, out) \
	read_ctl((name), (out), sizeof(*(out)))

static int
read_ctl(const char *name, void *out, size_t size)
{
	size_t		got = size;
	int			rc = mallctl_ptr(name, out, &got, NULL, 0);

	if (rc == 0 && got != size)
		rc = EINVAL;
	return rc;
}

hpj_state
hpj_probe(void)
{
	void	   *mallctl_sym;
	void	   *malloc_sym;
	Dl_info		ctl_info;
	Dl_info		malloc_info;
	bool		flag;

	if (probed)
		return state;
	probed = true;

	mallctl_sym = dlsym(RTLD_DEFAULT, "mallctl");
	if (mallctl_sym == NULL)
		return state = HPJ_NOT_LOADED;
	malloc_sym = dlsym(RTLD_DEFAULT, "malloc");

	/*
	 * Compare load bases, not names: one file can be reached through several
	 * paths (merged /usr), and the main executable's name is the ps title.
	 */
	if (malloc_sym == NULL ||
		dladdr(mallctl_sym, &ctl_info) == 0 ||
		dladdr(malloc_sym, &malloc_info) == 0 ||
		ctl_info.dli_fbase != malloc_info.dli_fbase)
		return state = HPJ_NOT_ALLOCATOR;

	mallctl_ptr = (mallctl_fn) mallctl_sym;
	lib_base = (uintptr_t) ctl_info.dli_fbase;

	if (READ_CTL("config.prof", &flag) != 0 || !flag)
		return state = HPJ_NO_PROF_BUILD;
	if (READ_CTL("opt.prof", &flag) != 0 || !flag)
		return state = HPJ_PROF_OFF;
	return state = HPJ_USABLE;
}

uintptr_t
hpj_library_base(void)
{
	hpj_probe();
	return lib_base;
}

void
hpj_get_status(hpj_status *st)
{
	uint64_t	epoch = 1;
	size_t		lg;
	size_t		bytes;

	memset(st, 0, sizeof(*st));
	st->state = hpj_probe();
	if (mallctl_ptr == NULL)
		return;

	if (READ_CTL("version", &st->version) != 0)
		st->version = NULL;
	if (READ_CTL("opt.prof", &st->prof_enabled) != 0)
		st->prof_enabled = false;
	if (st->prof_enabled)
	{
		if (READ_CTL("prof.active", &st->active) != 0)
			st->active = false;
		st->sampling_since = since;
		if (READ_CTL("prof.lg_sample", &lg) == 0 && lg < 64)
		{
			st->have_sample = true;
			st->sample_interval = UINT64_C(1) << lg;
		}
	}

	/* stats.* are cached until epoch is written; a build without stats fails here */
	if (mallctl_ptr("epoch", NULL, NULL, &epoch, sizeof(epoch)) != 0)
		return;
	if (READ_CTL("stats.allocated", &bytes) != 0)
		return;
	st->allocated = bytes;
	if (READ_CTL("stats.active", &bytes) != 0)
		return;
	st->active_bytes = bytes;
	if (READ_CTL("stats.resident", &bytes) != 0)
		return;
	st->resident = bytes;
	st->have_stats = true;
}

int
hpj_set_active(bool on)
{
	int			rc;

	if (ctl() == NULL)
		return ENOENT;
	rc = mallctl_ptr("prof.active", NULL, NULL, &on, sizeof(on));
	if (rc == 0 && on && since == 0)
		since = now_us();
	return rc;
}

void
hpj_active_since(uint64_t t)
{
	bool		active;

	if (since == 0 && hpj_probe() == HPJ_USABLE &&
		READ_CTL("prof.active", &active) == 0 && active)
		since = t;
}

int
hpj_reset(int lg_sample)
{
	size_t		lg = (size_t) lg_sample;
	bool		active;
	int			rc;

	if (ctl() == NULL)
		return ENOENT;
	if (lg_sample < 0)
		rc = mallctl_ptr("prof.reset", NULL, NULL, NULL, 0);
	else
		rc = mallctl_ptr("prof.reset", NULL, NULL, &lg, sizeof(lg));
	/* the profile starts over: from now if sampling goes on */
	if (rc == 0)
		since = READ_CTL("prof.active", &active) == 0 && active ? now_us() : 0;
	return rc;
}

/*
 * prof.dump answers EFAULT for any failure, so the cause is found here:
 * heapprof creates the file itself first (its open's errno, and a mode of
 * 0600, never through a symbolic or a hard link, never blocking on a FIFO;
 * jemalloc's creat() then truncates it), and after a failed write jemalloc leaves the write's
 * errno -- but formatting after the failure can overwrite it (ERANGE seen),
 * so only a write's errnos are trusted, then a full file system.  EFAULT
 * still means jemalloc gave no cause (its message goes to stderr).
 */
int
hpj_dump(const char *path)
{
	int			fd;
	struct stat st;
	struct statvfs vfs;
	int			rc;
	int			err;

	if (ctl() == NULL)
		return ENOENT;
	fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, S_IRUSR | S_IWUSR);
	if (fd < 0)
		return errno;
	/* a planted hard link would have jemalloc overwrite the file it names */
	rc = fstat(fd, &st) != 0 ? errno : !S_ISREG(st.st_mode) || st.st_nlink != 1 ? EEXIST : 0;
	close(fd);
	if (rc != 0)
		return rc;

	errno = 0;
	rc = mallctl_ptr("prof.dump", NULL, NULL, &path, sizeof(path));
	err = errno;
	if (rc != EFAULT)
		return rc;
	if (err == ENOSPC || err == EDQUOT || err == EIO || err == EFBIG)
		return err;
	if (statvfs(path, &vfs) == 0 && vfs.f_bavail == 0)
		return ENOSPC;
	return EFAULT;
}

/*
 * Switch sampling of this thread's own allocations, so that the analysis
 * heapprof does in a backend does not show up in that backend's profile.
 */
int
hpj_thread_active(bool on, bool *was)
{
	bool		old = false;
	size_t		size = sizeof(old);
	int			rc;

	if (ctl() == NULL)
		return ENOENT;
	rc = mallctl_ptr("thread.prof.active", &old, &size, &on, sizeof(on));
	if (was)
		*was = (rc == 0) ? old : on;
	return rc;
}

/*
 * thread.allocatedp / deallocatedp give the addresses of this thread's
 * counters: read directly, they cost nothing, so callers may take them
 * around every allocation (analysis.c does).
 */
int64_t
hpj_thread_net(void)
{
	static uint64_t *allocated;
	static uint64_t *deallocated;
	static bool looked;

	if (!looked)
	{
		looked = true;
		if (ctl() == NULL ||
			READ_CTL("thread.allocatedp", &allocated) != 0 ||
			READ_CTL("thread.deallocatedp", &deallocated) != 0)
			allocated = deallocated = NULL;
	}
	if (allocated == NULL || deallocated == NULL)
		return 0;
	return (int64_t) (*allocated - *deallocated);
}

/*
 * jemalloc 5.3's experimental interfaces (Debian 12 ships 5.3.0): a hook
 * around the backtrace of each sampled allocation, the per-thread peak, and
 * the record of the most recent sampled allocations.  Each answers ENOENT
 * where jemalloc lacks it.
 */
int
hpj_hook_backtrace(hpj_backtrace_fn hook, hpj_backtrace_fn *prev)
{
	size_t		size = sizeof(*prev);

	if (ctl() == NULL)
		return ENOENT;
	return mallctl_ptr("experimental.hooks.prof_backtrace", prev, &size, &hook, sizeof(hook));
}

int
hpj_thread_peak(uint64_t *peak)
{
	if (ctl() == NULL)
		return ENOENT;
	return READ_CTL("thread.peak.read", peak);
}

int
hpj_thread_peak_reset(void)
{
	if (ctl() == NULL)
		return ENOENT;
	return mallctl_ptr("thread.peak.reset", NULL, NULL, NULL, 0);
}

int
hpj_recent_max(int64_t want, int64_t *old)
{
	ssize_t		value = (ssize_t) want;
	ssize_t		was = 0;
	size_t		size = sizeof(was);
	int			rc;

	if (ctl() == NULL)
		return ENOENT;
	rc = want < 0 ? READ_CTL("experimental.prof_recent.alloc_max", &was)
		: mallctl_ptr("experimental.prof_recent.alloc_max", &was, &size, &value, sizeof(value));
	if (old)
		*old = was;
	return rc;
}

typedef struct fd_writer
{
	int			fd;
	int			err;
} fd_writer;

static void
write_to_fd(void *arg, const char *s)
{
	fd_writer  *w = arg;
	size_t		len = strlen(s);

	while (len > 0 && w->err == 0)
	{
		ssize_t		n = write(w->fd, s, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
		{
			w->err = n < 0 ? errno : ENOSPC;
			break;
		}
		s += n;
		len -= (size_t) n;
	}
}

int
hpj_recent_dump(int fd)
{
	fd_writer	w = {fd, 0};
	struct
	{
		void		(*cb) (void *, const char *);
		void	   *arg;
	}			packed = {write_to_fd, &w};
	int			rc;

	if (ctl() == NULL)
		return ENOENT;
	rc = mallctl_ptr("experimental.prof_recent.alloc_dump", NULL, NULL, &packed, sizeof(packed));
	return rc ? rc : w.err;
}

int64_t
hpj_clock_ns(void)
{
	static int	high = -1;
	struct timespec ts;

	if (high < 0)
	{
		const char *res = NULL;

		high = ctl() != NULL && READ_CTL("opt.prof_time_resolution", &res) == 0 &&
			res != NULL && strcmp(res, "high") == 0;
	}
	clock_gettime(high ? CLOCK_REALTIME : CLOCK_MONOTONIC_COARSE, &ts);
	return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}
