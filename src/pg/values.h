/*
 * values.h -- value types that several layers pass around, with no
 * behaviour: a leaf header, so that including it never makes a file depend
 * on the layer that produces the value (shmem.c carries a peak without
 * standing above peak.c; a unit conversion needs no decision layer).
 */
#ifndef HEAPPROF_VALUES_H
#define HEAPPROF_VALUES_H

#include "datatype/timestamp.h"

/* A process's peak, as peak.c tracks it and a status answer carries it. */
typedef struct hpg_peak
{
	bool		available;		/* this process tracks its peak */
	int64		bytes;			/* the most it held since profiling was enabled or reset */
	int64		profile_bytes;	/* what it held when the peak profile was taken */
	TimestampTz taken_at;		/* 0: no peak profile */
	int			failed_errno;	/* the last attempt to write one failed with it; 0: it did not */
} hpg_peak;

/* jemalloc and the engine count Unix microseconds; PostgreSQL counts from 2000. */
#define HPG_UNIX_EPOCH_USECS ((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY)
#define HPG_TIMESTAMP_OF_UNIX(us) ((TimestampTz) (us) - HPG_UNIX_EPOCH_USECS)
#define HPG_UNIX_OF_TIMESTAMP(t) ((uint64) ((t) + HPG_UNIX_EPOCH_USECS))

#endif
