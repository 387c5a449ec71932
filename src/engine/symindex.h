/*
 * symindex.h -- one object's symbol index as a flat, position-independent
 * file, shared read-only by every process that maps it.
 *
 * A backend's first report used to read each object's symbol table,
 * .eh_frame and DWARF into its own heap (tens of ms, 15-20 MB per
 * session).  The index holds, in file addresses of the object, everything
 * a name is made of: sized symbols and labels (sym_elf.c's order), FDE
 * ranges, the line table with one row per address, and function and
 * inlined-call ranges by nesting depth with their names and call sites.
 * Its header names the object's GNU build-id; all references are offsets
 * into the file, strings into one pool.
 *
 * hp_symindex_open checks the header and every table's bounds, so that no
 * lookup reads outside the mapping whatever the bytes: a corrupt or planted
 * file gives NULL, never a crash (fuzz/fuzz_symindex.c).  Entries are not
 * checked one by one (that would touch the whole file): a lookup bounds
 * every string offset it follows.
 */
#ifndef HEAPPROF_SYMINDEX_H
#define HEAPPROF_SYMINDEX_H

#include "arena.h"
#include "format.h"

#include <stdbool.h>
#include <stdint.h>

#define HPX_MAGIC "HPSYMIX"		/* 8 bytes with its NUL */
#define HPX_VERSION 1
#define HPX_DEPTHS 64			/* SYM_MAX_INLINE_DEPTH */
#define HPX_NONE UINT32_MAX		/* no string */
#define HPX_END (UINT32_MAX - 1)	/* a line row ending a sequence */

enum
{
	HPX_SYMS, HPX_LABELS, HPX_FDES, HPX_LINES, HPX_INLINES, HPX_STRINGS, HPX_NTABLES
};

#define HPX_DEFINES_MALLCTL 1	/* header flags */
#define HPX_NO_DEBUG_INFO 2		/* written without the object's DWARF */

typedef struct hpx_table
{
	uint64_t	off;
	uint64_t	n;				/* records (bytes for the string pool) */
} hpx_table;

typedef struct hpx_header
{
	char		magic[8];
	uint32_t	version;
	uint32_t	flags;
	uint64_t	size;			/* of the whole file */
	uint32_t	idlen;
	uint8_t		id[64];
	uint32_t	pad;
	hpx_table	t[HPX_NTABLES];
	uint64_t	depth[HPX_DEPTHS + 1];	/* inline records of depth d: [depth[d], depth[d+1]) */
} hpx_header;

typedef struct hpx_sym
{
	uint64_t	lo;
	uint64_t	hi;
	uint32_t	name;
	int32_t		rank;
} hpx_sym;

typedef struct hpx_fde
{
	uint64_t	lo;
	uint64_t	hi;
} hpx_fde;

typedef struct hpx_line
{
	uint64_t	addr;
	uint32_t	file;			/* HPX_END: no line from here */
	int32_t		line;
} hpx_line;

typedef struct hpx_inline
{
	uint64_t	lo;
	uint64_t	hi;
	uint32_t	name;
	uint32_t	call_file;
	int32_t		call_line;
	uint32_t	pad;
} hpx_inline;

/*
 * A checked index: pointers into the caller's mapping, and the header's
 * bounds copied, so that a file changed under the mapping cannot move a
 * lookup outside it.
 */
typedef struct hp_symindex
{
	uint32_t	flags;
	uint64_t	depth[HPX_DEPTHS + 1];
	const hpx_sym *syms;
	size_t		nsyms;
	const hpx_sym *labels;
	size_t		nlabels;
	const hpx_fde *fdes;
	size_t		nfdes;
	const hpx_line *lines;
	size_t		nlines;
	const hpx_inline *inl;
	size_t		ninl;
	const char *str;
	size_t		nstr;
} hp_symindex;

/*
 * Check len bytes at p as the index of the object with build-id id[0..idlen)
 * and fill ix; false (ix untouched) when anything is off.  p must be
 * 8-byte aligned (a mapping is).
 */
extern bool hp_symindex_open(hp_symindex *ix, const void *p, size_t len,
							 const uint8_t *id, size_t idlen);

/* A string of the pool, or NULL for HPX_NONE or an offset out of bounds. */
static inline const char *
hp_symindex_str(const hp_symindex *ix, uint32_t off)
{
	return off < ix->nstr ? ix->str + off : NULL;
}

/* sym_elf_find and sym_elf_label over the index (file addresses). */
extern const hpx_sym *hp_symindex_sym(const hp_symindex *ix, uint64_t addr);
extern const hpx_sym *hp_symindex_label(const hp_symindex *ix, uint64_t addr, uint64_t start);
extern const hpx_fde *hp_symindex_fde(const hp_symindex *ix, uint64_t addr);
/* The line row naming addr, or NULL. */
extern const hpx_line *hp_symindex_line(const hp_symindex *ix, uint64_t addr);
/* The function (out[0]) and inlined calls at addr, innermost last; how many. */
extern int	hp_symindex_chain(const hp_symindex *ix, uint64_t addr,
							  const hpx_inline *out[HPX_DEPTHS]);

/* ---- writing ---- */

/* Rows while writing: with the order that breaks ties between equal addresses. */
typedef struct hpx_wline
{
	hpx_line	r;
	uint64_t	order;
} hpx_wline;

typedef struct hpx_winline
{
	hpx_inline	r;
	uint64_t	order;
	int			depth;
} hpx_winline;

typedef struct hpx_writer
{
	hp_arena   *a;
	hp_map		strings;		/* pool offsets by string */
	hp_buf		pool;
	uint32_t   *offs;			/* offs[k]: pool offset of strings' key k */
	size_t		noffs;
	size_t		capoffs;
	hpx_sym    *syms;
	size_t		nsyms;
	size_t		capsyms;
	hpx_sym    *labels;
	size_t		nlabels;
	size_t		caplabels;
	hpx_fde    *fdes;
	size_t		nfdes;
	size_t		capfdes;
	hpx_wline  *lines;
	size_t		nlines;
	size_t		caplines;
	hpx_winline *inl;
	size_t		ninl;
	size_t		capinl;
	uint32_t	flags;
	bool		full;			/* a string pool beyond 4 GB: give up */
} hpx_writer;

extern void hpx_writer_init(hpx_writer *w, hp_arena *a);
/* The pool offset of s (added once), HPX_NONE for NULL. */
extern uint32_t hpx_string(hpx_writer *w, const char *s);
/* Symbols and FDEs in the order sym_elf.c and sym_ehframe.c keep them. */
extern void hpx_add_sym(hpx_writer *w, bool label, uint64_t lo, uint64_t hi, const char *name, int rank);
extern void hpx_add_fde(hpx_writer *w, uint64_t lo, uint64_t hi);
/* Rows in any order: sorted, and one kept per address, by hpx_finish. */
extern void hpx_add_line(hpx_writer *w, uint64_t addr, bool end, const char *file, int line,
						 uint64_t order);
extern void hpx_add_inline(hpx_writer *w, int depth, uint64_t lo, uint64_t hi, uint64_t order,
						   const char *name, const char *call_file, int call_line);
/* The file's bytes (arena) and their count; NULL when it cannot be written. */
extern void *hpx_finish(hpx_writer *w, const uint8_t *id, size_t idlen, size_t *len);

#endif
