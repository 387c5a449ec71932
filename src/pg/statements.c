/*
 * statements.c -- statements that leave memory behind: heapprof.capture_min_growth
 * and heapprof_captures().
 *
 * With heapprof.capture_min_growth set, a top-level statement after which
 * the backend holds at least that much more than before it began is
 * captured: the sampled allocations it made that are still live when it
 * is over -- what it left behind, by stack -- with its queryid, text (at
 * most HP_MAX_QUERY bytes), database, time and growth, stored as
 * $PGDATA/heapprof/captures/NAME.heap, which every report reads with
 * stored => NAME.  The allocations come from jemalloc's record of recent
 * ones (recording.c), kept while the setting is on; a statement that made
 * more sampled allocations than the record holds is marked partial.
 *
 * A statement is over when its commit is: a WITH HOLD cursor, ON COMMIT
 * actions and deferred triggers grow memory at the commit, after the
 * statement's own end.  So a statement below the threshold at its end is
 * measured again at its commit (two plain reads: nothing there may
 * allocate or fail, an error can PANIC), and if it passed the threshold by
 * then -- the transaction's own memory is freed only after that point --
 * it is judged again, and captured, when the session's next statement
 * begins, with the allocations made from its start to its commit.  A
 * session that goes idle after such a commit is captured when it runs its
 * next statement; one that exits frees that memory anyway.
 *
 * A statement below the threshold costs two reads of this thread's
 * counters at its start, two at its end, a copy of its text and two at its
 * commit.  The oldest captures go first
 * beyond heapprof.max_captures files or heapprof.max_capture_bytes.  A
 * capture belongs to the role that logged in, as exit dumps do, and is read
 * with its privileges.
 */
#include "postgres.h"

#include <unistd.h>

#include "access/parallel.h"
#include "access/xact.h"
#include "commands/dbcommands.h"
#include "executor/executor.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "tcop/tcopprot.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "analysis.h"
#include "files.h"
#include "jemalloc.h"
#include "myprofile.h"
#include "recording.h"
#include "sqltext.h"
#include "statements.h"
#include "store.h"
#include "stored.h"
#include "engine/format.h"

PG_FUNCTION_INFO_V1(heapprof_captures);

static int	min_growth_kb = -1;
static int	max_captures = 50;
static int	max_capture_bytes_kb = 100 * 1024;

static ExecutorStart_hook_type prev_executor_start;
static ExecutorEnd_hook_type prev_executor_end;
static ProcessUtility_hook_type prev_process_utility;

/* The top-level statement being watched: its query, or a utility statement. */
static QueryDesc *watched_query;
static bool watching_utility;
static int64 start_net;			/* bytes held when it began */
static int64 start_clock;		/* jemalloc's clock when it began */
static int64 start_symbols;		/* heapprof's symbol caches then: never a statement's growth */

/* The statement that ended last below the threshold, measured again at its commit. */
typedef struct ended
{
	bool		candidate;		/* measure it at the commit */
	bool		pending;		/* it passed the threshold there: judge it at the next statement */
	uint64		queryid;
	int64		start_net;
	int64		start_clock;
	int64		start_symbols;
	int64		commit_clock;	/* jemalloc's clock at its commit; 0: none yet */
	char		query[HP_MAX_QUERY + 1];
} ended;

static ended last;

static void judge_last(void);

static void
assign_min_growth(int newval, void *extra)
{
	hpg_recording_for_captures(newval >= 0);
}

static bool
watching(void)
{
	return watched_query != NULL || watching_utility;
}

/* Start watching a statement, if captures are on and nothing is watched. */
static bool
begin(void)
{
	/* a parallel worker's part is its leader's statement */
	if (watching() || IsParallelWorker())
		return false;
	if (min_growth_kb < 0 || hpj_probe() != HPJ_USABLE)
	{
		last.candidate = last.pending = false;
		return false;
	}
	judge_last();				/* one that grew at its commit */
	last.candidate = false;		/* a later commit is this statement's */
	start_net = hpj_thread_net();
	start_clock = hpj_clock_ns();
	start_symbols = hpg_symbolizer_bytes();
	return true;
}

