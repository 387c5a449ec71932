/*
 * owner.c -- which memory context owns the block that malloc is asked for.
 *
 * A sample's context label must name the context whose block it is, as
 * pg_backend_memory_contexts counts it, not the one current at malloc:
 * MemoryContextAlloc(other, ...), repalloc (the chunk's own context) and a
 * new context's first block are all charged elsewhere by
 * CurrentMemoryContext.  PostgreSQL has no allocation hook, but every block
 * an allocator mallocs is asked for inside its alloc or realloc method,
 * which is handed the context (or, 16+, the chunk it belongs to).  So the
 * alloc, realloc and delete entries of each allocator's method table --
 * AllocSet, Generation, Slab, Bump (17+) -- are wrapped here while the
 * process samples (labels.c says when): the wrapper notes the context and
 * calls the allocator's own.  The tables are const, so the page is made
 * writable for the write and given back its own protection, as the probe
 * (at load, in the postmaster when preloaded) found it.
 *
 * The note is trusted only while its wrapper is on the stack: the hook sees
 * the frames of the sampled malloc, and the wrappers alone live in the
 * section hpg_owner_text.  An error that longjmps out of an allocator (17+
 * raises out-of-memory inside it) leaves a stale note that no later stack
 * vouches for -- but for a FATAL one, whose exit runs on top of the
 * wrapper's frame and may delete its context: a deleted context is no one's
 * note.  The wrappers' frames then leave the stack: a profile shows
 * PostgreSQL's frames as they are without heapprof.
 *
 * A context's first block holds the context itself, malloc'd by its creator
 * (AllocSetContextCreateInternal, GenerationContextCreate, ...) before it
 * has a name anyone can see.  Its sample is labelled by the creator's call
 * site, and the context created there names the site.  It is found at the
 * next context operation or sample, before any context can be freed (delete
 * is wrapped too), as a likely parent's first child changed to one whose
 * next sibling is the old first child.  The likely parents: the current
 * context, the well-known ones, the last few allocated in, and the newest
 * child of each.  Otherwise the site stays unnamed.
 *
 * AllocSet keeps up to 100 deleted contexts of the usual sizes for reuse,
 * first block and all, and a reused one is made without malloc: its first
 * block would stay labelled with the site it was made at first, under the
 * name of a context long gone, inside a live one that pgbmc counts it for.
 * So a wrapped AllocSet context is deleted for good: its freeListIndex
 * (private to aset.c) is set to -1 first.  Where that field is, the probe
 * finds out: the one int that three contexts of the default, the small and
 * other sizes have as 0, 1 and -1.  Without it, reuse goes on (and labels
 * may name the first context of a reused block).
 */
#include "postgres.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include "utils/memutils.h"

#include "compat.h"
#include "owner.h"

enum
{
	ASET, GENERATION, SLAB, BUMP, NKINDS
};

static void prepare(void);

/* Frames of a sampled malloc looked at for a wrapper or a creator. */
#define SCAN_FRAMES 48

#define OWNER_TEXT __attribute__((noinline, section("hpg_owner_text")))
extern const char __start_hpg_owner_text[];
extern const char __stop_hpg_owner_text[];

static MemoryContextMethods *tables[NKINDS];	/* PostgreSQL's, const there */
static MemoryContextMethods wrapped[NKINDS];	/* theirs with the wrappers in */
static int	prot[NKINDS];		/* their pages' protection, or -1: not to be written */
static int	freelist_at = -1;	/* offsetof(AllocSetContext, freeListIndex), if found */
static MemoryContextMethods orig[NKINDS];	/* their entries before wrapping */
static bool probed;
static bool installed;

/* The context of the innermost alloc or realloc running: see the header comment. */
static MemoryContext running;

/* The functions that malloc a new context: [lo, lo + size). */
static struct
{
	uintptr_t	lo;
	uintptr_t	size;
}			creators[NKINDS];
static int	ncreators;

/* The last contexts allocated in, distinct, none deleted (the delete wrapper sees to it). */
#define NRECENT 8
static MemoryContext recent[NRECENT];
static unsigned recent_at;
static MemoryContext recent_last;	/* the newest of them: the one test on palloc's path */

static void
note_recent(MemoryContext c)
{
	recent_last = c;
	recent[++recent_at % NRECENT] = c;
}

/* A new context whose name is awaited: the likely parents' first children before it. */
#define NUSUAL 9
#define NPARENTS (2 * (NUSUAL + NRECENT))
static struct
{
	int			token;			/* -1: none awaited */
	void		(*named) (int token, MemoryContext created);
	int			n;
	MemoryContext parent[NPARENTS];
	MemoryContext first[NPARENTS];
}			expected = {.token = -1};

