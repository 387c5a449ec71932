/*
 * format.h -- the one owner of heapprof's profile file format.
 *
 * A heapprof profile is jemalloc's heap_v2 text after "%" lines, which jeprof
 * ignores as comments:
 *
 *   %heapprof v=1 pid=P owner=ROLE taken_at=T backend_type=TYPE   (stored profiles)
 *   %heapprof-allocator BASE          where the object defining mallctl is loaded
 *   %heapprof-coverage SINCE ALLOCATED  sampling since (Unix microseconds, 0: none),
 *                                     and the bytes the process had allocated
 *   %heapprof-build-id BIAS ID        one per loaded object with a GNU build-id
 *   %heapprof-fold START ...          run-time starts of nameless allocator functions
 *   %heapprof-capture queryid=Q growth=G partial=0|1   a statement's capture (decimal),
 *   %heapprof-database NAME           followed by these two, escaped: \\ \n and \xHH
 *   %heapprof-query TEXT
 *   %heapprof-label-context SLOT NAME   a memory context's name, escaped (labels, below)
 *   %heapprof-label-query QUERYID TEXT  a statement's text as this process saw it (decimal id)
 *
 * (hex numbers unless said).  Every writer and reader of these lines -- the backend, the
 * exit hook, the target of a pid request, the commands -- goes through here.
 * The writers are plain C into a caller's buffer with no allocation, so a
 * target process serving a request or a process at exit can use them.
 */
#ifndef HEAPPROF_FORMAT_H
#define HEAPPROF_FORMAT_H

#include "arena.h"

#define HP_FORMAT_VERSION 1

/* Build-id of an object loaded in the dumped process, keyed by load bias. */
typedef struct hp_build_id
{
	uint64_t	bias;
	uint8_t		id[64];
	size_t		len;
} hp_build_id;

/* Most objects and fold starts one profile records. */
#define HP_MAX_OBJECTS 1024
#define HP_MAX_FOLD_STARTS 32

/*
 * What a profile covers: jemalloc records only allocations made while
 * sampling was active, so a report says since when, next to what the
 * process held (jemalloc's stats.allocated) when it dumped.
 */
typedef struct hp_coverage
{
	bool		known;			/* the dumping process recorded it */
	uint64_t	since;			/* Unix time in microseconds; 0: nothing sampled since start or reset */
	uint64_t	allocated;
} hp_coverage;

/*
 * Labels of a sample: jemalloc's backtrace hook (src/pg/labels.c) appends
 * them at the root of each sampled stack as pseudo-frames, addresses no
 * code has (non-canonical, in the range jeprof and the graph take for the
 * kernel's): 0xfffeKK00VVVVVVVV, kind KK, value V.  A context's value is a
 * slot of the writer's table of context names: HP_LABEL_OWNER for the
 * context whose block the allocation is, HP_LABEL_CONTEXT for one that was
 * merely current at malloc (the block is no context's; and every context
 * label of writers before owners were known).  A statement's 64-bit
 * queryid takes two frames (high half, low half).  The names and texts the
 * writer saw go in the %heapprof-label-* lines; parse.c takes the frames
 * off into the sample's labels.
 */
#define HP_LABEL_FRAMES 3
#define HP_LABEL_CONTEXT 1
#define HP_LABEL_QUERY_HI 2
#define HP_LABEL_QUERY_LO 3
#define HP_LABEL_OWNER 4
#define HP_LABEL_PC(kind, v) (UINT64_C(0xfffe000000000000) | (uint64_t) (kind) << 40 | (uint32_t) (v))
#define HP_LABEL_KIND(pc) \
	(((pc) & UINT64_C(0xffff00ff00000000)) == UINT64_C(0xfffe000000000000) ? (int) ((pc) >> 40 & 0xff) : 0)

/* The writer's tables: a slot is in use when its name or its queryid is set. */
#define HP_LABEL_NAME_MAX 64	/* with the NUL: a longer context name is cut */
#define HP_LABEL_TEXT_MAX 256	/* with the NUL: a longer statement is cut */
typedef struct hp_context_slot
{
	const void *key;			/* the writer's: the name's address */
	char		name[HP_LABEL_NAME_MAX];
} hp_context_slot;

