/*
 * analysis.c -- the engine's environment in a backend.
 *
 * The engine (src/engine) allocates, fails, polls for interrupts and
 * matches patterns through an injected environment.  Here its memory comes
 * from a "heapprof analysis" memory context (visible in
 * pg_backend_memory_contexts), its errors are ereport(ERROR), its interrupt
 * check is CHECK_FOR_INTERRUPTS and its patterns are PostgreSQL's regular
 * expressions -- bounded, cancellable, as the ~ operator in the C collation.
 * So the only cleanup protocol is PostgreSQL's: an error anywhere frees the
 * context with its parent, and the context's reset callback switches this
 * thread's sampling back on.
 *
 * One symbolizer lives per backend, kept between reports: opening ELF files
 * and building indexes is most of a cold report's time.  Its heap (libdwfl's
 * and the indexes) is measured with jemalloc's per-thread counters around
 * each analysis; above heapprof.symbol_cache_limit it is dropped after the
 * report.  It finds and keeps the objects' shared symbol indexes where
 * symindex.c says.
 *
 * A report's own memory -- the dump it reads and everything the engine
 * takes for it -- is bounded by heapprof.report_memory_limit, checked by the
 * engine before each chunk it takes (env.h): a report too big for a shared
 * server fails with 53200 before the backend grows, not by an OOM kill that
 * restarts every backend.  The setting is superuser-only (PGC_SUSET): a role
 * may be let raise it with GRANT SET ON PARAMETER.  The symbolizer's caches
 * are not counted; their own setting bounds them.
 */
#include "postgres.h"

#include <limits.h>

#include "catalog/pg_collation_d.h"
#include "miscadmin.h"
#include "regex/regex.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "analysis.h"
#include "jemalloc.h"

static int	symbol_cache_limit_kb = 65536;
static int	report_memory_limit_kb = 262144;
static bool profile_self = false;

static hp_symbolizer *symbolizer;
static hp_index_store index_store;	/* map NULL: none */
static void (*index_settle) (void);	/* after each analysis, whatever way it ended */
static int64 symbolizer_bytes;

void
hpg_analysis_init(void)
{
	DefineCustomIntVariable("heapprof.symbol_cache_limit",
							"Most memory a backend keeps for symbolizing heap profiles.",
							"Symbol tables and debug info stay cached between reports; "
							"above this they are dropped after the report that exceeded it.",
							&symbol_cache_limit_kb,
							65536, 0, MAX_KILOBYTES,
							PGC_SUSET, GUC_UNIT_KB,
							NULL, NULL, NULL);
	DefineCustomIntVariable("heapprof.report_memory_limit",
							"Most memory one report may take in a backend; 0 is no limit.",
							"The profile read and everything analysing it takes, but for symbol caches; "
							"a report that would take more fails.",
							&report_memory_limit_kb,
							262144, 0, MAX_KILOBYTES,
							PGC_SUSET, GUC_UNIT_KB,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("heapprof.profile_self",
							 "Sample heapprof's own allocations too.",
							 "Off, heapprof keeps its own work out of the profiles it reports; on, it shows it (to check heapprof itself).",
							 &profile_self,
							 false,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);
}

/* ---- the environment ---- */

/*
 * One analysis: its memory context, and what that context took from
 * jemalloc, measured around each allocation (usable sizes, as jemalloc's
 * thread counters see them), so that what else the analysis left allocated
 * is known to be the symbolizer's.
 */
typedef struct analysis
{
	hp_result	result;			/* first: the result is the handle */
	hp_env		env;
	hp_arena	arena;
	MemoryContext cxt;
	int64		engine_bytes;
} analysis;

static void *
env_alloc(void *ctx, size_t size)
{
	analysis   *an = ctx;
	int64		before = hpj_thread_net();
	void	   *p = MemoryContextAllocExtended(an->cxt, size, MCXT_ALLOC_HUGE);

	an->engine_bytes += hpj_thread_net() - before;
	return p;
}

/* What the engine gives back is not the symbolizer's either (the arena frees replaced blocks). */
static void
env_free(void *ctx, void *ptr)
{
	analysis   *an = ctx;
	int64		before = hpj_thread_net();

	pfree(ptr);
	an->engine_bytes += hpj_thread_net() - before;
}

static void env_error(void *ctx, hp_status code, const char *message);

bool
hpg_report_budget_fits(int64 bytes)
{
	return report_memory_limit_kb <= 0 || bytes <= (int64) report_memory_limit_kb * 1024;
}

void
hpg_report_budget_check(int64 bytes, const char *what)
{
	if (!hpg_report_budget_fits(bytes))
		env_error(NULL, HP_EBUDGET,
				  psprintf("%s would hold " INT64_FORMAT " bytes before the analysis starts", what, bytes));
}

void
hpg_report_budget_read(const char *head, int len, int64 size, void *out)
{
	hpg_report_budget_check((int64) ((StringInfo) out)->len + size, "the heap profile");
}

static void
env_error(void *ctx, hp_status code, const char *message)
{
	if (code == HP_ENOMEM)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("%s", message)));
	if (code == HP_EBUDGET)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("the report needs more memory than heapprof.report_memory_limit (%s) allows",
						GetConfigOptionByName("heapprof.report_memory_limit", NULL, false)),
				 errdetail("%s", message),
				 errhint("Analyse the profile off the server with heapprof-report (heapprof_dump_portable() gives a live heap; "
						 "a stored profile is a file under $PGDATA/heapprof), or sample more coarsely "
						 "(heapprof_reset(sample_interval => 4194304)); a superuser may raise heapprof.report_memory_limit.")));
	if (code == HP_ELIMIT)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("could not analyse the heap profile: %s", message),
				 errhint("The profile exceeds what heapprof reads; report it to heapprof's developers.")));
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("could not analyse the heap profile: %s", message),
			 errhint("Save it with heapprof_dump_raw() and report it to heapprof's developers.")));
}