/* The awaited context named, if found. */
static void
settle(void)
{
	int			token = expected.token;

	if (token < 0)
		return;
	expected.token = -1;
	for (int k = 0; k < expected.n; k++)
	{
		MemoryContext p = expected.parent[k];
		MemoryContext f = p->firstchild;

		if (f != NULL && f != expected.first[k] && f->nextchild == expected.first[k] &&
			f->parent == p && f->name != NULL)
		{
			expected.named(token, f);
			return;
		}
	}
}

void
hpg_owner_settle(void)
{
	settle();
}

/*
 * c, when not NULL nor known yet, as a likely parent: only one whose table
 * is wrapped, so that its deletion settles first (a context with a table
 * of its own could go unseen, and be read after it is freed).
 */
static void
add_parent(MemoryContext c)
{
	bool		wrapped = false;

	if (c == NULL || expected.n >= NPARENTS)
		return;
	for (int k = 0; k < NKINDS && !wrapped; k++)
		wrapped = tables[k] != NULL && c->methods == tables[k];
	if (!wrapped)
		return;
	for (int k = 0; k < expected.n; k++)
		if (expected.parent[k] == c)
			return;
	expected.parent[expected.n] = c;
	expected.first[expected.n] = c->firstchild;
	expected.n++;
}

void
hpg_owner_expect(int token, void (*named) (int token, MemoryContext created))
{
	MemoryContext usual[NUSUAL] = {CurrentMemoryContext, TopMemoryContext, CacheMemoryContext,
		MessageContext, TopTransactionContext, CurTransactionContext, PortalContext, ErrorContext,
	PostmasterContext};
	int			n;

	settle();					/* an earlier one: its creator has returned */
	expected.n = 0;
	for (int i = 0; i < NUSUAL; i++)
		add_parent(usual[i]);
	for (int i = 0; i < NRECENT; i++)
		add_parent(recent[i]);
	/* and the newest child of each (a context made just before, under it) */
	n = expected.n;
	for (int k = 0; k < n; k++)
		add_parent(expected.first[k]);
	expected.named = named;
	expected.token = token;
}

/*
 * The wrappers, one set per allocator: note the owner, run the allocator's
 * own -- on every palloc, so as little as can be.  The note is not put back
 * after: only a wrapper's frame on the stack vouches for it, and an
 * allocator calls no other context's alloc.  The empty asm keeps the call a
 * call (a tail call would take the frame away).
 */
#define WRAP_ALLOC(K) \
OWNER_TEXT static void * \
alloc_##K(HPG_ALLOC_PARAMS) \
{ \
	void	   *p; \
	\
	if (unlikely(expected.token >= 0)) \
		settle(); \
	if (unlikely(context != recent_last)) \
		note_recent(context); \
	running = context; \
	p = orig[K].alloc(HPG_ALLOC_ARGS); \
	__asm__ volatile("" : : "r"(p)); \
	return p; \
}
#define WRAP_REALLOC(K) \
OWNER_TEXT static void * \
realloc_##K(HPG_REALLOC_PARAMS) \
{ \
	void	   *p; \
	\
	if (unlikely(expected.token >= 0)) \
		settle(); \
	running = HPG_REALLOC_OWNER; \
	p = orig[K].realloc(HPG_REALLOC_ARGS); \
	__asm__ volatile("" : : "r"(p)); \
	return p; \
}
#define WRAP_DELETE(K) \
static void \
delete_##K(MemoryContext context) \
{ \
	if (K == ASET && freelist_at >= 0) \
		*(int *) ((char *) context + freelist_at) = -1; \
	if (unlikely(expected.token >= 0)) \
		settle(); \
	for (int i = 0; i < NRECENT; i++) \
		if (recent[i] == context) \
			recent[i] = NULL; \
	if (recent_last == context) \
		recent_last = NULL; \
	if (running == context) \
		running = NULL; \
	orig[K].delete_context(context); \
}

WRAP_ALLOC(ASET)
WRAP_ALLOC(GENERATION)
WRAP_ALLOC(SLAB)
WRAP_ALLOC(BUMP)
/* Slab's and Bump's realloc never malloc (they refuse to grow) */
WRAP_REALLOC(ASET)
WRAP_REALLOC(GENERATION)
WRAP_DELETE(ASET)
WRAP_DELETE(GENERATION)
WRAP_DELETE(SLAB)
WRAP_DELETE(BUMP)

