/*
 * options.c -- pg_heapprof's command line, read into a cli_opts and
 * checked as a whole before any server is contacted.
 *
 * Every combination that makes no sense is refused here, with exit status
 * 2 and a message saying why, so that the later stages can take the
 * options as they are; what each stage needs (the servers' connection
 * keywords, a directory for per-process files, whether Graphviz draws svg)
 * is settled here too.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_engine.h"
#include "pg_heapprof.h"

static void
usage(FILE *f)
{
	fprintf(f,
			"%s lists PostgreSQL server processes and writes their jemalloc heap profiles.\n\n"
			"Usage:\n  %s [OPTION]... [DBNAME|CONNINFO]...\n\n"
			"Actions (default: --list):\n"
			"  -l, --list             list the processes that can be profiled, on every server\n"
			"  -e, --enable           switch profiling of the chosen processes on\n"
			"  -x, --disable          switch profiling of the chosen processes off\n"
			"  -r, --report=FORMAT    write a report of the chosen processes; FORMAT is dot,\n"
			"                         svg, flamegraph, collapsed, pprof, raw, text or top\n"
			"  -s, --seconds=N        leak mode: snapshot process --pid, wait N seconds,\n"
			"                         then write what grew (FORMAT from --report, default text)\n"
			"      --captures         list the statements that left memory behind, on every\n"
			"                         server (heapprof.capture_min_growth)\n"
			"      --setup            print what the server needs for profiling, as lines to\n"
			"                         paste (heapprof_status()'s hint); nothing when ready\n"
			"      --growth           list the leak suspects of the heap history every server\n"
			"                         keeps (heapprof.history_interval): what grew steadily,\n"
			"                         fastest first; with --merge, summed over the servers\n"
			"      --timeline         write the heap history of one server as an SVG of its\n"
			"                         fastest growers over time (to --output)\n\n"
			"The heap history (--growth, --timeline; servers at 1.4 or later):\n"
			"      --since=INTERVAL   the window up to now, a SQL interval (default 1 hour)\n"
			"      --per-process      --growth: each process's suspects, with its pid\n"
			"      --min-rate=BYTES   --growth: the least growth per hour that counts\n"
			"                         (default 1MB; a number of bytes, or with kB, MB, GB, TB)\n"
			"      --kinds=KIND       --growth: function, query, context, heap (the whole\n"
			"                         sampled heap) or all (the default: all but heap)\n"
			"      --kind=KIND        --timeline: function (default), query, context or heap\n"
			"      --series=N         --timeline: draw the N fastest growers (1 to 50, default 8)\n"
			"                         (--pid with --timeline: one process's history)\n\n"
			"What to report (default: what the chosen processes hold now):\n"
			"      --peak             the profile taken when the process held the most\n"
			"      --allocations=SECONDS  what the process allocates during a window of\n"
			"                         SECONDS (0 < SECONDS <= 3600; fractions allowed)\n"
			"      --stored=NAME      the stored profile NAME of the server (a capture, an\n"
			"                         exit dump, a persisted snapshot) instead of a process;\n"
			"                         --dump=NAME is its name before 1.2\n"
			"                         (each implies --report: any FORMAT but raw, default text)\n\n"
			"Choosing processes (a report of the heap now without any: every process):\n"
			"  -P, --pid=PID          the server process to act on (one server; see --list)\n"
			"  -t, --backend-type=TYPE  every process of TYPE (e.g. startup, walsender,\n"
			"                         walreceiver; a comma list of types, or all) on every\n"
			"                         server; reports go to one file per process,\n"
			"                         DIR/HOST_PORT-PID.EXT (DIR from --output)\n"
			"  -m, --merge            sum the chosen processes' profiles into one report;\n"
			"                         with --list, show each process's share of the sum\n"
			"      --base-type=TYPE   with --merge: subtract the sum of the TYPE processes\n"
			"      --group-by=BY      with --merge: one root per statement (query: its\n"
			"                         queryid), per memory context (context), or none\n"
			"                         (function, the default); servers at 1.2 or later\n"
			"      --drop-negative    with --base-type: shrinking stacks count as 0\n\n"
			"Options:\n"
			"  -o, --output=FILE      write the report to FILE (default: standard output);\n"
			"                         with several processes and no --merge, a directory\n"
			"                         (default .), created when it ends in /\n"
			"      --objects          count objects instead of bytes\n"
			"      --nofold           keep PostgreSQL's allocator frames (palloc & co.); by\n"
			"                         default (--fold) memory is charged to their callers\n"
			"      --focus=REGEX      only stacks with a frame matching REGEX\n"
			"      --ignore=REGEX     leave out stacks with a frame matching REGEX\n"
			"      --client-symbols   name frames here, from this machine's files and debuginfod\n"
			"                         (DEBUGINFOD_URLS), with heapprof's engine\n"
			"  -V, --version          output version information, then exit\n"
			"  -?, --help             show this help, then exit\n\n"
			"Connection options:\n"
			"  -d, --dbname=DBNAME    database name or connection string; repeat it (or give\n"
			"                         several arguments) for several servers\n"
			"  -f, --servers=FILE     connection strings, one per line (# comments)\n"
			"  -h, --host=HOSTNAME    database server host or socket directory\n"
			"  -p, --port=PORT        database server port\n"
			"  -U, --username=USER    database user name\n"
			"  -w, --no-password      never prompt for password\n"
			"  -W, --password         force password prompt\n"
			"      --connect-timeout=SECONDS  per server (default 5; 0 waits forever)\n\n"
			"-h, -p and -U apply to every server; a connection string overrides them.  The\n"
			"svg format is Graphviz's drawing of the dot graph when \"dot\" is installed,\n"
			"else the flame graph.  Needs the heapprof extension in the database, and\n"
			"heapprof in shared_preload_libraries to reach other processes.  Exit status:\n"
			"0 when every server and process answered, 1 otherwise, 2 for bad arguments.\n\n"
			"The heap history, for example:\n"
			"  %s -d 'host=db1' -d 'host=db2' --growth --merge --since '6 hours'\n"
			"  %s --timeline --since '1 day' -o timeline.svg\n",
			progname, progname, progname, progname);
}

/* Is type one of list's comma-separated types ("all": every type)? */
bool
type_in(const char *type, const char *list)
{
	size_t		len = strlen(type);

	if (list == NULL)
		return false;
	if (strcmp(list, "all") == 0)
		return true;
	for (const char *p = list;; p++)
	{
		if (strncmp(p, type, len) == 0 && (p[len] == ',' || p[len] == '\0'))
			return true;
		if ((p = strchr(p, ',')) == NULL)
			return false;
	}
}

