/*
 * fetch.c -- executables and debug info by build-id from debuginfod.
 *
 * libdebuginfod is loaded at run time, as libdw loads it: the tools work
 * without it.  Its cache (DEBUGINFOD_CACHE_PATH, default
 * ~/.cache/debuginfod_client) keeps what was fetched.  Time is bounded:
 * DEBUGINFOD_TIMEOUT (default here 5 s, and no retry: DEBUGINFOD_RETRY_LIMIT
 * 0) for a connection or a stalled transfer, DEBUGINFOD_MAXTIME (default
 * here 120 s) for one file, and after the first failure other than "not
 * there" no server is asked again: an unreachable server costs one timeout,
 * not one per object.  A fetched file that is not the build asked for is
 * refused by the engine (engine/verify.h) and removed here from the cache,
 * so that no later run, with the server gone, takes it from there.
 */
#include "fetch.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct debuginfod_client debuginfod_client;
typedef int (*progress_fn) (debuginfod_client *c, long a, long b);

struct hp_fetch
{
	const char *progname;
	char	   *urls;
	void	   *lib;
	debuginfod_client *client;
	int			(*find_debuginfo) (debuginfod_client *, const unsigned char *, int, char **);
	int			(*find_executable) (debuginfod_client *, const unsigned char *, int, char **);
	void		(*end) (debuginfod_client *);
	bool		down;			/* a server failed: ask no more */
	int			found;
	int			absent;
	int			refused;
};

static double maxtime;
static struct timespec started;

static double
elapsed(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double) (now.tv_sec - started.tv_sec) + (now.tv_nsec - started.tv_nsec) / 1e9;
}

/* libdebuginfod calls this while it waits: non-zero cancels the transfer */
static int
progress(debuginfod_client *c, long a, long b)
{
	(void) c, (void) a, (void) b;
	return elapsed() > maxtime;
}

hp_fetch *
hp_fetch_open(const char *progname)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	const char *max = getenv("DEBUGINFOD_MAXTIME");
	hp_fetch   *f;
	debuginfod_client *(*begin) (void);
	void		(*set_progress) (debuginfod_client *, progress_fn);

	if (urls == NULL || urls[strspn(urls, " ")] == '\0')
		return NULL;
	f = calloc(1, sizeof(*f));
	if (f == NULL || (f->urls = strdup(urls)) == NULL)
	{
		free(f);
		fprintf(stderr, "%s: out of memory for debuginfod; using local files only\n", progname);
		return NULL;
	}
	f->progname = progname;
	f->lib = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
	if (f->lib)
	{
		begin = (debuginfod_client * (*) (void)) dlsym(f->lib, "debuginfod_begin");
		set_progress = (void (*) (debuginfod_client *, progress_fn)) dlsym(f->lib, "debuginfod_set_progressfn");
		f->find_debuginfo = (int (*) (debuginfod_client *, const unsigned char *, int, char **))
			dlsym(f->lib, "debuginfod_find_debuginfo");
		f->find_executable = (int (*) (debuginfod_client *, const unsigned char *, int, char **))
			dlsym(f->lib, "debuginfod_find_executable");
		f->end = (void (*) (debuginfod_client *)) dlsym(f->lib, "debuginfod_end");
		if (begin && set_progress && f->find_debuginfo && f->find_executable && f->end &&
			(f->client = begin()) != NULL)
			set_progress(f->client, progress);
	}
	if (f->client == NULL)
	{
		fprintf(stderr, "%s: DEBUGINFOD_URLS is set but libdebuginfod.so.1 could not be loaded (%s); "
				"using local files only (Debian: apt-get install libdebuginfod1)\n",
				progname, f->lib ? "no client" : dlerror());
		hp_fetch_close(f);
		return NULL;
	}
	setenv("DEBUGINFOD_TIMEOUT", "5", 0);
	/* libdebuginfod retries twice by default: three timeouts before a failure */
	setenv("DEBUGINFOD_RETRY_LIMIT", "0", 0);
	maxtime = max && atof(max) > 0 ? atof(max) : 120;
	return f;
}

typedef int (*find_fn) (debuginfod_client *, const unsigned char *, int, char **);

static int
ask(hp_fetch *f, find_fn find, const char *what, const unsigned char *id, size_t len, char **path)
{
	int			fd;

	if (f->down)
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &started);
	/* only for this call: libdw must never ask on its own, unbounded */
	setenv("DEBUGINFOD_URLS", f->urls, 1);
	fd = find(f->client, id, (int) len, path);
	unsetenv("DEBUGINFOD_URLS");
	if (fd >= 0)
	{
		f->found++;
		return fd;
	}
	*path = NULL;
	if (fd == -ENOENT)
	{
		f->absent++;
		return -1;
	}
	f->down = true;
	fprintf(stderr, "%s: debuginfod (%s) gave no %s after %.1f s: %s; asking it no more, "
			"objects without local debug info keep labels such as \"postgres+0x4a3b0\"\n",
			f->progname, f->urls, what, elapsed(), strerror(-fd));
	return -1;
}

static int
executable(void *arg, const unsigned char *id, size_t len, char **path)
{
	hp_fetch   *f = arg;

	return ask(f, f->find_executable, "executable", id, len, path);
}

static int
debuginfo(void *arg, const unsigned char *id, size_t len, char **path)
{
	hp_fetch   *f = arg;

	return ask(f, f->find_debuginfo, "debug info", id, len, path);
}

/*
 * Remove a refused file from libdebuginfod's cache: CACHE/BUILDID/debuginfo
 * or .../executable, the only files it returns; then its folder if empty.
 */
static void
discard(void *arg, const char *path)
{
	hp_fetch   *f = arg;
	const char *name = strrchr(path, '/');
	const char *dir;
	char	   *parent;

	f->refused++;
	for (dir = name; dir && dir > path && dir[-1] != '/'; dir--)
		;
	if (name == NULL || dir == NULL || dir == name || strspn(dir, "0123456789abcdef") != (size_t) (name - dir) ||
		(strcmp(name, "/debuginfo") != 0 && strcmp(name, "/executable") != 0))
	{
		fprintf(stderr, "%s: debuginfod gave the refused file %s, not in its cache's layout: left there\n",
				f->progname, path);
		return;
	}
	if (unlink(path) != 0)
	{
		fprintf(stderr, "%s: could not remove the refused file %s from the debuginfod cache: %s\n",
				f->progname, path, strerror(errno));
		return;
	}
	if ((parent = strndup(path, (size_t) (name - path))) != NULL)
	{
		(void) rmdir(parent);
		free(parent);
	}
}

void
hp_fetch_attach(hp_fetch *f, hp_symbolizer *s)
{
	hp_fetcher	fetcher = {executable, debuginfo, discard, f};

	hp_symbolizer_fetch(s, &fetcher);
}

void
hp_fetch_close(hp_fetch *f)
{
	if (f == NULL)
		return;
	if (f->found)
		fprintf(stderr, "%s: debuginfod: %d file%s found by build-id%s, %d not there\n",
				f->progname, f->found, f->found == 1 ? "" : "s",
				f->refused ? " (some refused: another build's)" : "", f->absent);
	if (f->client)
		f->end(f->client);
	if (f->lib)
		dlclose(f->lib);
	free(f->urls);
	free(f);
}
