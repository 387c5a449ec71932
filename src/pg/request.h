/*
 * request.h -- asking another server process to act on its own profiler.
 */
#ifndef HEAPPROF_REQUEST_H
#define HEAPPROF_REQUEST_H

#include "shmem.h"

/* _PG_init: heapprof.request_timeout. */
extern void hpg_request_init(void);

/*
 * Ask process pid to carry out op and wait for its answer (ERROR if it
 * cannot be reached or asked, on timeout, if it exits, or if the request is
 * cancelled).  For HPG_OP_DUMP the target writes path and path's identity
 * file; the caller removes them.  An answer whose rc is not 0 is for the
 * caller to report (hpg_check_answer).
 */
extern void hpg_request(int pid, hpg_op op, int arg, const char *path, hpg_answer *out);

/* Free the slots of requests whose target or requester is gone. */
extern void hpg_reclaim_slots(void);

/* ERROR for a request the target could not carry out. */
extern void hpg_check_answer(int pid, const hpg_answer *a, const char *what);
/* The same for a request that wrote what to path: a file error, SQLSTATE as PostgreSQL's. */
extern void hpg_check_file_answer(int pid, const hpg_answer *a, const char *what, const char *path);

#endif