/* Where AllocSetContext's freeListIndex is: see the header comment. */
static void
find_freelist_index(void)
{
	MemoryContext usual = AllocSetContextCreate(TopMemoryContext, "heapprof probe", ALLOCSET_DEFAULT_SIZES);
	MemoryContext small = AllocSetContextCreate(TopMemoryContext, "heapprof probe", ALLOCSET_SMALL_SIZES);
	MemoryContext other = AllocSetContextCreate(TopMemoryContext, "heapprof probe", 0, 4096, 8192);
	int			found = -1;

	for (int at = MAXALIGN(sizeof(MemoryContextData)); at < 512; at += sizeof(int))
	{
		if (*(int *) ((char *) usual + at) == 0 && *(int *) ((char *) small + at) == 1 &&
			*(int *) ((char *) other + at) == -1)
		{
			if (found >= 0)
			{
				found = -1;		/* two of them: neither is sure */
				break;
			}
			found = at;
		}
	}
	MemoryContextDelete(usual);
	MemoryContextDelete(small);
	MemoryContextDelete(other);
	freelist_at = found;
}

void
hpg_owner_probe(void)
{
	MemoryContext gen;
	MemoryContext slab;

	if (probed)
		return;
	find_freelist_index();
	/* one throwaway context of each kind, to find its method table */
	gen = GenerationContextCreate(TopMemoryContext, "heapprof probe", 0, 8192, 8192);
	slab = SlabContextCreate(TopMemoryContext, "heapprof probe", SLAB_DEFAULT_BLOCK_SIZE, 64);
	tables[ASET] = unconstify(MemoryContextMethods *, TopMemoryContext->methods);
	tables[GENERATION] = unconstify(MemoryContextMethods *, gen->methods);
	tables[SLAB] = unconstify(MemoryContextMethods *, slab->methods);
	MemoryContextDelete(gen);
	MemoryContextDelete(slab);
#ifdef HPG_HAVE_BUMP
	{
		MemoryContext bump = BumpContextCreate(TopMemoryContext, "heapprof probe", ALLOCSET_SMALL_SIZES);

		tables[BUMP] = unconstify(MemoryContextMethods *, bump->methods);
		MemoryContextDelete(bump);
	}
#endif
	for (int k = 0; k < NKINDS; k++)
		if (tables[k] != NULL)
			orig[k] = *tables[k];
	prepare();
	probed = true;
}

size_t
hpg_owner_allocator_starts(uint64_t *starts, size_t max)
{
	size_t		n = 0;

	for (int k = 0; k < NKINDS; k++)
	{
		if (tables[k] == NULL)
			continue;
		if (n < max)
			starts[n++] = (uint64_t) (uintptr_t) orig[k].alloc;
		if (n < max)
			starts[n++] = (uint64_t) (uintptr_t) orig[k].realloc;
	}
	return n;
}

/* The protection of the mapping holding addr (PROT_*), or -1. */
static int
protection_of(uintptr_t addr)
{
	FILE	   *f = fopen("/proc/self/maps", "r");
	char		line[512];
	int			prot = -1;

	if (f == NULL)
		return -1;
	while (prot < 0 && fgets(line, sizeof(line), f) != NULL)
	{
		unsigned long lo,
					hi;
		char		perms[8];

		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && addr >= lo && addr < hi)
			prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
				(perms[2] == 'x' ? PROT_EXEC : 0);
	}
	fclose(f);
	return prot;
}

/*
 * *dst = *src in a const table whose pages have protection prot: writable
 * for the write, then as they were.  0, or an errno.
 */
static int
write_table(MemoryContextMethods *dst, const MemoryContextMethods *src, int prot)
{
	uintptr_t	page = (uintptr_t) sysconf(_SC_PAGESIZE);
	uintptr_t	lo = (uintptr_t) dst & ~(page - 1);
	uintptr_t	hi = ((uintptr_t) (dst + 1) + page - 1) & ~(page - 1);

	if (prot < 0)
		return ENOTSUP;			/* no mapping, or two of different protections */
	if (!(prot & PROT_WRITE) && mprotect((void *) lo, hi - lo, prot | PROT_WRITE) != 0)
		return errno;
	memcpy(dst, src, sizeof(*dst));
	if (!(prot & PROT_WRITE))
		(void) mprotect((void *) lo, hi - lo, prot);
	return 0;
}

