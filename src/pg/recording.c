/*
 * recording.c -- jemalloc's record of recent sampled allocations, on while needed.
 *
 * jemalloc 5.3 can keep its most recent sampled allocations, each with its
 * stack, size, allocation time and, once freed, free time
 * (experimental.prof_recent).  Two features read them: a window of
 * heapprof_allocations() on this process, asked for by another backend, and
 * statement captures (heapprof.capture_min_growth).  The record is one per
 * process: it holds heapprof.recent_allocations entries while either needs
 * it, and is switched off (which drops the entries) when none does.  A
 * window ends at a deadline the target keeps itself, so a requester that is
 * cancelled or dies never leaves it recording.  Plain C: the target of a
 * request runs it.
 */
#include "postgres.h"

#include <fcntl.h>
#include <unistd.h>

#include "utils/guc.h"

#include "jemalloc.h"
#include "recording.h"

static int	records = 10000;
static int64 window_until;		/* jemalloc's clock, ns; 0: no window open */
static bool captures;
static int64 in_force;			/* what heapprof last set; jemalloc's setting at start otherwise */
static bool looked;

static int	apply(void);

static void
assign_records(int newval, void *extra)
{
	records = newval;
	(void) apply();
}

void
hpg_recording_init(void)
{
	DefineCustomIntVariable("heapprof.recent_allocations",
							"Sampled allocations a process records for heapprof_allocations() and statement captures.",
							"Each costs about 100 bytes while recording; older ones are dropped first.",
							&records,
							10000, 100, 1000000,
							PGC_SUSET, 0,
							NULL, assign_records, NULL);
}

static int
apply(void)
{
	int64		want;
	int			rc = 0;

	if (!looked)
	{
		looked = true;
		if (hpj_recent_max(-1, &in_force) != 0)
			in_force = 0;
	}
	want = (captures || window_until != 0) ? records : 0;
	if (want != in_force && (rc = hpj_recent_max(want, NULL)) == 0)
		in_force = want;
	return rc;
}

int
hpg_recording_open(int64 until_ns)
{
	window_until = Max(window_until, until_ns);
	return apply();
}

void
hpg_recording_for_captures(bool on)
{
	captures = on;
	(void) apply();
}

bool
hpg_recording_overdue(void)
{
	return window_until != 0 && hpj_clock_ns() > window_until;
}

void
hpg_recording_serve(void)
{
	if (hpg_recording_overdue())
	{
		window_until = 0;
		(void) apply();
	}
}

int
hpg_recording_dump(const char *path)
{
	int			fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | PG_BINARY, S_IRUSR | S_IWUSR);
	int			rc;

	if (fd < 0)
		return errno;
	rc = hpj_recent_dump(fd);
	if (close(fd) != 0 && rc == 0)
		rc = errno;
	return rc;
}