/* Append a copy of s to the connection strings. */
static void
add_server(cli_opts *o, const char *s)
{
	/* room for the next power of two when the count reaches one */
	if ((o->nconn & (o->nconn - 1)) == 0)
	{
		o->conninfos = realloc(o->conninfos, (size_t) (o->nconn ? o->nconn * 2 : 1) * sizeof(char *));
		if (o->conninfos == NULL)
			fail("out of memory");
	}
	o->conninfos[o->nconn++] = xstrdup(s);
}

/* Connection strings from a file, one per line; blank lines and # comments skipped. */
static void
read_servers(cli_opts *o, const char *path)
{
	FILE	   *f = fopen(path, "r");
	char	   *line = NULL;
	size_t		size = 0;

	if (f == NULL)
		bad_usage("could not read \"%s\": %s", path, strerror(errno));
	while (getline(&line, &size, f) >= 0)
	{
		char	   *s = line + strspn(line, " \t");
		size_t		len = strcspn(s, "\r\n");

		while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
			len--;
		if (len == 0 || s[0] == '#')
			continue;
		s[len] = '\0';
		add_server(o, s);
	}
	free(line);
	fclose(f);
}

/* What the command line says besides cli_opts, for checking it as a whole. */
typedef struct raw_args
{
	const char *host;
	const char *port;
	const char *user;
	const char *timeout;
	bool		never_prompt;
	bool		listed;			/* --list, and no --report after it */
} raw_args;

/* --allocations: seconds above 0 and at most 3600, fractions allowed */
static const char *
window_arg(const char *arg)
{
	size_t		whole = strspn(arg, "0123456789");
	size_t		frac = 0;
	const char *rest = arg + whole;
	double		v;

	if (*rest == '.')
	{
		frac = strspn(rest + 1, "0123456789");
		rest += 1 + frac;
	}
	v = strtod(arg, NULL);
	if (*rest != '\0' || whole + frac == 0 || strlen(arg) > 20 || !(v > 0 && v <= 3600))
		bad_usage("--allocations must be a number of seconds above 0 and at most 3600 (e.g. 10 or 0.5), not \"%s\"",
				  arg);
	return arg;
}

