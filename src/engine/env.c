/*
 * env.c -- the engine's two calls into its caller: errors and interrupts.
 *
 * Every failure of an analysis (malformed input, memory, a symbolizer that
 * cannot load maps) ends here, as one message through env->error, so the
 * stages never check return codes of allocations or unwind by hand; and long
 * loops count the work they do, so a backend can cancel a query at a steady
 * pace whatever the shape of the input (see env.h).
 */
#include "env.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void
hp_fail(hp_env *env, hp_status code, const char *fmt,...)
{
	char		message[1024];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	env->error(env->ctx, code, message);
	/* env->error must not return */
	abort();
}

void
hp_work(hp_env *env, size_t units)
{
	env->work += units;
	if (env->work >= HP_WORK_QUANTUM)
	{
		env->work = 0;
		if (env->interrupt)
			env->interrupt(env->ctx);
	}
}

void *
hp_malloc(void *ctx, size_t size)
{
	void	   *p = malloc(size);

	if (p == NULL)
		hp_fail(ctx, HP_ENOMEM, "out of memory (%zu bytes)", size);
	return p;
}

void
hp_free(void *ctx, void *ptr)
{
	(void) ctx;
	free(ptr);
}
