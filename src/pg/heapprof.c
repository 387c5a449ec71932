/*
 * heapprof.c -- module entry point.
 *
 * heapprof puts jemalloc's heap profiler behind SQL.  This file only holds
 * what PostgreSQL needs to load the module; the SQL functions live with their
 * purpose: control.c (status and switches), reports.c (profiles as rows).
 */
#include "postgres.h"

#include "fmgr.h"

PG_MODULE_MAGIC;
