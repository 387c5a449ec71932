/*
 * owner.c -- which memory context owns the block that malloc is asked for.
 *
 * A sample's context label must name the context whose block it is, as
 * pg_backend_memory_contexts counts it, not the one current at malloc:
 * MemoryContextAlloc(other, ...), repalloc (the chunk's own context) and a
 * new context's first block are all charged elsewhere by
 * CurrentMemoryContext.  PostgreSQL has no allocation hook, but every block
 * an allocator mallocs is asked for inside its alloc or realloc method,
 * which is handed the context (or, 16+, the chunk, whose context
 * GetMemoryChunkContext tells).  So the alloc and realloc entries of each
 * allocator's method table -- AllocSet, Generation, Slab, Bump (17+) -- are
 * wrapped here while the process samples (labels.c says when): the wrapper
 * notes the context and jumps to the allocator's own, two instructions on
 * every palloc and no frame.  The tables are const: image.c writes them.
 *
 * The note is trusted only when the sampled malloc was called from one of
 * the allocators' own functions (the executable's innermost frame is in
 * one): then that allocator is running, entered through its wrapper, and
 * nothing it runs allocates from a context -- so the note is its own.
 * Every context of 16+ uses these four tables, and on 15 an extension's own
 * allocator is not one of those functions; C code that gives a context a
 * copy of a table, or calls an allocator directly, goes round the wrapper
 * (heapprof's own copy, target.c's doorbell, forwards to the table): the
 * note is then an earlier context's -- never one whose memory was freed:
 * owned_free takes it back.  The functions are learned once, before wrapping: the
 * executable's slots for malloc and realloc point at learning functions
 * while a throwaway context of each kind takes every path that mallocs (a
 * large chunk, new blocks growing, growth, and a first malloc refused, for
 * the retry), and the function each call comes from (by the unwinder's
 * tables: 17+ mallocs from helpers, a compiler may copy a call into two
 * places or move it to a cold part) is one.  Elsewhere -- a platform whose
 * relocations image.c does not know, a path not taken -- the note is not
 * trusted and the label says "current: NAME".
 *
 * A context's first block holds the context itself, malloc'd by its creator
 * (AllocSetContextCreateInternal, GenerationContextCreate, ...) before it
 * has a name anyone can see.  Its sample is labelled by the creator's call
 * site, and the context created there names the site.  While the tables
 * are wrapped, the executable's malloc and free are owned_malloc and
 * owned_free.  The first keeps the address a sampled creation returns: the
 * context, named at the next context operation or sample (the hook puts
 * settling wrappers in the tables until then: the next alloc, realloc or
 * delete -- the context's own deletion too -- looks first), or, for a hash
 * table, once hash_create has named it after its table.  The second names
 * it when its memory goes, and takes back a note of a context whose memory
 * goes, whichever table its deletion took.  In another thread than the
 * process's own (an extension's), none of this is touched: the owner of a
 * block malloc'd there is not known.
 *
 * AllocSet keeps up to 100 deleted contexts of the usual sizes for reuse,
 * first block and all, and a reused one is made without malloc: a sampled
 * first block would stay labelled with the site it was made at first, under
 * the name of a context long gone, inside a live one that pgbmc counts it
 * for.  So a context whose first block was sampled is deleted for good: its
 * freeListIndex (private to aset.c) is set to -1 when it is named.  Where
 * that field is, the probe finds out: the one int that three contexts of
 * the default, the small and other sizes have as 0, 1 and -1.  Other
 * contexts are reused as PostgreSQL does: their first blocks are in no
 * sample.
 */
#include "postgres.h"

#include <pthread.h>

#include "utils/memutils.h"

#include "compat.h"
#include "image.h"
#include "owner.h"

enum
{
	ASET, GENERATION, SLAB, BUMP, NKINDS
};

/* Frames of a sampled malloc looked at for its caller. */
#define SCAN_FRAMES 48

#define OWNER_TEXT __attribute__((noinline, section("hpg_owner_text")))
extern const char __start_hpg_owner_text[];
extern const char __stop_hpg_owner_text[];

