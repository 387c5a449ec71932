/*
 * test.h -- a minimal harness for the engine's unit tests (header only).
 *
 * Each tests/test_*.c is a standalone program: its cases print "ok NAME" or
 * "FAIL NAME: why", and it exits non-zero when one failed.  The engine runs
 * on a test environment: malloc with counters (and an optional failure after
 * N allocations), errors recorded and longjmp'ed back to the case, so a
 * case can expect an error or detect an unexpected one.  Golden files live
 * in testdata/; HP_UPDATE_GOLDEN=1 rewrites them.
 */
#ifndef HEAPPROF_TEST_H
#define HEAPPROF_TEST_H

#include "engine/report.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef TESTDATA
#define TESTDATA "testdata"
#endif

static int	t_failed;
static int	t_passed;

static inline void
t_ok(const char *name)
{
	printf("ok %s\n", name);
	t_passed++;
}

__attribute__((format(printf, 2, 3)))
static inline void
t_fail(const char *name, const char *fmt,...)
{
	va_list		ap;

	printf("FAIL %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	t_failed++;
}

/*
 * Cases that take seconds (cost ratios, huge inputs) run only when HP_LONG=1,
 * which make check-bounded sets, so that make check stays fast.
 */
static inline bool
t_long(void)
{
	const char *v = getenv("HP_LONG");

	return v != NULL && strcmp(v, "1") == 0;
}

/* One check: ok when cond holds, else FAIL with the message. */
#define lengthof(a) (sizeof(a) / sizeof((a)[0]))
#define T_CHECK(name, cond, ...) \
	do { if (cond) t_ok(name); else t_fail(name, __VA_ARGS__); } while (0)

/* Blocks that profiles point into, freed by t_exit. */
static char *t_blocks[1024];
static size_t t_nblocks;

static inline int
t_exit(void)
{
	while (t_nblocks > 0)
		free(t_blocks[--t_nblocks]);
	fflush(stdout);
	return t_failed ? 1 : 0;
}

/* ---- the test environment ---- */

typedef struct t_env
{
	hp_env		env;
	jmp_buf    *jump;			/* where an error goes */
	hp_status	code;			/* the last error */
	char		message[1024];
	long		allocs;			/* live blocks */
	long		nalloc;			/* allocations so far */
	long		fail_at;		/* this allocation (1-based) fails; 0: none */
	long		interrupts;
	long		jump_at_interrupt;	/* longjmp at this interrupt; 0: never */
} t_env;

static inline void *
t_alloc(void *ctx, size_t size)
{
	t_env	   *t = ctx;
	void	   *p;

	if (t->fail_at && ++t->nalloc >= t->fail_at)
		hp_fail(&t->env, HP_ENOMEM, "injected allocation failure");
	p = malloc(size);
	if (p == NULL)
		hp_fail(&t->env, HP_ENOMEM, "out of memory");
	t->allocs++;
	return p;
}

static inline void
t_free(void *ctx, void *ptr)
{
	t_env	   *t = ctx;

	t->allocs--;
	free(ptr);
}

static inline void
t_error(void *ctx, hp_status code, const char *message)
{
	t_env	   *t = ctx;

	t->code = code;
	snprintf(t->message, sizeof(t->message), "%s", message);
	if (t->jump == NULL)
	{
		fprintf(stderr, "unexpected engine error: %s\n", message);
		abort();
	}
	longjmp(*t->jump, 1);
}

static inline void
t_interrupt(void *ctx)
{
	t_env	   *t = ctx;

	if (++t->interrupts == t->jump_at_interrupt)
	{
		t->code = HP_OK;
		snprintf(t->message, sizeof(t->message), "interrupted");
		longjmp(*t->jump, 2);
	}
}

/* Patterns are plain substrings in the tests. */
static inline bool
t_match(void *ctx, void *pattern, const char *s)
{
	return strstr(s, pattern) != NULL;
}

static inline void
t_env_init(t_env *t)
{
	memset(t, 0, sizeof(*t));
	t->env.alloc = t_alloc;
	t->env.free = t_free;
	t->env.error = t_error;
	t->env.interrupt = t_interrupt;
	t->env.match = t_match;
	t->env.ctx = t;
}

/*
 * Run fn(arg) with errors caught: 0 when it returned, 1 when it raised an
 * error (t->code, t->message), 2 when an interrupt jumped out.
 */
static inline int
t_run(t_env *t, void (*fn) (void *), void *arg)
{
	jmp_buf		jb;
	int			rc;

	t->jump = &jb;
	rc = setjmp(jb);
	if (rc == 0)
		fn(arg);
	t->jump = NULL;
	return rc;
}

/* ---- profiles ---- */

/*
 * A copy of s in a block of exactly its length, freed by t_exit: reading
 * past it is an ASan error.
 */
static inline char *
t_exact(const char *s, size_t len)
{
	char	   *p = malloc(len ? len : 1);

	memcpy(p, s, len);
	if (t_nblocks < sizeof(t_blocks) / sizeof(t_blocks[0]))
		t_blocks[t_nblocks++] = p;
	return p;
}

/* Parse text (copied to an exact-size block) into p; the status, err filled. */
static inline hp_status
t_parse(hp_arena *a, const char *text, hp_profile *p, char *err, size_t errlen)
{
	size_t		len = strlen(text);
	char	   *copy = t_exact(text, len);
	hp_status	rc;

	err[0] = '\0';
	rc = hp_parse(a, copy, len, p, err, errlen);
	return rc;
}

/*
 * Locate p without a symbolizer: names[i] for address pcs[i]; an address
 * not listed is named "0xADDR".  Names starting "je_" are the allocator's.
 * A function's start is the address with its low 8 bits cleared.
 */
typedef struct t_name
{
	uint64_t	pc;
	const char *name;
	const char *inline_name;	/* one function inlined at pc, or NULL */
} t_name;

static inline void
t_locate(hp_arena *a, const hp_profile *p, const t_name *names, size_t nnames, hp_located *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < p->nsamples; i++)
		for (uint32_t j = 0; j < p->samples[i].npcs; j++)
			hp_located_add(a, out, p->samples[i].pcs[j], NULL);
	if (out->pcs == NULL)
		out->pcs = hp_alloc(a, sizeof(uint64_t));
	out->syms = hp_alloc(a, (out->npcs + 1) * sizeof(hp_symbol));
	for (size_t i = 0; i < out->npcs; i++)
	{
		hp_symbol  *sym = &out->syms[i];
		char		buf[32];

		snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long) out->pcs[i]);
		sym->name = hp_strdup(a, buf);
		sym->start = out->pcs[i] & ~(uint64_t) 0xff;
		sym->object = "prog";	/* loaded at 0x1000 */
		sym->offset = out->pcs[i] - 0x1000;
		for (size_t k = 0; k < nnames; k++)
			if (names[k].pc == out->pcs[i])
			{
				sym->name = names[k].name;
				if (names[k].inline_name)
				{
					sym->inlines = hp_alloc(a, sizeof(char *));
					sym->inlines[0] = names[k].inline_name;
					sym->ninlines = 1;
				}
			}
		sym->allocator = strncmp(sym->name, "je_", 3) == 0;
	}
}