/* The statement's text: its part of a multi-statement string, cut to HP_MAX_QUERY bytes. */
static void
statement_text(const char *source, int location, int length, char *out, size_t size)
{
	int			total = source ? (int) strlen(source) : 0;

	out[0] = '\0';
	if (source == NULL)
		return;
	if (location < 0 || location > total)
	{
		location = 0;
		length = total;
	}
	else if (length <= 0 || length > total - location)
		length = total - location;
	source += location;
	while (length > 0 && isspace((unsigned char) *source))
	{
		source++;
		length--;
	}
	length = pg_mbcliplen(source, length, (int) size - 1);
	memcpy(out, source, length);
	out[length] = '\0';
}

/* What the database is called, also outside a transaction (COMMIT). */
static const char *
database_name(void)
{
	static char name[NAMEDATALEN];

	if (name[0] == '\0' && IsTransactionState())
	{
		char	   *db = get_database_name(MyDatabaseId);

		if (db)
			strlcpy(name, db, sizeof(name));
	}
	return name;
}

/* WARNING for a capture that could not be written (rc an errno): the statement succeeded. */
static void
capture_failed(int rc, const char *what)
{
	errno = rc;
	ereport(WARNING,
			(errcode_for_file_access(),
			 errmsg("heapprof could not capture the statement: could not write %s: %m", what),
			 errhint("Check free space and permissions of the data directory, or lower heapprof.max_capture_bytes.")));
}

/* Keep text as a new capture, within heapprof.max_captures and heapprof.max_capture_bytes. */
static void
keep(const char *text, size_t len)
{
	int64		max_bytes = (int64) max_capture_bytes_kb * 1024;
	hpg_quota	q = {max_captures, max_bytes};
	Oid			owner = GetAuthenticatedUserId();
	bool		super = hpg_store_login_super();
	hpg_usage	u;
	char		name[HPG_MAX_NAME + 1];
	hpg_draft	d;
	int			rc;

	if (max_captures == 0)
		return;
	/* judged before anything is pruned: a capture too big to keep costs no other */
	if ((int64) len > max_bytes)
	{
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("heapprof did not keep the statement's capture: its %zu bytes exceed heapprof.max_capture_bytes (%d kB)",
						len, max_capture_bytes_kb),
				 errhint("Raise heapprof.max_capture_bytes, or lower heapprof.recent_allocations.")));
		return;
	}
	if ((rc = hpg_store_dir_ready(HPG_CAPTURE_DIR)) != 0)
	{
		capture_failed(rc, HPG_CAPTURE_DIR);
		return;
	}
	/* room in this role's share, made only of its own older captures */
	if (hpg_store_room(HPG_CAPTURE_DIR, &q, owner, super, 1, (int64) len, true, &u) != 0)
	{
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("heapprof did not keep the statement's capture: no room in the role's share of the captures"),
				 errdetail("The role holds " INT64_FORMAT " capture(s) of " INT64_FORMAT " bytes, of its share of " INT64_FORMAT " and " INT64_FORMAT " bytes; this one has %zu bytes%s.",
						   u.own_count, u.own_bytes, u.share_count, u.share_bytes, len,
						   u.own_count < u.share_count && u.own_bytes + (int64) len <= u.share_bytes ?
						   "; the folder is full with other roles' captures" : ""),
				 errhint("Other roles' captures are never removed to make room: drop old ones, or ask a superuser to raise heapprof.max_captures, heapprof.max_capture_bytes or heapprof.role_share.")));
		return;
	}
	hpg_store_time_name(name, sizeof(name), "statement");
	if ((rc = hpg_draft_open(&d, HPG_CAPTURE_DIR)) != 0 ||
		(rc = hpg_draft_write(&d, text, len)) != 0 ||
		(rc = hpg_draft_publish(&d, name, false)) != 0)
		capture_failed(rc, HPG_CAPTURE_DIR);
	/* again: this role's captures other sessions published meanwhile count too */
	(void) hpg_store_room(HPG_CAPTURE_DIR, &q, owner, super, 0, 0, true, NULL);
}

/*
 * Store what the statement left behind.  A file that cannot be written is a
 * WARNING -- the statement succeeded -- but nothing is caught: a cancel, a
 * timeout or running out of memory end the statement as anywhere else.
 */
