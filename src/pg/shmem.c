/*
 * shmem.c -- heapprof's shared memory.
 *
 * Locking protocol.  One spinlock, mutex, protects every field of
 * hpg_shared after start-up; it is held only to copy a few fields, never
 * across a system call, an allocation or an error.  A slot changes state
 * only under the mutex:
 *
 *   FREE -> PENDING          requester fills it
 *   PENDING -> WORKING       target takes it (checks the pid is its own)
 *   WORKING -> DONE          target answers; requester reads and frees it
 *   PENDING -> FREE          requester gives up before the target took it
 *   WORKING -> ABANDONED     requester gives up while the target works
 *   ABANDONED -> FREE        target finishes, removes any dump file
 *   any -> FREE              a requester finds the target or the requester
 *                            gone (reclaim in request.c)
 *
 * so neither side ever writes into the other's request.  Waiters sleep on
 * cv, which is broadcast whenever a slot is answered or freed.  The
 * published states are per proc number; each process writes only its own
 * entry's pid, active and allocated, requesters only rung_pid and rings.
 */
#include "postgres.h"

#include "access/twophase.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/procarray.h"
#include "storage/shmem.h"

#include "compat.h"
#include "shmem.h"

hpg_shared *hpg_shmem;

static shmem_request_hook_type prev_shmem_request_hook;
static shmem_startup_hook_type prev_shmem_startup_hook;

static int
nprocs_needed(void)
{
	return MaxBackends + NUM_AUXILIARY_PROCS + max_prepared_xacts;
}

static Size
shared_size(void)
{
	return add_size(offsetof(hpg_shared, procs),
					mul_size(nprocs_needed(), sizeof(hpg_published)));
}

static void
request_shmem(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(shared_size());
}

static void
startup_shmem(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	hpg_shmem = ShmemInitStruct("heapprof", shared_size(), &found);
	if (!found)
	{
		memset(hpg_shmem, 0, shared_size());
		SpinLockInit(&hpg_shmem->mutex);
		ConditionVariableInit(&hpg_shmem->cv);
		hpg_shmem->nprocs = nprocs_needed();
	}
	LWLockRelease(AddinShmemInitLock);
}

void
hpg_shmem_init(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = request_shmem;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = startup_shmem;
}

hpg_published *
hpg_published_of(int procno)
{
	if (hpg_shmem == NULL || procno < 0 || procno >= hpg_shmem->nprocs)
		return NULL;
	return &hpg_shmem->procs[procno];
}

void
hpg_publish_state(void)
{
	hpj_status	st;
	hpg_published *p;

	if (hpg_shmem == NULL || MyProc == NULL)
		return;
	hpj_get_status(&st);
	SpinLockAcquire(&hpg_shmem->mutex);
	p = hpg_published_of(hpg_procno(MyProc));
	if (p)
	{
		p->pid = MyProcPid;
		p->active = st.active;
		p->allocated = st.have_stats ? (int64) st.allocated : -1;
		p->sampling_since = st.sampling_since;
	}
	SpinLockRelease(&hpg_shmem->mutex);
}

bool
hpg_published_active(int pid, bool *active)
{
	PGPROC	   *proc = BackendPidGetProc(pid);
	hpg_published *p;
	bool		known = false;

	if (proc == NULL)
		proc = AuxiliaryPidGetProc(pid);
	if (hpg_shmem == NULL || proc == NULL)
		return false;
	SpinLockAcquire(&hpg_shmem->mutex);
	p = hpg_published_of(hpg_procno(proc));
	if (p && p->pid == pid)
	{
		*active = p->active;
		known = true;
	}
	SpinLockRelease(&hpg_shmem->mutex);
	return known;
}