static MemoryContextMethods *tables[NKINDS];	/* PostgreSQL's, const there */
static int	prot[NKINDS];		/* their pages' protection, or -1: not to be written */
static int	freelist_at = -1;	/* offsetof(AllocSetContext, freeListIndex), if found */
static bool probed;

/* What the tables may hold: as PostgreSQL made them, noting, noting and settling first. */
enum
{
	ORIG, FAST, SETTLING, NSETS
};
static MemoryContextMethods sets[NSETS][NKINDS];
static int	shown = ORIG;

/*
 * The context of the innermost alloc or realloc running, or of one since
 * returned (but never of one deleted).  Read only when the sampled malloc
 * vouches for it (the header comment).
 */
static MemoryContext note;

/* The starts of the allocators' functions that call malloc or realloc. */
#define NALLOCATORS 32
static uintptr_t allocators[NALLOCATORS];
static int	nallocators;

/* The starts of the functions that malloc a new context. */
static uintptr_t creators[NKINDS];

/*
 * A new context whose name is awaited (token >= 0): its address, as the
 * sampled malloc that made it returned it to its creator (owned_malloc).
 */
static struct
{
	int			token;			/* -1: none awaited */
	void		(*named) (int token, MemoryContext created);
	bool		taking;			/* the sampled malloc has not returned yet */
	MemoryContext created;		/* then what it returned */
	int			waits;			/* context operations since, waiting for a hash table's name */
}			expected = {.token = -1};

/* Operations a hash table's context is waited for before it is named as it is. */
#define MAX_WAITS 64

/*
 * The executable's slots for malloc and free, pointed at owned_malloc and
 * owned_free while the tables are wrapped: their pages' protection, what
 * they held.
 */
static void **malloc_slot;
static void **free_slot;
static int	malloc_prot = -1;
static int	free_prot = -1;
static void *(*real_malloc) (size_t);
static void (*real_free) (void *);
static bool redirected;

/*
 * The thread that wraps, the process's own: in another (an extension's), a
 * sample's owner is not known, and nothing here is touched.
 */
static pthread_t sampler;

static inline bool
in_sampler(void)
{
	return pthread_equal(pthread_self(), sampler);
}

/* Every table as in sets[which], or none changed: 0, or an errno. */
static int
show(int which)
{
	int			done = 0;
	int			err = 0;

	if (which == shown)
		return 0;
	for (; done < NKINDS && err == 0; done++)
		if (tables[done] != NULL)
			err = hpg_image_write(tables[done], &sets[which][done], sizeof(MemoryContextMethods), prot[done]);
	if (err != 0)
	{
		/* back to as it was: the tables up to the one that failed may be written */
		for (done -= 1; done >= 0; done--)
			if (tables[done] != NULL)
				(void) hpg_image_write(tables[done], &sets[shown][done], sizeof(MemoryContextMethods), prot[done]);
		return err;
	}
	shown = which;
	return 0;
}

/*
 * The awaited context named, once it is linked and named (by now its
 * creator has returned), and the noting wrappers back.  A hash table's
 * context is named after the table, after its first allocation: it is
 * waited for (unless going, being deleted, or forced: another is awaited).
 */
static void
settle(MemoryContext going, bool force)
{
	int			token = expected.token;
	MemoryContext c = expected.created;

	if (token < 0)
		return;
	if (c != NULL && c != going && !force && c->ident == NULL && c->name != NULL &&
		strcmp(c->name, "dynahash") == 0 && ++expected.waits < MAX_WAITS)
		return;
	expected.token = -1;
	expected.taking = false;
	expected.created = NULL;
	if (shown == SETTLING)
		(void) show(FAST);
	if (c == NULL || c->name == NULL)
		return;					/* its malloc failed, or was not seen */
	if (c->methods == tables[ASET] && freelist_at >= 0)
		*(int *) ((char *) c + freelist_at) = -1;	/* its first block dies with it */
	expected.named(token, c);
}

void
hpg_owner_settle(void)
{
	if (shown != ORIG && in_sampler())
		settle(NULL, false);
}