/* ---- golden files ---- */

static inline char *
t_read_file(const char *path, size_t *len)
{
	FILE	   *f = fopen(path, "rb");
	char	   *buf;
	long		n;

	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t) n + 1);
	if (fread(buf, 1, (size_t) n, f) != (size_t) n)
		n = 0;
	buf[n] = '\0';
	fclose(f);
	*len = (size_t) n;
	return buf;
}

/* Compare text with testdata/file (HP_UPDATE_GOLDEN=1: write it instead). */
static inline void
t_golden(const char *name, const char *file, const char *text, size_t len)
{
	char		path[512];
	size_t		glen = 0;
	char	   *golden;
	size_t		line = 1;

	snprintf(path, sizeof(path), "%s/%s", TESTDATA, file);
	if (getenv("HP_UPDATE_GOLDEN"))
	{
		FILE	   *f = fopen(path, "wb");

		if (f == NULL || fwrite(text, 1, len, f) != len || fclose(f) != 0)
			t_fail(name, "could not write %s", path);
		else
			t_ok(name);
		return;
	}
	golden = t_read_file(path, &glen);
	if (golden == NULL)
	{
		t_fail(name, "no golden file %s (make check HP_UPDATE_GOLDEN=1 writes it)", path);
		return;
	}
	for (size_t i = 0; i < len && i < glen; i++)
	{
		if (text[i] != golden[i])
		{
			t_fail(name, "differs from %s at line %zu", path, line);
			free(golden);
			return;
		}
		if (text[i] == '\n')
			line++;
	}
	if (len != glen)
		t_fail(name, "%zu bytes, %s has %zu", len, path, glen);
	else
		t_ok(name);
	free(golden);
}

#endif