typedef struct hp_query_slot
{
	uint64_t	queryid;
	char		text[HP_LABEL_TEXT_MAX];
} hp_query_slot;

/* Most slots a writer has, and most names and texts a reader keeps (of each kind). */
#define HP_LABEL_CONTEXTS 512
#define HP_LABEL_QUERIES 64
#define HP_MAX_LABEL_NAMES 4096

/* Room that the label lines may need at most. */
#define HP_LABELS_MAX (HP_LABEL_CONTEXTS * (40 + 4 * HP_LABEL_NAME_MAX) + \
					   HP_LABEL_QUERIES * (48 + 4 * HP_LABEL_TEXT_MAX))

/* What a process knows of itself when it dumps: for trusting files later. */
typedef struct hp_identity
{
	uint64_t	allocator_base;
	const hp_build_id *ids;
	size_t		nids;
	const uint64_t *fold_starts;	/* sorted */
	size_t		nfold_starts;
	hp_coverage coverage;
	const hp_context_slot *contexts;	/* the label tables: NULL, 0 if none */
	size_t		ncontexts;
	const hp_query_slot *queries;
	size_t		nqueries;
	const char *encoding;		/* the labels' texts are in it: a %heapprof-encoding line */
} hp_identity;

/* Room that hp_format_identity may need at most. */
#define HP_IDENTITY_MAX (64 + 64 + 64 + HP_MAX_OBJECTS * 170 + 32 + HP_MAX_FOLD_STARTS * 17 + HP_LABELS_MAX)

/* Who took a stored profile, and when. */
typedef struct hp_meta
{
	int			version;		/* 0: written before the line was versioned */
	int			pid;
	unsigned	owner;			/* role OID */
	long long	taken_at;		/* PostgreSQL TimestampTz */
	char		backend_type[64];
} hp_meta;

/* A statement that left memory behind (statement captures). */
#define HP_MAX_QUERY 1024
/* Room for an encoding's name (PostgreSQL's, as "LATIN1"), with its NUL. */
#define HP_ENCODING_MAX 32

typedef struct hp_capture
{
	long long	queryid;		/* 0: not computed */
	long long	growth;			/* bytes the backend held more after the statement */
	bool		partial;		/* the record of recent allocations did not reach back to its start */
	char		database[64];
	char		query[HP_MAX_QUERY + 1];
	char		encoding[HP_ENCODING_MAX];	/* read: the writer's database encoding (its texts'), or "" */
} hp_capture;

/* Room that hp_format_capture may need at most. */
#define HP_CAPTURE_MAX (96 + 20 + 4 * 64 + 20 + 4 * HP_MAX_QUERY)

/* Writers: the lines into buf (always NUL-terminated); return their length. */
extern size_t hp_format_meta(char *buf, size_t size, const hp_meta *m);
extern size_t hp_format_identity(char *buf, size_t size, const hp_identity *id);
extern size_t hp_format_capture(char *buf, size_t size, const hp_capture *c);

/* The "%heapprof" line among the leading "%" lines; false if there is none. */
extern bool hp_read_meta(const char *text, size_t len, hp_meta *m);

/* The capture lines among the leading "%" lines; false if there are none. */
extern bool hp_read_capture(const char *text, size_t len, hp_capture *c);

/* Bytes of the leading "%" lines: what is left out for jemalloc's own text. */
extern size_t hp_header_length(const char *text, size_t len);

/*
 * The profile text buf, for a file kept on disk: its leading "%" lines with
 * the statement texts left out (a label's, a capture's: only the queryid
 * stays), the rest as it is -- given in order to put(arg, piece, n), which
 * returns 0 or an error that ends the copy and is returned.  No allocation.
 */
extern int	hp_put_without_texts(const char *buf, size_t len,
								 int (*put) (void *arg, const char *piece, size_t n), void *arg);

#endif