void
hpg_owner_expect(int token, void (*named) (int token, MemoryContext created))
{
	if (!in_sampler())
		return;
	settle(NULL, true);			/* an earlier one: its creator has returned */
	if (!redirected)
		return;					/* its address would not be seen */
	expected.named = named;
	expected.taking = true;
	expected.created = NULL;
	expected.waits = 0;
	expected.token = token;
	/* the next context operation settles; unless the tables cannot be written: its deletion would go unseen */
	if (show(SETTLING) != 0)
	{
		expected.token = -1;
		expected.taking = false;
	}
}

/*
 * The executable's malloc while the tables are wrapped: the address of a
 * context whose making the hook saw sampled, as it returns.
 */
OWNER_TEXT static void *
owned_malloc(size_t size)
{
	void	   *p = real_malloc(size);

	if (unlikely(expected.taking) && in_sampler())
	{
		expected.taking = false;
		expected.created = p;
	}
	return p;
}

/*
 * And its free: a context's memory going (by whatever table its deletion
 * took: a copy of one, taken before sampling, is not wrapped) is no longer
 * noted nor awaited -- named now, while it is whole.
 */
OWNER_TEXT static void
owned_free(void *p)
{
	if (unlikely(p != NULL && (p == (void *) note || p == (void *) expected.created)) && in_sampler())
	{
		if (p == (void *) expected.created)
			settle((MemoryContext) p, true);
		if (p == (void *) note)
			note = NULL;
	}
	real_free(p);
}

/* Both slots at owned_malloc and owned_free, or both back, or neither changed: 0, or an errno. */
static int
redirect(bool on)
{
	void	   *to[2] = {on ? (void *) owned_malloc : (void *) real_malloc,
	on ? (void *) owned_free : (void *) real_free};
	void	  **slot[2] = {malloc_slot, free_slot};
	int			prot[2] = {malloc_prot, free_prot};
	void	   *was[2];
	int			err = 0;
	int			done;

	if (on == redirected)
		return 0;
	if (malloc_slot == NULL || free_slot == NULL)
		return ENOTSUP;
	for (done = 0; done < 2 && err == 0; done++)
	{
		was[done] = *slot[done];
		err = hpg_image_write(slot[done], &to[done], sizeof(void *), prot[done]);
	}
	if (err != 0)
	{
		/* back as they were: the one that failed may be written */
		for (done -= 1; done >= 0; done--)
			(void) hpg_image_write(slot[done], &was[done], sizeof(void *), prot[done]);
		return err;
	}
	redirected = on;
	return 0;
}

/*
 * The wrappers, per allocator: note what the allocator is handed and jump
 * to it -- on every palloc, so as little as can be: the note is neither
 * checked nor put back (the header comment says when it is read); only a
 * context's deletion takes it back, so that it never names freed memory.
 * The settling ones look for an awaited context first, then put the noting
 * ones back.
 */
#define WRAP_ALLOC(K) \
OWNER_TEXT static void * \
alloc_##K(HPG_ALLOC_PARAMS) \
{ \
	note = context; \
	return sets[ORIG][K].alloc(HPG_ALLOC_ARGS); \
} \
OWNER_TEXT static void * \
settling_alloc_##K(HPG_ALLOC_PARAMS) \
{ \
	settle(NULL, false); \
	note = context; \
	return sets[ORIG][K].alloc(HPG_ALLOC_ARGS); \
} \
static void \
delete_##K(MemoryContext context) \
{ \
	if (note == context) \
		note = NULL; \
	sets[ORIG][K].delete_context(context); \
} \
static void \
settling_delete_##K(MemoryContext context) \
{ \
	settle(context, false); \
	if (note == context) \
		note = NULL; \
	sets[ORIG][K].delete_context(context); \
}
#define WRAP_REALLOC(K) \
OWNER_TEXT static void * \
realloc_##K(HPG_REALLOC_PARAMS) \
{ \
	note = HPG_REALLOC_OWNER; \
	return sets[ORIG][K].realloc(HPG_REALLOC_ARGS); \
} \
OWNER_TEXT static void * \
settling_realloc_##K(HPG_REALLOC_PARAMS) \
{ \
	settle(NULL, false); \
	note = HPG_REALLOC_OWNER; \
	return sets[ORIG][K].realloc(HPG_REALLOC_ARGS); \
}

