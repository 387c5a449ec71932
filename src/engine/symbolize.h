/*
 * symbolize.h -- addresses to honest function names with elfutils.
 *
 * Modules come from the dump's own MAPPED_LIBRARIES text, so a dump from any
 * process on this machine is named correctly.  A name is given only when a
 * symbol's [value, value + size) contains the address, or DWARF says so;
 * otherwise the function's start is found from .eh_frame and the frame is
 * labelled "object+0xSTART" -- one label per function, never a neighbour's
 * name (binutils and jeprof name it after the nearest preceding export).
 */
#ifndef HEAPPROF_SYMBOLIZE_H
#define HEAPPROF_SYMBOLIZE_H

#include "env.h"
#include "format.h"

typedef struct hp_symbolizer hp_symbolizer;

typedef struct hp_symbol
{
	const char *name;			/* function name or honest label, in the arena */
	const char **inlines;		/* functions inlined at pc, innermost first */
	uint32_t	ninlines;
	const char *file;			/* source file of pc, or NULL */
	int			line;
	/* where inlines[k] is called from the next level out (file may be NULL) */
	const char **call_files;
	int		   *call_lines;
	const char *object;			/* object's file name, or NULL outside any */
	uint64_t	offset;			/* pc's place in the object, as its labels count */
	uint64_t	start;			/* run-time start of the function, 0 if unknown */
	bool		allocator;		/* inside the object that defines mallctl */
} hp_symbol;

/*
 * The source location of level k of sym (0: the innermost inlined function,
 * ninlines: the function itself), as addr2line -i gives it: the innermost
 * level is at pc's line, each level out at its call of the level inside.
 * NULL when unknown.
 */
static inline const char *
hp_symbol_location(const hp_symbol *sym, uint32_t k, int *line)
{
	if (k == 0 || k > sym->ninlines)
	{
		*line = sym->line;
		return sym->file;
	}
	*line = sym->call_lines ? sym->call_lines[k - 1] : 0;
	return sym->call_files ? sym->call_files[k - 1] : NULL;
}

extern hp_symbolizer *hp_symbolizer_new(void);
extern void hp_symbolizer_free(hp_symbolizer *s);

/*
 * Most mapped files whose code a profile's stacks may lie in: libdwfl
 * reports modules in time quadratic in their number, and a real process maps
 * a few hundred files.
 */
#define HP_MAX_MODULES 1024

/*
 * Point the session at a dump's maps, keeping only the files where some of
 * pcs[0..npcs) lie; cheap when they did not change.  Scratch memory comes
 * from a, work is counted and interrupts polled through a->env, and more
 * than HP_MAX_MODULES such files is raised there as HP_ELIMIT.  HP_ENOMEM
 * when the session's memory ran out: it then has no modules (every frame is
 * an address) until a sync succeeds, never the previous dump's.
 */
extern hp_status hp_symbolizer_sync(hp_symbolizer *s, hp_arena *a,
									const char *maps, size_t len,
									const uint64_t *pcs, size_t npcs);

/*
 * What the dumping process knew about itself at dump time (copied):
 *  - build-ids of its objects: a module whose file on disk has another
 *    build-id gets no names, only labels marked "[build-id mismatch]"
 *    (without them, files are still checked against the maps' device and
 *    inode, "[replaced]", and "(deleted)", "[deleted]");
 *  - allocator_base, where the object defining mallctl is loaded (0 if
 *    unknown): its frames are cut even when its file changed on disk (as
 *    are those of any object named libjemalloc.so*);
 *  - calls[0..ncalls): the profile's caller frames (return address - 1),
 *    sorted, *    not copied, used until the next sync or expect: without a build-id, a
 *    file with another inode than the maps' is trusted only when each of
 *    them follows a call instruction in it.
 * HP_ENOMEM when the build-ids could not be copied: no file is trusted
 * then, every frame in an object is labelled "[build-id unknown]", until an
 * expect succeeds.
 */
extern hp_status hp_symbolizer_expect(hp_symbolizer *s, const hp_build_id *ids, size_t n,
									  uint64_t allocator_base, const uint64_t *calls,
									  size_t ncalls);

/*
 * For each object judged for the current profile: its file name, what
 * decided whether it is the file the process had ("build-id", "inode", the
 * return addresses checked, ...) and the mismatch, or NULL.
 */
extern void hp_symbolizer_verdicts(hp_symbolizer *s,
								   void (*each) (void *arg, const char *object,
												 const char *evidence, const char *mismatch),
								   void *arg);

/*
 * Name one address (already moved into its call instruction); the work of
 * indexing its module on first use is counted through a->env.
 */
extern void hp_symbolize(hp_symbolizer *s, uint64_t pc, hp_arena *a, hp_symbol *out);

/*
 * The files from outside (debug files local or fetched, dwz files, fetched
 * executables) refused since the session began, each once, as "debug file
 * for OBJECT refused: WHY (WHERE)"; at most HP_MAX_REFUSALS.
 */
#define HP_MAX_REFUSALS 16
extern void hp_symbolizer_refusals(const hp_symbolizer *s,
								   void (*each) (void *arg, const char *refusal), void *arg);

/* Bytes held by the per-module indexes. */
extern size_t hp_symbolizer_memory(const hp_symbolizer *s);

/*
 * Files this machine lacks, found by build-id elsewhere (the command-line
 * tools' debuginfod client; the server never sets one).  Each returns an
 * open descriptor and the file's malloc'ed path, or -1.  A file that is not
 * the build asked for (verify.h) is refused and given to discard, which
 * removes it from the fetcher's cache: no later run finds it there.
 */
typedef struct hp_fetcher
{
	int			(*executable) (void *arg, const unsigned char *id, size_t len, char **path);
	int			(*debuginfo) (void *arg, const unsigned char *id, size_t len, char **path);
	void		(*discard) (void *arg, const char *path);
	void	   *arg;
} hp_fetcher;

/*
 * Ask f for a module's file when the one at its path is missing or not the
 * build the process recorded, and for debug info not found locally.
 */
extern void hp_symbolizer_fetch(hp_symbolizer *s, const hp_fetcher *f);

/*
 * Where objects' symbol indexes (symindex.h) are kept, by GNU build-id: map
 * returns a read-only mapping of the index file and its length, or NULL
 * (with *refused set when a file was there but not one to trust); the
 * symbolizer checks the bytes itself and gives back through unmap what it
 * mapped.  discard removes a file found unusable; publish keeps a new
 * index's bytes (atomically: a reader sees a whole file or none).  Each may
 * raise through the analysis' env.
 */
typedef struct hp_index_store
{
	const void *(*map) (void *arg, const uint8_t *id, size_t idlen, size_t *len, bool *refused);
	void		(*unmap) (void *arg, const void *p, size_t len);
	void		(*discard) (void *arg, const uint8_t *id, size_t idlen);
	void		(*publish) (void *arg, const uint8_t *id, size_t idlen, const void *buf, size_t len);
	void	   *arg;
} hp_index_store;

extern void hp_symbolizer_store(hp_symbolizer *s, const hp_index_store *st);

/*
 * This process's modules named from a shared index (hits), indexed on their
 * own for want of one (misses; refused of them had a file that failed its
 * checks), and indexes written (built).
 */
typedef struct hp_index_counts
{
	uint64_t	hits;
	uint64_t	misses;
	uint64_t	refused;
	uint64_t	built;
} hp_index_counts;

extern void hp_symbolizer_counts(hp_index_counts *c);

#endif
