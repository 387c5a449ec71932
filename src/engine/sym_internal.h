/*
 * sym_internal.h -- the symbolizer's parts, private to symbolize.c and sym_*.c.
 *
 * symbolize.c keeps the libdwfl session (maps, modules) and asks, per
 * module, indexes built on first use:
 *   sym_elf.c      sized function symbols and assembly labels: names
 *   sym_ehframe.c  .eh_frame FDE ranges: true starts of nameless functions
 *   sym_dwarf.c    per-CU function and inlined-call ranges: inline chains
 * and, per name or file:
 *   sym_names.c    C++ demangling, shortened as jeprof shows names
 *   sym_identity.c is the file on disk the one the process had mapped?
 *
 * A session lives as long as its backend, across analyses, so everything
 * here is malloc'ed (with NULL checks), never in an analysis arena.  Running
 * out of memory while indexing leaves a smaller index: fewer names, never
 * wrong ones.  Index builds count their work through the analysis' env, so
 * a backend's interrupt may longjmp out of one: whatever a build allocated
 * is already reachable from its index, and an index is used only once its
 * build returned (symbolize.c and sym_dwarf.c mark the unfinished ones).
 */
#ifndef HEAPPROF_SYM_INTERNAL_H
#define HEAPPROF_SYM_INTERNAL_H

#include "symbolize.h"
#include "symindex.h"

#include <elfutils/libdwfl.h>
#include <stdlib.h>

/*
 * Double a malloc'ed array of *cap elements of elem bytes (first: the
 * initial capacity).  NULL when memory ran out; the array is then untouched.
 */
static inline void *
grow_array(void *arr, size_t *cap, size_t first, size_t elem)
{
	size_t		ncap = *cap ? *cap * 2 : first;
	void	   *v = ncap <= SIZE_MAX / elem ? realloc(arr, ncap * elem) : NULL;

	if (v != NULL)
		*cap = ncap;
	return v;
}

/* sym_elf.c: a module's symbol table, sorted by address. */
typedef struct sym_range
{
	uint64_t	lo;				/* run-time addresses */
	uint64_t	hi;
	const char *name;			/* owned by libelf, lives with the module */
	int			rank;			/* lower is preferred among aliases */
} sym_range;

typedef struct sym_symbols
{
	sym_range  *syms;			/* sized functions */
	size_t		nsyms;
	sym_range  *labels;			/* sizeless symbols, hi = end of their section */
	size_t		nlabels;
	bool		defines_mallctl;	/* the symbols say the file is jemalloc */
	size_t		bytes;
} sym_symbols;

extern void sym_elf_index(hp_env *env, Dwfl_Module *mod, sym_symbols *ix);
extern void sym_elf_free(sym_symbols *ix);
/* The sized symbol containing pc, or NULL. */
extern const sym_range *sym_elf_find(const sym_symbols *ix, uint64_t pc);
/* The label naming pc; start is pc's function start from .eh_frame or UINT64_MAX. */
extern const sym_range *sym_elf_label(const sym_symbols *ix, uint64_t pc, uint64_t start);

/* sym_ehframe.c: a module's FDE ranges, sorted by address. */
typedef struct sym_fde
{
	uint64_t	lo;				/* file addresses */
	uint64_t	hi;
} sym_fde;

typedef struct sym_cie
{
	Dwarf_Off	offset;
	uint8_t		enc;			/* its FDEs' pointer encoding */
} sym_cie;

typedef struct sym_fdes
{
	sym_fde    *v;
	size_t		n;
	size_t		bytes;
	sym_cie    *cies;			/* while building */
} sym_fdes;

extern void sym_ehframe_index(hp_env *env, Elf *elf, sym_fdes *ix);
extern void sym_ehframe_free(sym_fdes *ix);
/* The FDE whose range holds the file address addr, or NULL. */
extern const sym_fde *sym_ehframe_find(const sym_fdes *ix, uint64_t addr);

/* sym_dwarf.c: a module's compile units, indexed when first touched. */
#define SYM_MAX_INLINE_DEPTH 64

typedef struct sym_cu sym_cu;

typedef struct sym_cu_range
{
	uint64_t	lo;				/* module addresses */
	uint64_t	hi;
	uint64_t	cu;				/* the CU DIE's offset */
} sym_cu_range;