static void
env_interrupt(void *ctx)
{
	CHECK_FOR_INTERRUPTS();
}

static bool
env_match(void *ctx, void *pattern, const char *s)
{
	return RE_compile_and_execute((text *) pattern, unconstify(char *, s), (int) strlen(s),
								  HPG_REGEX_FLAGS, C_COLLATION_OID, 0, NULL);
}

static void
env_init(hp_env *env, void *ctx)
{
	memset(env, 0, sizeof(*env));
	env->alloc = env_alloc;
	env->free = env_free;
	env->error = env_error;
	env->interrupt = env_interrupt;
	env->match = env_match;
	env->ctx = ctx;
}

/* ---- keeping heapprof out of its own profiles ---- */

static void
restore_sampling(void *arg)
{
	hpj_thread_active(true, NULL);
}

void
hpg_unsampled_while_context(void)
{
	bool		was = false;
	MemoryContextCallback *cb;

	if (profile_self || hpj_thread_active(false, &was) != 0 || !was)
		return;
	cb = MemoryContextAlloc(CurrentMemoryContext, sizeof(*cb));
	cb->func = restore_sampling;
	cb->arg = NULL;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, cb);
}

/* ---- running the engine ---- */

/* The symbolizer's refusals of files from outside said so far (once each). */
static size_t refusals_said;

static int64
drop_symbolizer(void)
{
	int64		freed = symbolizer_bytes;
	int64		before = hpj_thread_net();

	hp_symbolizer_free(symbolizer);
	symbolizer = NULL;
	symbolizer_bytes = 0;
	refusals_said = 0;
	/* what was really returned, when jemalloc can tell */
	return before > 0 ? before - hpj_thread_net() : freed;
}

/* A debug or dwz file of another build than its object's was not used: said once. */
static void
say_refusal(void *arg, const char *refusal)
{
	size_t	   *i = arg;

	if ((*i)++ < refusals_said)
		return;
	refusals_said++;
	ereport(NOTICE,
			(errmsg("%s", refusal),
			 errdetail("The object's code is named from its symbol tables only, or labelled by address."),
			 errhint("Install the debug info of the build that is loaded.")));
}

