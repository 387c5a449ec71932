/*
 * statements.h -- capturing statements that leave memory behind.
 */
#ifndef HEAPPROF_STATEMENTS_H
#define HEAPPROF_STATEMENTS_H

/* _PG_init: the capture settings and the executor and utility hooks. */
extern void hpg_statements_init(void);

#endif
