/*
 * pg_heapprof.h -- the stages of pg_heapprof and what they hand each other.
 *
 * The client runs in stages, as Go pprof's driver does: the command line
 * becomes a validated cli_opts (options.c); every server, one or several,
 * is a member of a fleet that connects and asks its server in a thread of
 * its own (connect.c: one server; fleet.c: the threads and the operations);
 * then the main thread prints and writes what they brought back (output.c;
 * merge.c sums stacks for --merge, and the servers' leak suspects for
 * --growth --merge; cli_engine.c renders --client-symbols with the engine,
 * as heapprof-report does; write.c knows the formats and puts a report's
 * bytes in a file, through Graphviz for svg).  One server
 * is a fleet of one, so each operation exists once.  common.c, which every
 * stage uses, uses none of them: the stages form no circle.
 */
#ifndef HEAPPROF_PG_HEAPPROF_H
#define HEAPPROF_PG_HEAPPROF_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "libpq-fe.h"

/* What to do; --list unless another action is named. */
typedef enum cli_action
{
	ACT_LIST,
	ACT_ENABLE,
	ACT_DISABLE,
	ACT_REPORT,
	ACT_LEAK,					/* --seconds */
	ACT_CAPTURES,
	ACT_SETUP,
	ACT_GROWTH,					/* --growth: leak suspects from the heap history */
	ACT_TIMELINE				/* --timeline: the heap history as an SVG */
} cli_action;

/* The actions that read the heap history the server keeps (extension 1.4). */
#define HISTORY_ACTION(a) ((a) == ACT_GROWTH || (a) == ACT_TIMELINE)

/* The command line, validated; read (never written) by every thread. */
typedef struct cli_opts
{
	cli_action	action;
	const char *format;			/* --report; NULL: none given */
	const char *pid;			/* --pid: one process of one server */
	const char *type;			/* --backend-type: "all", a type or a comma list */
	const char *base_type;
	bool		merge;
	const char *group_by;		/* --group-by: "query", "context" or "function" */
	bool		drop_negative;
	bool		objects;
	bool		peak;
	bool		client_symbols;
	bool		svg_dot;		/* svg is Graphviz's drawing of the dot graph */
	const char *fold;			/* "true" or "false", as SQL takes it */
	const char *focus;
	const char *ignore;
	void	   *focus_re;		/* --client-symbols: compiled here */
	void	   *ignore_re;
	const char *window;			/* --allocations: seconds, as given */
	const char *stored;			/* --stored: a stored profile's name */
	const char *output;			/* a file, or with per-process reports a directory */
	int			seconds;		/* --seconds (leak mode) */
	/* --growth and --timeline: their arguments as SQL takes them */
	const char *since;			/* --since: an interval */
	bool		per_process;	/* --per-process */
	const char *min_rate;		/* --min-rate: bytes per hour, as pg_size_bytes reads it */
	const char *kinds;			/* --kinds: growth's kind, or all */
	const char *kind;			/* --kind: the timeline's kind */
	const char *series;			/* --series: the timeline's lines, 1 to 50 */
	/* connections */
	const char *keywords[8];	/* common to every server */
	const char *values[8];
	int			nkw;
	bool		prompt;			/* -W */
	bool		may_prompt;		/* one server, a terminal, neither -w nor -W */
	char	  **conninfos;		/* -d, --servers, arguments; none: libpq's defaults */
	int			nconn;
} cli_opts;

/* What went wrong with a server or a process: the server's message and hint. */
typedef struct problem
{
	char	   *msg;
	char	   *hint;
} problem;

/* One chosen process of a server (or the stored profile of --stored), and what it answered. */
typedef struct target
{
	const char *pid;			/* NULL: --stored */
	const char *type;			/* NULL: chosen by --pid */
	bool		base;			/* --base-type: subtracted in the merge */
	PGresult   *res;
	problem		pr;
} target;

typedef struct server
{
	const cli_opts *o;
	const char *conninfo;		/* NULL: libpq's defaults */
	char		label[256];		/* host:port, or "server N" (its place on the command line) */
	PGconn	   *conn;
	bool		standby;
	PGcancel   *volatile cancel;	/* while an allocation window may run: for Ctrl-C */
	char		schema[2 * 64 + 3]; /* the extension's, quoted */
	const char *stored_arg;		/* the reports' stored-profile argument's name */
	problem		pr;				/* could not connect, no extension, ... */
	PGresult   *procs;			/* heapprof_backends(), captures, status or growth rows */
	target	   *t;
	int			nt;
	pthread_t	thread;
} server;

typedef struct fleet
{
	server	   *sv;
	int			n;
} fleet;

/*
 * A leak suspect of --growth --merge: one (kind, name) summed over the
 * servers it grows on; kind and name point into their results.
 */
typedef struct suspect
{
	const char *kind;
	const char *name;
	long long	rate;			/* bytes_per_hour */
	long long	outside_rate;	/* outside_bytes_per_hour */
	bool		outside;		/* outside_contexts */
	double		steadiness;
	double		since;			/* growing_since, Unix seconds; NAN: none */
	long long	bytes;
	long long	processes;
	int			servers;
} suspect;

/* The columns of heapprof_growth's rows as fleet.c asks for them. */
enum
{
	G_KIND, G_NAME, G_RATE, G_OUTSIDE, G_OUTSIDE_RATE, G_STEADINESS, G_SINCE, G_BYTES, G_PROCESSES,
	G_PID, G_START
};

/* A line of a top report, as output.c and merge.c print it. */
#define TOP_LINE "%4s %14s %7s %14s %7s  %s\n"

/* common.c */
extern const char *progname;
extern volatile sig_atomic_t interrupted;
extern void fail(const char *fmt,...) __attribute__((format(printf, 1, 2), noreturn));
extern void bad_usage(const char *fmt,...) __attribute__((format(printf, 1, 2), noreturn));
extern char *xstrdup(const char *s);
extern void *xcalloc(size_t n, size_t size);
extern const char *cell(const PGresult *res, int row, int col);

/* write.c */
extern bool report_format_known(const char *format);
extern const char *format_extension(const char *format);
extern bool terminal_format(const char *format);
extern bool have_dot(void);
extern bool put(const cli_opts *o, const char *data, size_t len, const char *path);

/* hints.c */
extern char *cli_hint(const cli_opts *o, const PGresult *res, const char *role);

/* options.c */
extern void parse_options(int argc, char **argv, cli_opts *o);
extern void free_options(cli_opts *o);
extern bool type_in(const char *type, const char *list);

/* connect.c */
extern void ask_password(void);
extern bool connect_server(server *s);
extern PGresult *query(server *s, problem *pr, const char *sql, int nparams,
					   const char *const *values, int binary);
extern PGresult *ask_window(server *s, problem *pr, const char *sql, int nparams,
							const char *const *values, int binary);
extern void set_problem(problem *pr, const char *msg, const char *hint);
extern void clear_problem(problem *pr);

/* fleet.c */
extern void fleet_init(fleet *f, const cli_opts *o);
extern void fleet_gather(fleet *f);
extern void fleet_free(fleet *f);

/* merge.c */
extern double *merge_totals(const fleet *f, double *sum);
extern bool write_merged(const fleet *f);
extern size_t merge_growth(const fleet *f, suspect **out);

/* output.c */
extern bool report_problem(const problem *pr, const char *where);
extern bool print_problems(const fleet *f);
extern bool print_results(const fleet *f);

#endif