hp_result *
hpg_analyze(const StringInfo dump, const StringInfo base,
			const hp_options *o, hp_report_kind kind, size_t limit)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "heapprof analysis",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	analysis   *an = palloc0(sizeof(analysis));
	int64		before;

	an->cxt = cxt;
	/* heapprof's own work, the symbolizer's caches above all, stays out of the profile */
	hpg_unsampled_while_context();
	env_init(&an->env, an);
	/* the dump and its base are the report's memory too */
	an->env.limit = (size_t) report_memory_limit_kb * 1024;
	an->env.taken = (size_t) dump->len + (base ? (size_t) base->len : 0);
	hp_arena_init(&an->arena, &an->env);

	/* incidental pallocs (regular expressions) go into the analysis context too */
	before = hpj_thread_net();
	if (symbolizer == NULL && (symbolizer = hp_symbolizer_new()) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("could not start the elfutils symbolizer")));
	hp_symbolizer_store(symbolizer, &index_store);
	/*
	 * What the analysis left allocated, but for its own context, is the
	 * symbolizer's: counted also when the analysis fails or is cancelled (its
	 * context is freed later, in the abort), and then dropped at once if it
	 * grew too big, since no hpg_analysis_end will look.
	 */
	PG_TRY();
	{
		hp_analyze(&an->arena, symbolizer, dump->data, dump->len,
				   base ? base->data : NULL, base ? base->len : 0,
				   o, kind, limit, &an->result);
	}
	PG_CATCH();
	{
		if (index_settle)
			index_settle();
		symbolizer_bytes += hpj_thread_net() - before - an->engine_bytes;
		if (symbolizer_bytes > (int64) symbol_cache_limit_kb * 1024)
			drop_symbolizer();
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (index_settle)
		index_settle();
	symbolizer_bytes += hpj_thread_net() - before - an->engine_bytes;
	MemoryContextSwitchTo(old);
	hp_symbolizer_refusals(symbolizer, say_refusal, &(size_t) {0});
	return &an->result;
}

void
hpg_analysis_end(hp_result *r)
{
	MemoryContextDelete(((analysis *) r)->cxt);
	if (symbolizer_bytes > (int64) symbol_cache_limit_kb * 1024)
		drop_symbolizer();
}

hp_arena *
hpg_engine_begin(bool bounded)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "heapprof analysis",
											  ALLOCSET_DEFAULT_SIZES);
	analysis   *an = MemoryContextAllocZero(cxt, sizeof(analysis));

	an->cxt = cxt;
	env_init(&an->env, an);
	an->env.limit = bounded ? (size_t) report_memory_limit_kb * 1024 : 0;
	hp_arena_init(&an->arena, &an->env);
	return &an->arena;
}

void
hpg_engine_end(hp_arena *a)
{
	MemoryContextDelete(((analysis *) ((char *) a - offsetof(analysis, arena)))->cxt);
}

void
hpg_analysis_index_store(const hp_index_store *st, void (*settle) (void))
{
	index_store = *st;
	index_settle = settle;
}

int64
hpg_symbolizer_bytes(void)
{
	return symbolizer ? symbolizer_bytes : 0;
}

int64
hpg_forget_symbols(void)
{
	return symbolizer ? drop_symbolizer() : 0;
}

void
hpg_summarize(const char *text, int len, int64 *bytes, int64 *stacks)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "heapprof summary",
											  ALLOCSET_SMALL_SIZES);
	analysis	an = {.cxt = cxt};
	hp_env		env;
	double		b;
	double		objs;
	size_t		n;
	char		err[256];

	env_init(&env, &an);
	if (hp_summarize(&env, text, (size_t) len, &b, &objs, &n, err, sizeof(err)) != HP_OK)
	{
		*bytes = -1;			/* unreadable: listed, with no totals */
		*stacks = -1;
	}
	else
	{
		*bytes = (int64) b;
		*stacks = (int64) n;
	}
	MemoryContextDelete(cxt);
}

void
hpg_recent_heap(const StringInfo json, int64 from_ns, int64 to_ns, hp_recent_pick pick,
				StringInfo out, hp_recent_stats *st)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "heapprof records",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	analysis   *an = palloc0(sizeof(analysis));
	hp_buf		buf;
	char		err[256];

	an->cxt = cxt;
	env_init(&an->env, an);
	an->env.limit = (size_t) report_memory_limit_kb * 1024;
	an->env.taken = (size_t) json->len;
	hp_arena_init(&an->arena, &an->env);
	hp_buf_init(&buf, &an->arena);
	if (hp_recent_to_heap(&an->arena, json->data, json->len, from_ns, to_ns, pick,
						  &buf, st, err, sizeof(err)) != HP_OK)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("could not read jemalloc's record of recent allocations: %s", err),
				 errhint("This jemalloc writes a record heapprof does not know; report it to heapprof's developers with its version (heapprof_status()).")));
	MemoryContextSwitchTo(old);
	appendBinaryStringInfo(out, buf.data, (int) buf.len);
	MemoryContextDelete(cxt);
}
