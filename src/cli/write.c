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

#include "cli_engine.h"
#include "pg_heapprof.h"

/*
 * The formats, their files' extensions, and what they are: "t" lines for
 * people (every field passed the terminal sink), "d" a document of text,
 * "b" bytes that no terminal should receive.  The last, timeline, is
 * --timeline's SVG, no format of --report.
 */
static const char *const formats[][3] = {{"dot", "dot", "d"}, {"svg", "svg", "d"}, {"flamegraph", "svg", "d"},
{"collapsed", "collapsed", "t"}, {"pprof", "pb.gz", "b"}, {"raw", "heap", "b"}, {"text", "txt", "t"},
{"top", "top", "t"}, {"timeline", "svg", "d"}};

static const char *
format_kind(const char *format)
{
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (strcmp(formats[i][0], format) == 0)
			return formats[i][2];
	return "b";
}

bool
terminal_format(const char *format)
{
	return strcmp(format_kind(format), "t") == 0;
}

bool
report_format_known(const char *format)
{
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]) - 1; i++)
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
	bool		graphviz = strcmp(o->format, "svg") == 0 && o->svg_dot;
	FILE	   *f;

	if (graphviz && !(out && isatty(STDOUT_FILENO)))
	{
		if (draw_svg(data, len, out ? "/dev/stdout" : path))
			return true;
		fprintf(stderr, "%s: error: dot could not draw the graph into \"%s\"\n", progname,
				out ? "/dev/stdout" : path);
		return false;
	}
	/* a terminal gets text through its sink, never a binary format nor Graphviz's output */
	if (out && isatty(STDOUT_FILENO))
	{
		if (strcmp(format_kind(o->format), "b") == 0 || graphviz)
		{
			fprintf(stderr, "%s: error: not writing %s to a terminal\n%s: hint: use -o FILE or a redirection\n",
					progname, o->format, progname);
			return false;
		}
		return hp_cli_put_terminal(data, len);
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