static void
capture(int64 growth, const ended *e)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "heapprof capture",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	int64		end_clock = e->commit_clock ? e->commit_clock : hpj_clock_ns();
	char		path[MAXPGPATH];

	hpg_unsampled_while_context();
	hpg_dump_path(path, sizeof(path), "capture");
	PG_TRY();
	{
		StringInfoData json;
		StringInfoData heap;
		StringInfoData out;
		hp_recent_stats st;
		hp_capture *c = palloc0(sizeof(hp_capture));
		char	   *lines = palloc(Max(HP_CAPTURE_MAX, HP_IDENTITY_MAX));
		char		file[MAXPGPATH];
		int			rc = hpg_recording_dump(path);

		if (rc == 0)
			rc = hpg_write_maps_file(path);
		if (rc != 0)
			capture_failed(rc, "jemalloc's record of recent allocations");
		else
		{
			initStringInfo(&json);
			hpg_read_file(path, &json, false);
			initStringInfo(&heap);

			/* written also with no stack left in the record: which statement grew is worth keeping */
			c->queryid = (long long) e->queryid;
			c->growth = growth;
			strlcpy(c->database, database_name(), sizeof(c->database));
			strlcpy(c->query, e->query, sizeof(c->query));
			initStringInfo(&out);
			hpg_append_meta(&out, MyProcPid, GetAuthenticatedUserId(), GetBackendTypeDesc(MyBackendType));
			hpg_recent_heap(&json, e->start_clock, end_clock, HP_RECENT_LIVE, &heap, &st);
			c->partial = st.truncated;
			appendBinaryStringInfo(&out, lines, (int) hp_format_capture(lines, HP_CAPTURE_MAX, c));
			appendBinaryStringInfo(&out, lines, (int) hpg_identity_text(lines, HP_IDENTITY_MAX, false));
			appendBinaryStringInfo(&out, heap.data, heap.len);
			snprintf(file, sizeof(file), "%s.maps", path);
			hpg_read_file(file, &out, false);
			keep(out.data, out.len);
		}
	}
	PG_FINALLY();
	{
		hpg_remove_dump_files(path);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
}

/* Growth since start, heapprof's own symbol caches left out. */
static int64
growth_since(int64 net, int64 symbols)
{
	return hpj_thread_net() - net - (hpg_symbolizer_bytes() - symbols);
}

/* A watched statement ended: captured now, or measured again at its commit. */
static void
end(uint64 queryid, const char *source, int location, int length)
{
	int64		growth = growth_since(start_net, start_symbols);

	watched_query = NULL;
	watching_utility = false;
	last.candidate = last.pending = false;
	if (min_growth_kb < 0)
		return;					/* turned off by the statement itself */
	last.queryid = queryid;
	last.start_net = start_net;
	last.start_clock = start_clock;
	last.start_symbols = start_symbols;
	last.commit_clock = 0;
	statement_text(source, location, length, last.query, sizeof(last.query));
	if (growth >= (int64) min_growth_kb * 1024)
		capture(growth, &last);
	else
		last.candidate = true;
}

/* Judge the statement that grew at its commit: captured if it still holds enough. */
static void
judge_last(void)
{
	int64		growth;

	if (!last.pending)
		return;
	last.pending = false;
	growth = growth_since(last.start_net, last.start_symbols);
	if (growth >= (int64) min_growth_kb * 1024)
		capture(growth, &last);
}

static void
executor_start(QueryDesc *queryDesc, int eflags)
{
	/*
	 * Only the client's statement: a deferred trigger's or a function's
	 * query has a text of its own (and one a commit runs must not be
	 * watched: nothing may be written during a commit)
	 */
	bool		watch = queryDesc->sourceText == debug_query_string && begin();

	hpg_store_learn_login();
	if (prev_executor_start)
		prev_executor_start(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
	if (watch)
		watched_query = queryDesc;
}

static void
executor_end(QueryDesc *queryDesc)
{
	uint64		queryid = queryDesc->plannedstmt->queryId;
	int			location = queryDesc->plannedstmt->stmt_location;
	int			length = queryDesc->plannedstmt->stmt_len;
	const char *source = queryDesc->sourceText;
	bool		watched = queryDesc == watched_query;

	if (prev_executor_end)
		prev_executor_end(queryDesc);
	else
		standard_ExecutorEnd(queryDesc);
	if (watched)
		end(queryid, source, location, length);
}

static void
process_utility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
				ProcessUtilityContext context, ParamListInfo params,
				QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	uint64		queryid = pstmt->queryId;
	int			location = pstmt->stmt_location;
	int			length = pstmt->stmt_len;
	bool		watch = context == PROCESS_UTILITY_TOPLEVEL && begin();

	hpg_store_learn_login();
	watching_utility = watching_utility || watch;
	if (prev_process_utility)
		prev_process_utility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	if (watch)
		end(queryid, queryString, location, length);
}

