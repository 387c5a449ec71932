/*
 * env.h -- what the engine needs from the program that runs it.
 *
 * The engine is a library: it never calls malloc for analysis memory, never
 * prints, never exits and never polls for signals itself.  The caller injects
 * allocation, error reporting, interrupt checks and pattern matching, as
 * PostGIS's liblwgeom takes lwgeom_set_handlers().  In a backend the memory
 * comes from a MemoryContext and an error is an ereport(ERROR), so
 * PostgreSQL's own cleanup frees everything; the commands plug in malloc and
 * a message plus exit; tests and the fuzzer longjmp back to their harness.
 */
#ifndef HEAPPROF_ENV_H
#define HEAPPROF_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Engine status codes. */
typedef enum hp_status
{
	HP_OK = 0,
	HP_EFORMAT,					/* input is not a heap profile, or malformed */
	HP_ENOMEM,					/* memory ran out */
	HP_ELIMIT,					/* input exceeds a bound (e.g. frames per stack) */
	HP_EBUDGET					/* the analysis would take more than env->limit */
} hp_status;

typedef struct hp_env
{
	/* Never returns NULL: on failure it calls error (or does not return). */
	void	   *(*alloc) (void *ctx, size_t size);
	void		(*free) (void *ctx, void *ptr);
	/* Must not return. */
	void		(*error) (void *ctx, hp_status code, const char *message);
	/* May be NULL; may not return (a cancelled query). */
	void		(*interrupt) (void *ctx);
	/* Does compiled pattern match s?  May be NULL when no pattern is given. */
	bool		(*match) (void *ctx, void *pattern, const char *s);
	void	   *ctx;
	size_t		work;			/* units of work since interrupt was last called */

	/*
	 * The memory budget of the analyses run with this env: the arenas count
	 * every byte they take from alloc and give back to free in taken, and
	 * a request that would bring it above limit fails with HP_EBUDGET before
	 * alloc is called.  limit 0 is no budget.  The caller may start taken
	 * at what it already holds for the analysis (the dump's text).
	 */
	size_t		limit;
	size_t		taken;
} hp_env;

/* Work units (frames, lines, addresses, bytes / 64 ...) between interrupt checks. */
#define HP_WORK_QUANTUM 65536

/* Report an error through env->error; never returns. */
extern void hp_fail(hp_env *env, hp_status code, const char *fmt,...)
			__attribute__((noreturn, format(printf, 3, 4)));

/* Count units of work done; calls env->interrupt every HP_WORK_QUANTUM units. */
extern void hp_work(hp_env *env, size_t units);

/*
 * alloc and free for the commands: the C heap; running out of it is raised
 * through ctx, which must be the hp_env itself.
 */
extern void *hp_malloc(void *ctx, size_t size);
extern void hp_free(void *ctx, void *ptr);

#endif