/*
 * --min-rate: bytes per hour, a number as pg_size_bytes reads it (digits, a
 * fraction, and a unit: bytes, kB, MB, GB or TB, in any case).
 */
static const char *
min_rate_arg(const char *arg)
{
	static const char *const units[] = {"", "bytes", "kb", "mb", "gb", "tb"};
	size_t		whole = strspn(arg, "0123456789");
	const char *rest = arg + whole;
	size_t		frac = 0;

	if (*rest == '.')
	{
		frac = strspn(rest + 1, "0123456789");
		rest += 1 + frac;
	}
	rest += strspn(rest, " ");
	if (whole > 0 && whole + frac <= 18)
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (strcasecmp(rest, units[i]) == 0)
				return arg;
	bad_usage("--min-rate must be a number of bytes per hour, alone or with kB, MB, GB or TB (e.g. 1048576 or 1MB), not \"%s\"",
			  arg);
}

/* --kinds and --kind: the kinds of the heap history's names (and for --kinds, all) */
static const char *
kind_arg(const char *option, const char *arg, bool all)
{
	static const char *const kinds[] = {"function", "query", "context", "heap", "all"};

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]) - !all; i++)
		if (strcmp(arg, kinds[i]) == 0)
			return arg;
	bad_usage("%s takes %s, not \"%s\"", option,
			  all ? "function, query, context, heap or all" : "function, query, context or heap", arg);
}

static void
action_arg(cli_opts *o, raw_args *r, int c, const char *arg)
{
	switch (c)
	{
		case 'l':
		case 'e':
		case 'x':
			o->action = c == 'l' ? ACT_LIST : c == 'e' ? ACT_ENABLE : ACT_DISABLE;
			r->listed = c == 'l';
			break;
		case 10:
			o->action = ACT_CAPTURES;
			r->listed = false;
			break;
		case 14:
			o->action = ACT_SETUP;
			r->listed = false;
			break;
		case 15:
			o->action = ACT_GROWTH;
			r->listed = false;
			break;
		case 16:
			o->action = ACT_TIMELINE;
			r->listed = false;
			break;
		case 'r':
			o->format = arg;
			if (o->action == ACT_LIST)
				o->action = ACT_REPORT;
			r->listed = false;
			break;
		case 's':
			o->seconds = atoi(arg);
			if (o->seconds <= 0 || o->seconds > 86400 || strspn(arg, "0123456789") != strlen(arg))
				bad_usage("--seconds must be between 1 and 86400");
			o->action = ACT_LEAK;
			break;
	}
}

/* One option other than an action; false if c is none. */
static bool
other_arg(cli_opts *o, raw_args *r, int c, const char *arg)
{
	switch (c)
	{
		case 11:
			o->peak = true;
			break;
		case 12:
			o->window = window_arg(arg);
			break;
		case 13:
			o->stored = arg;
			break;
		case 't':
			o->type = arg;
			break;
		case 'm':
			o->merge = true;
			break;
		case 17:
			o->group_by = arg;
			break;
		case 5:
			o->base_type = arg;
			break;
		case 6:
			o->drop_negative = true;
			break;
		case 'o':
			o->output = arg;
			break;
		case 1:
			o->objects = true;
			break;
		case 8:
			o->fold = "true";
			break;
		case 2:
			o->fold = "false";
			break;
		case 9:
			o->client_symbols = true;
			break;
		case 3:
			o->focus = arg;
			break;
		case 4:
			o->ignore = arg;
			break;
		case 'd':
			add_server(o, arg);
			break;
		case 'f':
			read_servers(o, arg);
			break;
		case 'h':
			r->host = arg;	/* the last one counts, as in psql */
			break;
		case 'p':
			r->port = arg;
			break;
		case 'U':
			r->user = arg;
			break;
		case 'w':
			r->never_prompt = true;
			break;
		case 'W':
			o->prompt = true;
			break;
		case 'P':
			if (strspn(arg, "0123456789") != strlen(arg) || strlen(arg) > 10 ||
				strtoll(arg, NULL, 10) <= 0 || strtoll(arg, NULL, 10) > INT_MAX)
				bad_usage("invalid pid \"%s\"", arg);
			o->pid = arg;
			break;
		case 7:
			if (strspn(arg, "0123456789") != strlen(arg) || strlen(arg) == 0 || strlen(arg) > 6)
				bad_usage("invalid --connect-timeout \"%s\"", arg);
			r->timeout = arg;
			break;
		case 18:
			if (arg[0] == '\0' || strlen(arg) > 100)
				bad_usage("--since takes an interval, as SQL writes one (e.g. '1 hour' or '30 min')");
			o->since = arg;
			break;
		case 19:
			o->per_process = true;
			break;
		case 20:
			o->min_rate = min_rate_arg(arg);
			break;
		case 21:
			o->kinds = kind_arg("--kinds", arg, true);
			break;
		case 22:
			o->kind = kind_arg("--kind", arg, false);
			break;
		case 23:
			if (strspn(arg, "0123456789") != strlen(arg) || strlen(arg) == 0 || strlen(arg) > 2 ||
				atoi(arg) < 1 || atoi(arg) > 50)
				bad_usage("--series must be a number of lines between 1 and 50, not \"%s\"", arg);
			o->series = arg;
			break;
		default:
			return false;
	}
	return true;
}