/*
 * A statement that failed is not watched any more; one that ended below
 * the threshold is measured again at its commit (plain reads: nothing here
 * may fail).
 */
static void
xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PREPARE)
	{
		/* a statement that failed, or whose transaction did not commit here */
		watched_query = NULL;
		watching_utility = false;
		last.candidate = last.pending = false;
	}
	else if (event == XACT_EVENT_COMMIT && last.candidate && !watching())
	{
		/* the commit of the statement that ended (a procedure's COMMIT is its own) */
		last.candidate = false;
		last.commit_clock = hpj_clock_ns();
		last.pending = min_growth_kb >= 0 &&
			growth_since(last.start_net, last.start_symbols) >= (int64) min_growth_kb * 1024;
	}
}

void
hpg_statements_init(void)
{
	DefineCustomIntVariable("heapprof.capture_min_growth",
							"Capture a statement after which the backend holds at least this much more memory.",
							"-1 disables statement captures; heapprof_captures() lists them.",
							&min_growth_kb,
							-1, -1, MAX_KILOBYTES,
							PGC_SUSET, GUC_UNIT_KB,
							NULL, assign_min_growth, NULL);
	DefineCustomIntVariable("heapprof.max_captures",
							"Most statement captures kept; the oldest are removed first.",
							NULL,
							&max_captures,
							50, 0, 1000000,
							PGC_SUSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("heapprof.max_capture_bytes",
							"Most disk space statement captures may take; the oldest are removed first.",
							NULL,
							&max_capture_bytes_kb,
							100 * 1024, 0, MAX_KILOBYTES,
							PGC_SUSET, GUC_UNIT_KB,
							NULL, NULL, NULL);
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = executor_start;
	prev_executor_end = ExecutorEnd_hook;
	ExecutorEnd_hook = executor_end;
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = process_utility;
	RegisterXactCallback(xact_callback, NULL);
}

/* One row of heapprof_captures() (stored.c hands over only readable ones). */
static void
capture_row(const char *name, const char *text, int len, bool whole, int64 size, void *arg)
{
	ReturnSetInfo *rsinfo = arg;
	hp_meta		m;
	hp_capture *c = palloc(sizeof(hp_capture));
	Datum		values[10];
	bool		nulls[10] = {0};
	int64		bytes = -1;
	int64		stacks = -1;
	char	   *owner;

	if (!hp_read_meta(text, len, &m) || !hp_read_capture(text, len, c))
		return;
	if (whole)
		hpg_summarize(text, len, &bytes, &stacks);
	owner = GetUserNameFromId(m.owner, true);
	values[0] = HpgTextDatum(name);
	values[1] = Int32GetDatum(m.pid);
	values[2] = owner ? CStringGetTextDatum(owner) : (Datum) 0;
	nulls[2] = owner == NULL;
	values[3] = PointerGetDatum(hpg_text_in(c->database, strlen(c->database), c->encoding));
	values[4] = Int64GetDatum(c->queryid);
	nulls[4] = c->queryid == 0;
	/* a capture keeps no text unless heapprof.store_statement_text was on: the queryid says which */
	values[5] = c->query[0] ? PointerGetDatum(hpg_text_in(c->query, strlen(c->query), c->encoding)) : (Datum) 0;
	nulls[5] = c->query[0] == '\0';
	values[6] = TimestampTzGetDatum((TimestampTz) m.taken_at);
	values[7] = Int64GetDatum(c->growth);
	values[8] = Int64GetDatum(bytes);
	nulls[8] = bytes < 0;
	values[9] = BoolGetDatum(c->partial);
	/* text from a file: valid in the database encoding or not shown */
	if (!pg_verifymbstr(c->database, strlen(c->database), true))
		nulls[3] = true;
	if (!pg_verifymbstr(c->query, strlen(c->query), true))
		nulls[5] = true;
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	pfree(c);
}

/* heapprof_captures(): one row per capture the current user may read */
Datum
heapprof_captures(PG_FUNCTION_ARGS)
{
	InitMaterializedSRF(fcinfo, 0);
	hpg_stored_each_capture(capture_row, fcinfo->resultinfo);
	return (Datum) 0;
}
