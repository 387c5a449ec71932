/*
 * objects.h -- postgres and the libraries it loaded from its pkglibdir,
 * and whether their debug info is on this machine.
 */
#ifndef HEAPPROF_OBJECTS_H
#define HEAPPROF_OBJECTS_H

#include "postgres.h"

/*
 * For heapprof_status(): the names of the objects, loaded in this backend,
 * whose debug info is missing (a text[] datum, empty when none), and in
 * *hint what to install, or NULL.
 */
extern Datum hpg_missing_debug_info(const char **hint);

#endif
