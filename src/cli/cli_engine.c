/*
 * cli_engine.c -- the engine's environment in a command-line tool (see
 * cli_engine.h): the server has its own, with palloc, PostgreSQL's regular
 * expressions and interrupts; here nothing is polled and any failure of
 * the analysis (a malformed dump, memory, zlib) ends the program, status 1.
 */
#include "cli_engine.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sink.h"

static void
env_error(void *ctx, hp_status code, const char *message)
{
	hp_cli_engine *e = ctx;

	(void) code;
	fprintf(stderr, "%s: %s%s: %s\n", e->progname, e->prefix, hp_cli_shown(e->subject ? e->subject : "", false),
			hp_cli_shown(message, true));
	exit(1);
}

static bool
env_match(void *ctx, void *pattern, const char *s)
{
	(void) ctx;
	return regexec(pattern, s, 0, NULL, 0) == 0;
}

bool
hp_cli_engine_open(hp_cli_engine *e, const char *progname, const char *prefix)
{
	e->env = (hp_env) {
		.alloc = hp_malloc,
		.free = hp_free,
		.error = env_error,
		.match = env_match,
		.ctx = e,				/* == &e->env, as hp_malloc requires */
	};
	e->progname = progname;
	e->prefix = prefix;
	e->subject = NULL;
	e->fetch = hp_fetch_open(progname);
	e->sym = hp_symbolizer_new();
	if (e->sym == NULL)
	{
		hp_fetch_close(e->fetch);
		fprintf(stderr, "%s: %scould not start the elfutils symbolizer\n", progname, prefix);
		return false;
	}
	if (e->fetch)
		hp_fetch_attach(e->fetch, e->sym);
	return true;
}

static void
print_refusal(void *arg, const char *refusal)
{
	fprintf(stderr, "%s: %s\n", ((hp_cli_engine *) arg)->progname, refusal);
}

void
hp_cli_engine_close(hp_cli_engine *e)
{
	/* the engine refused these files: their objects keep labels */
	hp_symbolizer_refusals(e->sym, print_refusal, e);
	hp_symbolizer_free(e->sym);
	hp_fetch_close(e->fetch);
}

void *
hp_cli_regex(const char *pattern, char *err, size_t errlen)
{
	regex_t    *re = malloc(sizeof(regex_t));
	int			rc;

	if (re == NULL)
	{
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	rc = regcomp(re, pattern, REG_EXTENDED | REG_NOSUB);
	if (rc != 0)
	{
		regerror(rc, re, err, errlen);
		free(re);
		return NULL;
	}
	return re;
}

const char *
hp_cli_shown(const char *s, bool lines)
{
	static char *slots[HP_CLI_SHOWN];
	static unsigned next;
	hp_sink		k = lines ? HP_SINK_LINES : HP_SINK_TERM;
	size_t		len = strlen(s);
	size_t		size = hp_sink_len(k, s, len) + 1;
	char	  **slot = &slots[next++ % HP_CLI_SHOWN];

	free(*slot);
	if ((*slot = malloc(size)) == NULL)
		return "(out of memory)";
	return hp_sink_str(k, s, len, *slot, size);
}

bool
hp_cli_put_terminal(const char *data, size_t len)
{
	for (size_t i = 0; i < len;)
	{
		char		e[HP_SINK_MAX];
		size_t		n;

		i += hp_sink_char(HP_SINK_LINES, data + i, len - i, e, &n);
		fwrite(e, 1, n, stdout);
	}
	return fflush(stdout) == 0 && !ferror(stdout);
}