typedef struct sym_cus
{
	sym_cu	  **slots;			/* open hash on CU offset */
	size_t		n;
	size_t		nslots;
	size_t		bytes;
	/* every CU's ranges, sorted, for an object without aranges (see sym_dwarf_cu) */
	int			aranges;		/* 0: not looked at yet, 1: the object has them, -1: it has none */
	sym_cu_range *ranges;
	size_t		nranges;
	bool		ranged;
} sym_cus;

/*
 * One level of an inline chain: its function's name (may be NULL) and,
 * for an inlined call, where the next level out calls it (call_file may be
 * NULL).
 */
typedef struct sym_level
{
	const char *name;
	const char *call_file;
	int			call_line;
} sym_level;

/*
 * The function containing pc (levels[0]) and the functions inlined into it
 * at pc, innermost last.  Returns how many, 0 when DWARF does not cover pc.
 */
extern int	sym_dwarf_chain(hp_env *env, sym_cus *cus, Dwfl_Module *mod, uint64_t pc,
							sym_level levels[SYM_MAX_INLINE_DEPTH]);
/*
 * The CU covering pc (a module address) into *out, and its bias; NULL if
 * none.  libdwfl finds it through .debug_aranges, which clang does not emit
 * (and elfutils before 0.191 then finds nothing): for an object without
 * them every CU's own ranges are read once, the CUs the index export walks,
 * so that a name is the same from a shared symbol index and without one.
 * (An object with aranges that do not cover pc has no CU there: its CUs
 * are not walked, which would read all of its DWARF.)
 */
extern Dwarf_Die *sym_dwarf_cu(hp_env *env, sym_cus *cus, Dwfl_Module *mod, uint64_t pc,
							   Dwarf_Addr *bias, Dwarf_Die *out);
/*
 * Every CU's function and inlined-call ranges, with their names and call
 * sites, and line rows, into w in addresses from the object's load bias
 * elf_bias.  CUs are indexed into cus as lookups would.
 */
extern void sym_dwarf_export(hp_env *env, sym_cus *cus, Dwfl_Module *mod, uint64_t elf_bias,
							 hpx_writer *w);
extern void sym_dwarf_free(sym_cus *cus);

/* sym_names.c: the demangler's buffer, reused. */
typedef struct sym_names
{
	char	   *buf;
	size_t		len;
	size_t	   *stack;			/* drop_groups' open brackets */
	size_t		stack_cap;
} sym_names;

/* name as shown: C++ demangled and shortened, others copied; in the arena. */
extern const char *sym_display_name(sym_names *n, hp_arena *a, const char *name);
extern void sym_names_free(sym_names *n);

/* sym_identity.c: what the dumping process had mapped, and knew. */
typedef struct sym_map_file
{
	uint64_t	start;
	unsigned	dev_major;
	unsigned	dev_minor;
	uint64_t	inode;
	size_t		order;			/* its place in the maps */
} sym_map_file;

typedef struct sym_identity
{
	sym_map_file *files;		/* the maps' lines that map a file, by start */
	size_t		nfiles;
	hp_build_id *ids;			/* build-ids by load bias */
	size_t		nids;
	bool		ids_lost;		/* the last expect failed: no file is trusted */
	uint64_t	allocator_base;
	const uint64_t *calls;		/* the profile's caller addresses, sorted (not owned) */
	size_t		ncalls;
} sym_identity;

extern hp_status sym_identity_maps(sym_identity *id, const char *maps, size_t len);
extern hp_status sym_identity_expect(sym_identity *id, const hp_build_id *ids, size_t n,
									 uint64_t allocator_base, const uint64_t *calls,
									 size_t ncalls);
/*
 * Why the file at path, mapped at [low, high), is not the one the process
 * had there, or NULL.  elf and bias: the file as libdwfl read it (NULL if it
 * could not) and its load bias.  evidence (len bytes): what decided.
 */
extern const char *sym_identity_check(const sym_identity *id, Dwfl_Module *mod,
									  const char *path, uint64_t low, uint64_t high,
									  Elf *elf, uint64_t bias, char *evidence, size_t len);
/* Length of an object's name without libdwfl's " (deleted)" suffix. */
extern size_t sym_identity_name_len(const char *object);
extern void sym_identity_free(sym_identity *id);

#endif
