/*
 * write.c -- a report's bytes into a file or onto standard output, and the
 * formats that name them.  svg is Graphviz's drawing of the dot graph when
 * "dot" is installed, fed through a pipe: no shell, no file.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pg_heapprof.h"

/* The formats and their files' extensions. */
static const char *const formats[][2] = {{"dot", "dot"}, {"svg", "svg"}, {"flamegraph", "svg"},
{"collapsed", "collapsed"}, {"pprof", "pb.gz"}, {"raw", "heap"}, {"text", "txt"}, {"top", "top"}};

bool
report_format_known(const char *format)
{
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (strcmp(formats[i][0], format) == 0)
			return true;
	return false;
}

/* The file name extension of a format's file */
const char *
format_extension(const char *format)
{
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (strcmp(formats[i][0], format) == 0)
			return formats[i][1];
	return "out";
}

/* Run argv with stdin from fd_in (or inherited if < 0); its exit status, or -1. */
static int
run_program(char *const argv[], int fd_in)
{
	pid_t		child = fork();
	int			status;

	if (child < 0)
		return -1;
	if (child == 0)
	{
		if (fd_in >= 0 && dup2(fd_in, STDIN_FILENO) < 0)
			_exit(127);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (fd_in >= 0)
		close(fd_in);
	while (waitpid(child, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool
have_dot(void)
{
	char	   *const argv[] = {"dot", "-V", NULL};
	pid_t		child = fork();
	int			status;

	if (child == 0)
	{
		int			null = open("/dev/null", O_WRONLY);

		if (null >= 0)
		{
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	return child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) &&
		WEXITSTATUS(status) == 0;
}

/* Graphviz draws the dot graph into path. */
static bool
draw_svg(const char *data, size_t len, const char *path)
{
	char	   *argv[] = {"dot", "-Tsvg", "-o", (char *) path, NULL};
	int			fds[2];
	pid_t		child;
	int			status;
	bool		ok;

	if (pipe(fds) < 0)
		return false;
	child = fork();
	if (child < 0)
	{
		close(fds[0]);
		close(fds[1]);
		return false;
	}
	if (child == 0)
	{
		close(fds[1]);
		exit(run_program(argv, fds[0]) == 0 ? 0 : 1);
	}
	close(fds[0]);
	signal(SIGPIPE, SIG_IGN);
	ok = true;
	for (size_t done = 0; done < len && ok;)
	{
		ssize_t		w = write(fds[1], data + done, len - done);

		if (w < 0 && errno != EINTR)
			ok = false;
		else if (w > 0)
			done += (size_t) w;
	}
	close(fds[1]);
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	return ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* Write a report's bytes to path (NULL or "-": standard output); false with errno's story printed. */
bool
put(const cli_opts *o, const char *data, size_t len, const char *path)
{
	bool		out = path == NULL || strcmp(path, "-") == 0;
	FILE	   *f;

	if (strcmp(o->format, "svg") == 0 && o->svg_dot)
	{
		if (draw_svg(data, len, out ? "/dev/stdout" : path))
			return true;
		fprintf(stderr, "%s: error: dot could not draw the graph into \"%s\"\n", progname,
				out ? "/dev/stdout" : path);
		return false;
	}
	f = out ? stdout : fopen(path, "wb");
	if (f == NULL || fwrite(data, 1, len, f) != len || (out ? fflush(f) : fclose(f)) != 0)
	{
		fprintf(stderr, "%s: error: could not write \"%s\": %s\n", progname,
				out ? "standard output" : path, strerror(errno));
		if (f && !out)
			fclose(f);
		return false;
	}
	return true;
}