WRAP_ALLOC(ASET)
WRAP_ALLOC(GENERATION)
WRAP_ALLOC(SLAB)
WRAP_ALLOC(BUMP)
/* Slab's and Bump's realloc never malloc (they refuse to grow) */
WRAP_REALLOC(ASET)
WRAP_REALLOC(GENERATION)

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

/* Learning where the allocators call malloc and realloc: see the header comment. */
static bool learning;
static bool refuse_next;		/* the next malloc learned returns NULL */
static void *(*real_realloc) (void *, size_t);

/* f, a function's start, as one of the allocators' */
static void
add_allocator(uintptr_t f)
{
	for (int i = 0; i < nallocators; i++)
		if (allocators[i] == f)
			return;
	if (f != 0 && nallocators < NALLOCATORS)
		allocators[nallocators++] = f;
}

/* The function holding the return address ret, as one of the allocators'. */
static void
learn(uintptr_t ret)
{
	add_allocator(hpg_image_function(ret - 1));
}

static void *
learning_malloc(size_t size)
{
	if (learning)
	{
		learn((uintptr_t) __builtin_return_address(0));
		if (refuse_next)
		{
			refuse_next = false;
			return NULL;
		}
	}
	return real_malloc(size);
}

static void *
learning_realloc(void *p, size_t size)
{
	if (learning)
		learn((uintptr_t) __builtin_return_address(0));
	return real_realloc(p, size);
}

/*
 * Every path of c's allocator that mallocs: a large chunk (large: bigger
 * than any allocator keeps in a block), grown (grow), refused; new blocks
 * of small chunks up to total bytes, then one refused (its retry, where
 * there is one).  Only allocations that return NULL when refused: no error.
 */
#define SMALL_CHUNK 64			/* a Slab's chunk size too */
#define LARGE_CHUNK (2 * 1024 * 1024)

static void
exercise(MemoryContext c, Size total, bool large, bool grow)
{
	int			flags = MCXT_ALLOC_NO_OOM;

	learning = true;
	if (large)
	{
		void	   *p = MemoryContextAllocExtended(c, LARGE_CHUNK, flags);

		if (p != NULL && grow)
			p = repalloc(p, 2 * LARGE_CHUNK);
		refuse_next = true;
		(void) MemoryContextAllocExtended(c, LARGE_CHUNK, flags);
	}
	refuse_next = false;
	for (Size n = 0; n < total; n += SMALL_CHUNK)
		(void) MemoryContextAllocExtended(c, SMALL_CHUNK, flags);
	refuse_next = true;
	for (int i = 0; refuse_next && i < 1000000; i++)
		(void) MemoryContextAllocExtended(c, SMALL_CHUNK, flags);
	refuse_next = false;
	learning = false;
}

static void
learn_allocators(MemoryContext *probes)
{
	void	  **mslot = hpg_image_slot("malloc");
	void	  **rslot = hpg_image_slot("realloc");
	int			mprot = mslot ? hpg_image_protection(mslot, sizeof(void *)) : -1;
	int			rprot = rslot ? hpg_image_protection(rslot, sizeof(void *)) : -1;
	void	   *to;

	if (!hpg_image_init() || mprot < 0)
		return;					/* nothing learned: no note is trusted */
	real_malloc = (void *(*) (size_t)) *mslot;
	to = (void *) learning_malloc;
	if (hpg_image_write(mslot, &to, sizeof(to), mprot) != 0)
		return;
	if (rprot >= 0)
	{
		real_realloc = (void *(*) (void *, size_t)) *rslot;
		to = (void *) learning_realloc;
		if (hpg_image_write(rslot, &to, sizeof(to), rprot) != 0)
			rprot = -1;
	}
	PG_TRY();
	{
		/* AllocSet retries a refused block above 1 MB: blocks grow past it */
		exercise(probes[ASET], 3 * 1024 * 1024, true, true);
		exercise(probes[GENERATION], 256 * 1024, true, true);
		exercise(probes[SLAB], 64 * 1024, false, false);
		if (probes[BUMP] != NULL)
			exercise(probes[BUMP], 256 * 1024, true, false);
	}
	PG_FINALLY();
	{
		learning = false;
		refuse_next = false;
		to = (void *) real_malloc;
		(void) hpg_image_write(mslot, &to, sizeof(to), mprot);
		if (rprot >= 0)
		{
			to = (void *) real_realloc;
			(void) hpg_image_write(rslot, &to, sizeof(to), rprot);
		}
	}
	PG_END_TRY();
	/* for owned_malloc and owned_free while wrapped */
	malloc_slot = mslot;
	malloc_prot = mprot;
	free_slot = hpg_image_slot("free");
	free_prot = free_slot ? hpg_image_protection(free_slot, sizeof(void *)) : -1;
	real_free = free_slot ? (void (*) (void *)) *free_slot : NULL;
}

