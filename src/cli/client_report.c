/*
 * client_report.c -- run heapprof-report (installed next to pg_heapprof) on
 * a raw dump fed through a pipe: no temporary file, no shell.
 */
#include "client_report.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* heapprof-report's option for a pg_heapprof format, or NULL */
static const char *
report_option(const char *format)
{
	static const char *const map[][2] = {
		{"text", "--text"}, {"top", "--text"}, {"dot", "--dot"}, {"collapsed", "--collapsed"},
		{"pprof", "--pprof"}, {"flamegraph", "--flamegraph"}, {"svg", "--flamegraph"},
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(format, map[i][0]) == 0)
			return map[i][1];
	return NULL;
}

/* "--name=value", malloc'ed */
static char *
option_with(const char *name, const char *value)
{
	size_t		n = strlen(name) + strlen(value) + 1;
	char	   *s = malloc(n);

	if (s)
		snprintf(s, n, "%s%s", name, value);
	return s;
}

/* heapprof-report in pg_heapprof's directory, else from PATH */
static void
exec_report(char **argv)
{
	static char path[PATH_MAX];
	ssize_t		n = readlink("/proc/self/exe", path, sizeof(path) - sizeof("heapprof-report"));
	char	   *slash;

	if (n > 0)
	{
		path[n] = '\0';
		if ((slash = strrchr(path, '/')) != NULL)
		{
			strcpy(slash + 1, "heapprof-report");
			execv(path, argv);
		}
	}
	execvp("heapprof-report", argv);
}

int
hp_client_report(const char *progname, const char *raw, size_t len,
				 const char *format, const char *const opts[4], const char *path)
{
	const char *option = report_option(format);
	char	   *argv[8];
	char	   *focus = NULL;
	char	   *ignore = NULL;
	int			argc = 0;
	int			fds[2];
	int			out = STDOUT_FILENO;
	int			status;
	pid_t		child = -1;
	bool		ok = true;

	if (option == NULL)
	{
		fprintf(stderr, "%s: error: format \"%s\" cannot be symbolized on the client\n", progname, format);
		return -1;
	}
	argv[argc++] = "heapprof-report";
	argv[argc++] = (char *) option;
	if (opts[0] && strcmp(opts[0], "false") == 0)
		argv[argc++] = "--nofold";
	if (opts[1] && strcmp(opts[1], "true") == 0)
		argv[argc++] = "--inuse_objects";
	if (opts[2] && (argv[argc++] = focus = option_with("--focus=", opts[2])) == NULL)
		ok = false;
	if (opts[3] && (argv[argc++] = ignore = option_with("--ignore=", opts[3])) == NULL)
		ok = false;
	argv[argc++] = "/dev/stdin";
	argv[argc] = NULL;
	if (ok && path && strcmp(path, "-") != 0 &&
		(out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
	{
		fprintf(stderr, "%s: error: could not open \"%s\": %s\n", progname, path, strerror(errno));
		ok = false;
	}
	if (ok && pipe(fds) < 0)
		ok = false;
	if (ok && (child = fork()) < 0)
		fprintf(stderr, "%s: error: could not start heapprof-report: %s\n", progname, strerror(errno));
	if (ok && child == 0)
	{
		close(fds[1]);
		if (dup2(fds[0], STDIN_FILENO) < 0 || dup2(out, STDOUT_FILENO) < 0)
			_exit(127);
		exec_report(argv);
		fprintf(stderr, "%s: error: could not run heapprof-report: %s\n", progname, strerror(errno));
		_exit(127);
	}
	if (ok)
	{
		close(fds[0]);
		signal(SIGPIPE, SIG_IGN);
		for (size_t done = 0; ok && done < len;)
		{
			ssize_t		n = child > 0 ? write(fds[1], raw + done, len - done) : -1;

			if (n > 0)
				done += (size_t) n;
			else if (n < 0 && errno != EINTR)
				ok = false;
		}
		close(fds[1]);
		while (child > 0 && waitpid(child, &status, 0) < 0)
			if (errno != EINTR)
				child = -1;
		ok = ok && child > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	}
	if (out != STDOUT_FILENO)
		close(out);
	free(focus);
	free(ignore);
	return ok ? 0 : -1;
}