/* --peak, --allocations and --stored choose what a report shows, and imply --report. */
static void
check_modifier(cli_opts *o, const raw_args *r, int nsv)
{
	const char *modifier = o->peak ? "--peak" : o->window ? "--allocations" : o->stored ? "--stored" : NULL;

	if (modifier == NULL)
		return;
	if (o->peak + (o->window != NULL) + (o->stored != NULL) > 1)
		bad_usage("--peak, --allocations and --stored exclude each other");
	if (o->action == ACT_LEAK)
		bad_usage("--seconds (leak mode) reports what grew since a snapshot; it cannot be combined with %s",
				  modifier);
	if (r->listed || o->action == ACT_ENABLE || o->action == ACT_DISABLE || o->action == ACT_CAPTURES)
		bad_usage("%s chooses what a report shows; use it with --report, not with --%s", modifier,
				  o->action == ACT_ENABLE ? "enable" : o->action == ACT_DISABLE ? "disable" :
				  o->action == ACT_CAPTURES ? "captures" : "list");
	o->action = ACT_REPORT;
	if (o->format == NULL)
		o->format = "text";
	if (strcmp(o->format, "raw") == 0)
		bad_usage("the raw format is a process's live heap: heapprof_dump_raw takes no peak, seconds or dump argument; choose another format for %s",
				  modifier);
	if (o->client_symbols)
		bad_usage("--client-symbols names the frames of a process's live heap (heapprof_dump_portable); it cannot be combined with %s",
				  modifier);
	if (o->stored && (o->pid || o->type || o->merge || o->base_type))
		bad_usage("--stored reports a stored profile instead of a process; it excludes --pid, --backend-type and --merge");
	if (o->stored && nsv > 1)
		bad_usage("--stored names a stored profile of one server; give one server");
}

/* --client-symbols renders here; its patterns are compiled here too. */
static void
check_client_symbols(cli_opts *o)
{
	char		err[256];

	if (!o->client_symbols)
		return;
	if (o->format && strcmp(o->format, "raw") == 0)
		bad_usage("--client-symbols names frames; the raw format has none (its addresses are what heapprof-report names)");
	if (o->merge)
		bad_usage("--client-symbols names one process's frames at a time; --merge sums stacks as each server named them");
	if (o->focus && (o->focus_re = hp_cli_regex(o->focus, err, sizeof(err))) == NULL)
		bad_usage("invalid --focus regular expression \"%s\": %s", o->focus, err);
	if (o->ignore && (o->ignore_re = hp_cli_regex(o->ignore, err, sizeof(err))) == NULL)
		bad_usage("invalid --ignore regular expression \"%s\": %s", o->ignore, err);
}

