/*
 * heapprof-report -- analyse a jemalloc heap_v2 dump outside PostgreSQL.
 *
 * The same engine as the extension's SQL reports, with jeprof's option names,
 * so a dump saved with heapprof_dump_raw() (or written by any jemalloc
 * process on this machine) can be read offline and compared with jeprof.
 */
#include "cli_engine.h"
#include "fold_names.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void
usage(FILE *f)
{
	fprintf(f,
			"heapprof-report analyses a jemalloc heap profile (heap_v2 dump).\n\n"
			"Usage:\n  heapprof-report [OPTION]... DUMP\n\n"
			"Report (one of):\n"
			"  --text             functions by flat memory (default)\n"
			"  --dot              Graphviz call graph\n"
			"  --collapsed        folded stacks for flamegraph.pl\n"
			"  --pprof            gzip'ed pprof protobuf (for go tool pprof), to stdout\n"
			"  --flamegraph       interactive SVG flame graph\n"
			"  --symbols          every distinct address: address, object, function\n"
			"                     and file:line per level; then per object what\n"
			"                     decided it is the file the process had\n\n"
			"Options:\n"
			"  --base=DUMP        subtract this earlier dump, per symbolized stack\n"
			"  --drop_negative    with --base: count shrinking stacks as 0\n"
			"  --inuse_objects    count objects instead of bytes\n"
			"  --show_bytes       bytes instead of MB\n"
			"  --cum              text: functions by cumulative memory, not flat\n"
			"  --focus=REGEX      only stacks with a matching frame (POSIX extended regex)\n"
			"  --ignore=REGEX     drop stacks with a matching frame\n"
			"  --nodecount=N      dot: at most N nodes (default 80)\n"
			"  --nodefraction=F   dot: hide nodes below F of the total (default 0.005)\n"
			"  --edgefraction=F   dot: hide edges below F of the total (default 0.001)\n"
			"  --program=NAME     program name in dot titles (default: the dump's file name)\n"
			"  --nofold           keep PostgreSQL's allocator frames (palloc & co.); by\n"
			"                     default (--fold) memory is charged to their callers,\n"
			"                     as in SQL\n"
			"  --stats            also print, to stderr, cold and warm analysis times,\n"
			"                     distinct addresses and symbol index memory\n"
			"  --help             show this help, then exit\n\n"
			"With DEBUGINFOD_URLS set, executables and debug info this machine lacks are\n"
			"fetched by the build-ids the dump recorded (debuginfod, bounded timeouts).\n");
}