/* What wrapping needs and a forked process inherits: the sets of tables, their pages' protection, the creators. */
static void
prepare(void)
{
	for (int k = 0; k < NKINDS; k++)
	{
		MemoryContextMethods *f = &sets[FAST][k];
		MemoryContextMethods *s = &sets[SETTLING][k];

		if (tables[k] == NULL)
			continue;
		*f = *s = sets[ORIG][k];
		switch (k)
		{
			case ASET:
				f->alloc = alloc_ASET;
				f->realloc = realloc_ASET;
				s->alloc = settling_alloc_ASET;
				s->realloc = settling_realloc_ASET;
				f->delete_context = delete_ASET;
				s->delete_context = settling_delete_ASET;
				break;
			case GENERATION:
				f->alloc = alloc_GENERATION;
				f->realloc = realloc_GENERATION;
				s->alloc = settling_alloc_GENERATION;
				s->realloc = settling_realloc_GENERATION;
				f->delete_context = delete_GENERATION;
				s->delete_context = settling_delete_GENERATION;
				break;
			case SLAB:
				f->alloc = alloc_SLAB;
				s->alloc = settling_alloc_SLAB;
				f->delete_context = delete_SLAB;
				s->delete_context = settling_delete_SLAB;
				break;
			case BUMP:
				f->alloc = alloc_BUMP;
				s->alloc = settling_alloc_BUMP;
				f->delete_context = delete_BUMP;
				s->delete_context = settling_delete_BUMP;
				break;
		}
		prot[k] = hpg_image_protection(tables[k], sizeof(MemoryContextMethods));
	}
	creators[ASET] = (uintptr_t) AllocSetContextCreateInternal;
	creators[GENERATION] = (uintptr_t) GenerationContextCreate;
	creators[SLAB] = (uintptr_t) SlabContextCreate;
#ifdef HPG_HAVE_BUMP
	creators[BUMP] = (uintptr_t) BumpContextCreate;
#endif
}

void
hpg_owner_probe(void)
{
	MemoryContext probes[NKINDS] = {NULL};

	if (probed)
		return;
	find_freelist_index();
	/* one throwaway context of each kind: its method table, and its paths to malloc */
	probes[ASET] = AllocSetContextCreate(TopMemoryContext, "heapprof probe", ALLOCSET_DEFAULT_SIZES);
	probes[GENERATION] = GenerationContextCreate(TopMemoryContext, "heapprof probe", 0, 8192, 65536);
	probes[SLAB] = SlabContextCreate(TopMemoryContext, "heapprof probe", SLAB_DEFAULT_BLOCK_SIZE, SMALL_CHUNK);
#ifdef HPG_HAVE_BUMP
	probes[BUMP] = BumpContextCreate(TopMemoryContext, "heapprof probe", ALLOCSET_DEFAULT_SIZES);
#endif
	for (int k = 0; k < NKINDS; k++)
		if (probes[k] != NULL)
		{
			tables[k] = unconstify(MemoryContextMethods *, probes[k]->methods);
			sets[ORIG][k] = *tables[k];
		}
	learn_allocators(probes);
	for (int k = 0; k < NKINDS; k++)
		if (probes[k] != NULL)
			MemoryContextDelete(probes[k]);
	/* and the allocators' entries, whatever was learned (a helper may be inlined) */
	for (int k = 0; nallocators > 0 && k < NKINDS; k++)
		if (tables[k] != NULL)
		{
			add_allocator((uintptr_t) sets[ORIG][k].alloc);
			add_allocator((uintptr_t) sets[ORIG][k].realloc);
		}
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
			starts[n++] = (uint64_t) (uintptr_t) sets[ORIG][k].alloc;
		if (n < max)
			starts[n++] = (uint64_t) (uintptr_t) sets[ORIG][k].realloc;
	}
	return n;
}