/* Which processes: --pid on one server, --backend-type on all, or --stored. */
static void
check_choice(cli_opts *o, int nsv)
{
	if (o->action == ACT_CAPTURES && (o->pid || o->type || o->merge || o->base_type || o->format))
		bad_usage("--captures lists the statement captures of every server; it takes no --pid, --backend-type, --merge or --report");
	if (o->pid && o->type)
		bad_usage("--pid and --backend-type exclude each other");
	if (o->pid && nsv > 1)
		bad_usage("--pid names a process of one server; use --backend-type with several servers");
	if (o->action == ACT_LEAK && o->pid == NULL)
		bad_usage("--seconds needs --pid");
	/* leak mode writes its report as --report says, text by default */
	if (o->action == ACT_LEAK && o->format == NULL)
		o->format = "text";
	/*
	 * A report of the heap now with no process chosen is one of every
	 * process, as --list shows them all.  Not a window (one per process,
	 * one after another) nor a peak (most processes have none): those name
	 * their processes, if need be with --backend-type=all.
	 */
	if (o->action == ACT_REPORT && o->pid == NULL && o->type == NULL && o->stored == NULL &&
		!o->peak && o->window == NULL)
		o->type = "all";
	if (o->action != ACT_LIST && o->action != ACT_CAPTURES && o->action != ACT_SETUP &&
		o->pid == NULL && o->type == NULL && o->stored == NULL)
	{
		fprintf(stderr, "%s: error: --pid is required\n%s: hint: %s --list shows the processes\n",
				progname, progname, progname);
		exit(2);
	}
	if ((o->merge || o->base_type) &&
		(o->type == NULL || o->action == ACT_ENABLE || o->action == ACT_DISABLE))
		bad_usage("--merge and --base-type need --backend-type and --list or --report");
	if (o->base_type && (!o->merge || strcmp(o->base_type, o->type) == 0))
		bad_usage("--base-type needs --merge and a type other than --backend-type");
	if (o->group_by && strcmp(o->group_by, "query") != 0 && strcmp(o->group_by, "context") != 0 &&
		strcmp(o->group_by, "function") != 0)
		bad_usage("--group-by takes query, context or function, not \"%s\"", o->group_by);
	if (o->group_by && !o->merge)
		bad_usage("--group-by groups a --merge (for one process: group_by => in SQL)");
	if (o->drop_negative && o->base_type == NULL)
		bad_usage("--drop-negative needs --base-type");
	if (o->merge && o->format && strcmp(o->format, "raw") == 0)
		bad_usage("a raw dump cannot be merged; choose another format");
}

/*
 * Reports of every process (--backend-type, or --report without --pid) go
 * to a file each in --output (default "."), a directory; one named with a
 * trailing slash is created, as mkdir -p does, when missing.
 */