static void
add_creator(void *fn)
{
	Dl_info		info;
	const ElfW(Sym) *sym = NULL;

	if (dladdr1(fn, &info, (void **) &sym, RTLD_DL_SYMENT) != 0 && sym != NULL &&
		info.dli_saddr == fn && sym->st_size > 0)
	{
		creators[ncreators].lo = (uintptr_t) fn;
		creators[ncreators].size = sym->st_size;
		ncreators++;
	}
}

/* What wrapping needs and a forked process inherits: the wrapped tables, the pages' protection, the creators. */
static void
prepare(void)
{
	for (int k = 0; k < NKINDS; k++)
	{
		int			first;

		if (tables[k] == NULL)
			continue;
		wrapped[k] = orig[k];
		switch (k)
		{
			case ASET:
				wrapped[k].alloc = alloc_ASET;
				wrapped[k].realloc = realloc_ASET;
				wrapped[k].delete_context = delete_ASET;
				break;
			case GENERATION:
				wrapped[k].alloc = alloc_GENERATION;
				wrapped[k].realloc = realloc_GENERATION;
				wrapped[k].delete_context = delete_GENERATION;
				break;
			case SLAB:
				wrapped[k].alloc = alloc_SLAB;
				wrapped[k].delete_context = delete_SLAB;
				break;
			case BUMP:
				wrapped[k].alloc = alloc_BUMP;
				wrapped[k].delete_context = delete_BUMP;
				break;
		}
		first = protection_of((uintptr_t) tables[k]);
		prot[k] = first == protection_of((uintptr_t) (tables[k] + 1) - 1) ? first : -1;
	}
	add_creator((void *) AllocSetContextCreateInternal);
	add_creator((void *) GenerationContextCreate);
	add_creator((void *) SlabContextCreate);
#ifdef HPG_HAVE_BUMP
	add_creator((void *) BumpContextCreate);
#endif
}

/* Every table as in set (wrapped or orig), or none changed: 0, or an errno. */
static int
write_tables(const MemoryContextMethods *set, const MemoryContextMethods *undo)
{
	int			done = 0;
	int			err = 0;

	for (; done < NKINDS && err == 0; done++)
		if (tables[done] != NULL)
			err = write_table(tables[done], &set[done], prot[done]);
	if (err != 0)
	{
		/* back to as it was: the tables before the one that failed were written */
		for (done -= 2; done >= 0; done--)
			if (tables[done] != NULL)
				(void) write_table(tables[done], &undo[done], prot[done]);
	}
	return err;
}

void
hpg_owner_wrap(bool on)
{
	static bool logged;
	int			err;

	if (!probed || on == installed)
		return;
	/* nothing of a time unwrapped is known: deletions went unseen */
	memset(recent, 0, sizeof(recent));
	recent_last = NULL;
	expected.token = -1;
	running = NULL;
	err = on ? write_tables(wrapped, orig) : write_tables(orig, wrapped);
	if (err == 0)
		installed = on;
	else if (!logged)
	{
		logged = true;
		ereport(LOG,
				(errmsg("heapprof: could not %s the memory allocators' method tables: %s",
						on ? "wrap" : "unwrap", strerror(err)),
				 errdetail("The context labels of samples name the context current at malloc, as \"current: NAME\".")));
	}
}

static inline bool
in_wrapper(uintptr_t pc)
{
	return pc >= (uintptr_t) __start_hpg_owner_text && pc < (uintptr_t) __stop_hpg_owner_text;
}

hpg_owner_kind
hpg_owner_of(void **vec, unsigned *len, hpg_owner *out)
{
	hpg_owner_kind kind = HPG_OWNER_NONE;
	unsigned	n = 0;

	if (!installed)
		return HPG_OWNER_NONE;
	for (unsigned i = 0; i < *len; i++)
	{
		/* a return address: the call is the byte before it */
		uintptr_t	pc = (uintptr_t) vec[i] - 1;

		if (i < SCAN_FRAMES && in_wrapper(pc))
		{
			/* the innermost wrapper's note; its frame leaves the stack */
			if (kind == HPG_OWNER_NONE && running != NULL)
			{
				out->context = running;
				kind = HPG_OWNER_CONTEXT;
			}
			continue;
		}
		for (int k = 0; i < SCAN_FRAMES && kind == HPG_OWNER_NONE && k < ncreators; k++)
			if (pc - creators[k].lo < creators[k].size && i + 1 < *len)
			{
				out->site = (uintptr_t) vec[i + 1];
				kind = HPG_OWNER_CREATING;
			}
		vec[n++] = vec[i];
	}
	*len = n;
	return kind;
}