void
hpg_owner_wrap(bool on)
{
	static bool logged;
	int			err;

	if (!probed || on == (shown != ORIG))
		return;
	if (on)
		sampler = pthread_self();
	settle(NULL, true);			/* one awaited: its first block was sampled */
	note = NULL;
	err = show(on ? FAST : ORIG);
	/* owned_malloc and owned_free, for the address of a sampled new context; or back */
	if (err == 0)
		(void) redirect(on);
	if (err != 0 && !logged)
	{
		logged = true;
		ereport(LOG,
				(errmsg("heapprof: could not %s the memory allocators' method tables: %s",
						on ? "wrap" : "unwrap", strerror(err)),
				 errdetail("The context labels of samples name the context current at malloc, as \"current: NAME\".")));
	}
	if (on && err == 0 && nallocators == 0 && !logged)
	{
		logged = true;
		ereport(LOG,
				(errmsg("heapprof: could not learn where the memory allocators call malloc on this platform"),
				 errdetail("The context labels of samples name the context current at malloc, as \"current: NAME\".")));
	}
}

static inline bool
in_wrapper(uintptr_t pc)
{
	return pc >= (uintptr_t) __start_hpg_owner_text && pc < (uintptr_t) __stop_hpg_owner_text;
}

/*
 * The start of the function holding pc: the unwinder's answer, remembered
 * (samples come from few places; a lookup costs more than the rest of the
 * hook).
 */
#define NREMEMBERED 256
static struct
{
	uintptr_t	pc;
	uintptr_t	function;
}			remembered[NREMEMBERED];

static uintptr_t
function_of(uintptr_t pc)
{
	unsigned	h = (unsigned) ((pc * UINT64CONST(0x9E3779B97F4A7C15)) >> 56) & (NREMEMBERED - 1);

	if (remembered[h].pc != pc)
	{
		remembered[h].function = hpg_image_function(pc);
		remembered[h].pc = pc;
	}
	return remembered[h].function;
}

static inline bool
among(uintptr_t f, const uintptr_t *set, int n)
{
	for (int k = 0; k < n; k++)
		if (set[k] == f)
			return true;
	return false;
}

hpg_owner_kind
hpg_owner_of(void **vec, unsigned *len, hpg_owner *out)
{
	hpg_owner_kind kind = HPG_OWNER_NONE;
	bool		caller_seen = false;
	unsigned	n = 0;

	if (shown == ORIG || !in_sampler())
		return HPG_OWNER_NONE;
	for (unsigned i = 0; i < *len; i++)
	{
		/* a return address: the call is the byte before it */
		uintptr_t	pc = (uintptr_t) vec[i] - 1;

		if (i < SCAN_FRAMES && in_wrapper(pc))
			continue;			/* a wrapper not compiled as a jump: out of the stack */
		if (i < SCAN_FRAMES && !caller_seen && hpg_image_code(pc))
		{
			/* the executable's innermost frame: malloc's caller, if PostgreSQL called it */
			uintptr_t	f = function_of(pc);

			caller_seen = true;
			if (f != 0 && among(f, allocators, nallocators) && note != NULL)
			{
				out->context = note;
				kind = HPG_OWNER_CONTEXT;
			}
			else if (f != 0 && among(f, creators, NKINDS) && i + 1 < *len)
			{
				out->site = (uintptr_t) vec[i + 1];
				out->caller = i + 2 < *len ? (uintptr_t) vec[i + 2] : 0;
				kind = HPG_OWNER_CREATING;
			}
		}
		vec[n++] = vec[i];
	}
	*len = n;
	return kind;
}