static void
output_directory(cli_opts *o)
{
	struct stat st;
	char		path[PATH_MAX];
	size_t		len;
	int			err;

	if (o->output == NULL)
		o->output = ".";
	len = strlen(o->output);
	if (len > 0 && len < sizeof(path) && o->output[len - 1] == '/' && stat(o->output, &st) != 0)
	{
		memcpy(path, o->output, len + 1);
		for (char *p = path + 1; *p; p++)
			if (*p == '/')
			{
				*p = '\0';
				if (mkdir(path, 0777) != 0 && errno != EEXIST)
					break;
				*p = '/';
			}
	}
	err = stat(o->output, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
	if (err == 0)
		return;
	fprintf(stderr, "%s: error: --output must be a directory when every process gets a file of its own"
			" (--backend-type, or --report without --pid): \"%s\": %s\n", progname, o->output, strerror(err));
	if (len > 0 && o->output[len - 1] != '/')
		fprintf(stderr, "%s: hint: end it with / to have it created (-o %s/), or give --pid for one file\n",
				progname, o->output);
	exit(2);
}

/*
 * --growth and --timeline read the heap history the server keeps: no
 * process is chosen (but --timeline's --pid) and no report option applies.
 * Their defaults are the SQL functions' own.
 */
static void
check_history(cli_opts *o, int nsv)
{
	bool		growth = o->action == ACT_GROWTH;
	const char *act = growth ? "--growth" : "--timeline";
	const struct
	{
		bool		given;
		const char *name;
		const char *why;		/* NULL: none */
	}			other[] = {
		{o->format != NULL, "--report", growth ? "it prints a table" : "it writes an SVG"},
		{o->peak, "--peak", NULL},
		{o->window != NULL, "--allocations", NULL},
		{o->stored != NULL, "--stored", NULL},
		{o->type != NULL, "--backend-type", NULL},
		{o->base_type != NULL, "--base-type", NULL},
		{o->group_by != NULL, "--group-by", growth ? "--kinds chooses the kind of names" : "--kind chooses the kind of names"},
		{o->drop_negative, "--drop-negative", NULL},
		{o->objects, "--objects", NULL},
		{strcmp(o->fold, "false") == 0, "--nofold", NULL},
		{o->focus != NULL, "--focus", NULL},
		{o->ignore != NULL, "--ignore", NULL},
		{o->client_symbols, "--client-symbols", NULL},
		{growth && o->pid != NULL, "--pid", "--per-process names each suspect's process"},
		{growth && o->output != NULL, "--output", "its table goes to standard output"},
		{growth && o->kind != NULL, "--kind", "--kinds chooses the kind of names"},
		{growth && o->series != NULL, "--series", "that is --timeline's"},
		{!growth && o->merge, "--merge", "it draws the history of one server"},
		{!growth && o->per_process, "--per-process", "--pid draws one process's history"},
		{!growth && o->min_rate != NULL, "--min-rate", "it draws the fastest growers, --series of them"},
		{!growth && o->kinds != NULL, "--kinds", "--kind chooses the kind of names"},
	};

	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		if (other[i].given)
			bad_usage("%s reads the heap history the server keeps; it takes no %s%s%s", act, other[i].name,
					  other[i].why ? ": " : "", other[i].why ? other[i].why : "");
	if (!growth && nsv > 1)
		bad_usage("--timeline draws the heap history of one server; give one server (for several, --growth --merge)");
	if (growth && o->merge && o->per_process)
		bad_usage("--per-process lists each process's suspects, --merge sums each name's over the servers: choose one");
	if (!growth && o->output && o->output[0] && o->output[strlen(o->output) - 1] == '/')
		bad_usage("--output \"%s\" names a directory, and the timeline is one file: name the file", o->output);
	if (o->since == NULL)
		o->since = "1 hour";
	if (o->min_rate == NULL)
		o->min_rate = "1048576";
	if (o->kinds == NULL)
		o->kinds = "all";
	if (o->kind == NULL)
		o->kind = "function";
	if (o->series == NULL)
		o->series = "8";
	/* how write.c puts it: a document, through the terminal sink on a terminal */
	if (!growth)
		o->format = "timeline";
}

/* The whole command line; exits on misuse (2), --help and --version (0). */
static void
check(cli_opts *o, const raw_args *r)
{
	int			nsv = o->nconn ? o->nconn : 1;

	if (o->format && !report_format_known(o->format))
	{
		fprintf(stderr, "%s: error: unknown format \"%s\"\n", progname, o->format);
		fprintf(stderr, "%s: hint: use dot, svg, flamegraph, collapsed, pprof, raw, text or top\n", progname);
		exit(2);
	}
	if (HISTORY_ACTION(o->action))
	{
		check_history(o, nsv);
		return;
	}
	if (o->since || o->per_process || o->min_rate || o->kinds)
		bad_usage("%s goes with --growth%s", o->since ? "--since" : o->per_process ? "--per-process" :
				  o->min_rate ? "--min-rate" : "--kinds", o->since ? " or --timeline" : "");
	if (o->kind || o->series)
		bad_usage("%s goes with --timeline", o->kind ? "--kind" : "--series");
	if (o->action == ACT_SETUP && (nsv > 1 || o->pid || o->type || o->format || o->window || o->stored || o->peak))
		bad_usage("--setup takes one server and no process or report options");
	check_modifier(o, r, nsv);
	if (o->client_symbols && o->action == ACT_LEAK)
		bad_usage("--client-symbols names the frames of a process's live heap (heapprof_dump_portable); leak mode reports what grew, named by the server");
	check_choice(o, nsv);
	if (o->action == ACT_REPORT || o->action == ACT_LEAK)
		check_client_symbols(o);
	if (o->action == ACT_REPORT && o->type && !o->merge)
		output_directory(o);
	else if ((o->action == ACT_REPORT || o->action == ACT_LEAK) && o->output && o->output[0] &&
			 o->output[strlen(o->output) - 1] == '/')
		bad_usage("--output \"%s\" names a directory, and this report is one file: name the file",
				  o->output);
	if (o->format && strcmp(o->format, "svg") == 0)
		o->svg_dot = have_dot();
}

/* Settings every server shares; a connection string overrides them. */
static void
connection_keywords(cli_opts *o, const raw_args *r)
{
	const char *kw[] = {"host", "port", "user", "connect_timeout", "fallback_application_name"};
	const char *val[sizeof(kw) / sizeof(kw[0])] = {r->host, r->port, r->user, r->timeout, progname};

	for (size_t i = 0; i < sizeof(kw) / sizeof(kw[0]); i++)
		if (val[i])
		{
			o->keywords[o->nkw] = kw[i];
			o->values[o->nkw++] = val[i];
		}
	o->may_prompt = o->nconn <= 1 && !r->never_prompt && !o->prompt && isatty(fileno(stdin));
}

void
parse_options(int argc, char **argv, cli_opts *o)
{
	static const struct option longopts[] = {
		{"list", no_argument, NULL, 'l'},
		{"enable", no_argument, NULL, 'e'},
		{"disable", no_argument, NULL, 'x'},
		{"report", required_argument, NULL, 'r'},
		{"seconds", required_argument, NULL, 's'},
		{"captures", no_argument, NULL, 10},
		{"setup", no_argument, NULL, 14},
		{"growth", no_argument, NULL, 15},
		{"timeline", no_argument, NULL, 16},
		{"since", required_argument, NULL, 18},
		{"per-process", no_argument, NULL, 19},
		{"min-rate", required_argument, NULL, 20},
		{"kinds", required_argument, NULL, 21},
		{"kind", required_argument, NULL, 22},
		{"series", required_argument, NULL, 23},
		{"peak", no_argument, NULL, 11},
		{"allocations", required_argument, NULL, 12},
		{"stored", required_argument, NULL, 13},
		{"dump", required_argument, NULL, 13},	/* before 1.2 */
		{"pid", required_argument, NULL, 'P'},
		{"backend-type", required_argument, NULL, 't'},
		{"merge", no_argument, NULL, 'm'},
		{"base-type", required_argument, NULL, 5},
		{"group-by", required_argument, NULL, 17},
		{"drop-negative", no_argument, NULL, 6},
		{"output", required_argument, NULL, 'o'},
		{"objects", no_argument, NULL, 1},
		{"fold", no_argument, NULL, 8},
		{"nofold", no_argument, NULL, 2},
		{"client-symbols", no_argument, NULL, 9},
		{"focus", required_argument, NULL, 3},
		{"ignore", required_argument, NULL, 4},
		{"dbname", required_argument, NULL, 'd'},
		{"servers", required_argument, NULL, 'f'},
		{"host", required_argument, NULL, 'h'},
		{"port", required_argument, NULL, 'p'},
		{"username", required_argument, NULL, 'U'},
		{"no-password", no_argument, NULL, 'w'},
		{"password", no_argument, NULL, 'W'},
		{"connect-timeout", required_argument, NULL, 7},
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, '?'},
		{NULL, 0, NULL, 0}
	};
	raw_args	r = {.timeout = "5"};
	int			c;

	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-?") == 0))
	{
		usage(stdout);
		exit(0);
	}
	memset(o, 0, sizeof(*o));
	o->action = ACT_LIST;
	o->fold = "true";
	while ((c = getopt_long(argc, argv, "lexr:s:P:t:mo:d:f:h:p:U:wWV?", longopts, NULL)) != -1)
	{
		if (strchr("lexrs", c) || c == 10 || c == 14 || c == 15 || c == 16)
			action_arg(o, &r, c, optarg);
		else if (c == 'V')
		{
			printf("pg_heapprof (heapprof) %s\n", HEAPPROF_VERSION);
			exit(0);
		}
		else if (!other_arg(o, &r, c, optarg))
		{
			fprintf(stderr, "Try \"%s --help\" for more information.\n", progname);
			exit(2);
		}
	}
	for (; optind < argc; optind++)
		add_server(o, argv[optind]);
	check(o, &r);
	connection_keywords(o, &r);
}

/* What parse_options allocated. */
void
free_options(cli_opts *o)
{
	for (int i = 0; i < o->nconn; i++)
		free(o->conninfos[i]);
	free(o->conninfos);
	if (o->focus_re)
		regfree(o->focus_re);
	if (o->ignore_re)
		regfree(o->ignore_re);
	free(o->focus_re);
	free(o->ignore_re);
}