static char *
read_file(const char *path, size_t *len)
{
	FILE	   *f = fopen(path, "rb");
	char	   *buf = NULL;
	size_t		cap = 0;
	size_t		n = 0;

	if (f == NULL)
		return NULL;
	for (;;)
	{
		size_t		got;

		if (n == cap)
		{
			char	   *nb = realloc(buf, cap ? cap * 2 : 1 << 16);

			if (nb == NULL)
			{
				free(buf);
				fclose(f);
				errno = ENOMEM;
				return NULL;
			}
			buf = nb;
			cap = cap ? cap * 2 : 1 << 16;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f))
	{
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	*len = n;
	return buf;
}

/* One object's identity verdict, to the FILE arg: "# identity OBJECT: EVIDENCE [MISMATCH]" */
static void
print_verdict(void *arg, const char *object, const char *evidence, const char *mismatch)
{
	fprintf(arg, "# identity %s: %s%s%s%s\n", hp_cli_shown(object, false), hp_cli_shown(evidence, false),
			mismatch ? " [" : "", mismatch ? hp_cli_shown(mismatch, false) : "", mismatch ? "]" : "");
}

/* --symbols: what each address is called and where, inlined functions first */
static void
print_symbols(const hp_located *l, const hp_graph *g)
{
	for (size_t i = 0; i < l->npcs; i++)
	{
		printf("%016llx %s", (unsigned long long) l->pcs[i],
			   l->syms[i].object ? hp_cli_shown(l->syms[i].object, false) : "-");
		for (uint32_t u = g->pc_first[i]; u < g->pc_first[i + 1]; u++)
		{
			int			line;
			const char *file = hp_symbol_location(&l->syms[i], u - g->pc_first[i], &line);

			printf(" %s%s", u > g->pc_first[i] ? "<- " : "", hp_cli_shown(g->funcs[g->pc_funcs[u]].name, false));
			if (file)
				printf(" at %s:%d", hp_cli_shown(file, false), line);
		}
		printf("\n");
	}
}

/*
 * The report on standard output; a terminal gets it through its sink (the
 * renderers' documents hold no control anyway) and never pprof's bytes.
 */
static void
write_out(hp_report_kind kind, const char *data, size_t len)
{
	if (!isatty(STDOUT_FILENO))
	{
		fwrite(data, 1, len, stdout);
		return;
	}
	if (kind == HP_REPORT_PPROF)
	{
		fprintf(stderr, "heapprof-report: not writing pprof's bytes to a terminal; redirect them to a file\n");
		exit(1);
	}
	hp_cli_put_terminal(data, len);
}

static double
elapsed_ms(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0->tv_sec) * 1e3 + (t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/*
 * --stats: time a cold analysis (fresh symbolizer: ELF files opened, indexes
 * built) and a warm one (indexes reused), as a backend sees its first and
 * later reports.  r is replaced by the warm run's result.
 */
static void
print_stats(hp_arena *a, const hp_cli_engine *e, const char *dump, size_t len,
			const char *base, size_t base_len,
			const hp_options *o, hp_report_kind kind, hp_result *r)
{
	hp_symbolizer *cold = hp_symbolizer_new();
	struct timespec t0;
	double		cold_ms;
	double		warm_ms;

	if (cold == NULL)
		return;
	if (e->fetch)
		hp_fetch_attach(e->fetch, cold);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	hp_analyze(a, cold, dump, len, base, base_len, o, kind, SIZE_MAX, r);
	cold_ms = elapsed_ms(&t0);
	fprintf(stderr, "symbol indexes %.1f MB\n", hp_symbolizer_memory(cold) / 1048576.0);
	hp_symbolizer_free(cold);
	hp_arena_free(a);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	hp_analyze(a, e->sym, dump, len, base, base_len, o, kind, SIZE_MAX, r);
	warm_ms = elapsed_ms(&t0);
	hp_symbolizer_verdicts(e->sym, print_verdict, stderr);
	fprintf(stderr, "stacks %zu, distinct addresses %zu, functions %zu\n"
			"analysis cold %.1f ms, warm %.1f ms\n",
			r->profile.nsamples, r->located.npcs, r->graph.nfuncs, cold_ms, warm_ms);
}

/* Compile --focus / --ignore; exits with a message when it does not compile. */
static void *
compile_arg(const char *pattern, const char *name)
{
	char		msg[256];
	void	   *re = hp_cli_regex(pattern, msg, sizeof(msg));

	if (re == NULL)
	{
		fprintf(stderr, "heapprof-report: invalid --%s regular expression \"%s\": %s\n", name,
				hp_cli_shown(pattern, false), msg);
		exit(2);
	}
	return re;
}

static double
fraction_arg(const char *s, const char *name)
{
	char	   *end;
	double		v = strtod(s, &end);

	if (*s == '\0' || *end != '\0' || !(v >= 0 && v <= 1))
	{
		fprintf(stderr, "heapprof-report: --%s must be a number between 0 and 1\n", name);
		exit(2);
	}
	return v;
}

/* What the command line asks for. */
typedef struct args
{
	hp_options	o;
	hp_report_kind kind;
	bool		symbols;		/* --symbols */
	bool		stats;
	const char *program;
	const char *base_path;
} args;

/* The command line into a; exits on --help (0) and misuse (2). */
static void
parse_args(int argc, char **argv, args *a)
{
	static const struct option longopts[] = {
		{"text", no_argument, NULL, 't'},
		{"dot", no_argument, NULL, 'd'},
		{"collapsed", no_argument, NULL, 'c'},
		{"symbols", no_argument, NULL, 'y'},
		{"pprof", no_argument, NULL, 'P'},
		{"flamegraph", no_argument, NULL, 'G'},
		{"inuse_objects", no_argument, NULL, 'o'},
		{"base", required_argument, NULL, 'B'},
		{"drop_negative", no_argument, NULL, 'D'},
		{"show_bytes", no_argument, NULL, 'b'},
		{"cum", no_argument, NULL, 'C'},
		{"focus", required_argument, NULL, 'f'},
		{"ignore", required_argument, NULL, 'i'},
		{"nodecount", required_argument, NULL, 'n'},
		{"nodefraction", required_argument, NULL, 'N'},
		{"edgefraction", required_argument, NULL, 'E'},
		{"program", required_argument, NULL, 'p'},
		{"stats", no_argument, NULL, 's'},
		{"fold", no_argument, NULL, 'F'},
		{"nofold", no_argument, NULL, 'U'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}
	};
	hp_options	defaults = HP_OPTIONS_DEFAULT;
	int			c;

	memset(a, 0, sizeof(*a));
	a->o = defaults;
	a->kind = HP_REPORT_TEXT;
	/* SQL's default: charge memory to the callers of PostgreSQL's allocator */
	a->o.fold = true;
	a->o.fold_names = hp_postgres_allocator;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1)
	{
		switch (c)
		{
			case 't':
				a->kind = HP_REPORT_TEXT;
				break;
			case 'd':
				a->kind = HP_REPORT_DOT;
				break;
			case 'c':
				a->kind = HP_REPORT_COLLAPSED;
				break;
			case 'y':
				a->symbols = true;
				a->kind = HP_REPORT_STACKS;
				break;
			case 'P':
				a->kind = HP_REPORT_PPROF;
				break;
			case 'G':
				a->kind = HP_REPORT_FLAMEGRAPH;
				break;
			case 'o':
				a->o.measure = HP_INUSE_OBJECTS;
				break;
			case 'B':
				a->base_path = optarg;
				break;
			case 'D':
				a->o.drop_negative = true;
				break;
			case 'b':
				a->o.show_bytes = true;
				break;
			case 'C':
				a->o.by_cum = true;
				break;
			case 'f':
				a->o.focus = a->o.focus ? a->o.focus : compile_arg(optarg, "focus");
				break;
			case 'i':
				a->o.ignore = a->o.ignore ? a->o.ignore : compile_arg(optarg, "ignore");
				break;
			case 'n':
				{
					char	   *end;
					long		v = strtol(optarg, &end, 10);

					if (*optarg == '\0' || *end != '\0' || v < 1 || v > INT_MAX)
					{
						fprintf(stderr, "heapprof-report: --nodecount must be a positive integer\n");
						exit(2);
					}
					a->o.nodecount = (int) v;
					break;
				}
			case 'N':
				a->o.nodefraction = fraction_arg(optarg, "nodefraction");
				break;
			case 'E':
				a->o.edgefraction = fraction_arg(optarg, "edgefraction");
				break;
			case 'p':
				a->program = optarg;
				break;
			case 's':
				a->stats = true;
				break;
			case 'F':
				a->o.fold = true;
				a->o.fold_names = hp_postgres_allocator;
				break;
			case 'U':
				a->o.fold = false;
				a->o.fold_names = NULL;
				break;
			case 'h':
				usage(stdout);
				exit(0);
			default:
				usage(stderr);
				exit(2);
		}
	}
	if (optind != argc - 1)
	{
		usage(stderr);
		exit(2);
	}
}

int
main(int argc, char **argv)
{
	args		a;
	hp_options	o;
	char	   *base = NULL;
	size_t		base_len = 0;
	char	   *dump;
	size_t		len;
	hp_cli_engine e;
	hp_arena	arena;
	hp_result	r;

	parse_args(argc, argv, &a);
	o = a.o;
	o.program = a.program ? a.program : argv[optind];
	/* the dumps it is made for are PostgreSQL's: its own frames warm in flame graphs */
	o.home_object = "postgres";

	dump = read_file(argv[optind], &len);
	if (dump == NULL)
	{
		fprintf(stderr, "heapprof-report: could not read \"%s\": %s\n", hp_cli_shown(argv[optind], false),
				strerror(errno));
		return 1;
	}
	if (a.base_path && (base = read_file(a.base_path, &base_len)) == NULL)
	{
		fprintf(stderr, "heapprof-report: could not read \"%s\": %s\n", hp_cli_shown(a.base_path, false),
				strerror(errno));
		free(dump);
		return 1;
	}
	if (!hp_cli_engine_open(&e, "heapprof-report", ""))
	{
		free(dump);
		free(base);
		return 1;
	}
	e.subject = argv[optind];
	hp_arena_init(&arena, &e.env);
	hp_analyze(&arena, e.sym, dump, len, base, base_len, &o, a.kind, SIZE_MAX, &r);
	if (a.stats)
		print_stats(&arena, &e, dump, len, base, base_len, &o, a.kind, &r);
	if (a.symbols)
	{
		print_symbols(&r.located, &r.graph);
		hp_symbolizer_verdicts(e.sym, print_verdict, stdout);
	}
	else
		write_out(a.kind, r.text.data ? r.text.data : "", r.text.len);
	hp_arena_free(&arena);
	hp_cli_engine_close(&e);
	free(dump);
	free(base);
	return 0;
}
