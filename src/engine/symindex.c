/*
 * symindex.c -- writing, checking and searching a symbol index file (see
 * symindex.h for the layout and why).
 *
 * The lookups are the ones of sym_elf.c, sym_ehframe.c, sym_dwarf.c and
 * libdwfl's dwfl_module_getsrc, over the file's records, so that a name
 * from the index is the name the object's files give.
 */
#include "ranges.h"
#include "symindex.h"
#include "verify.h"

#include <stdlib.h>
#include <string.h>

/* ---- checking ---- */

/* Is table t of records of size rec within the file's len bytes? */
static bool
table_ok(const hpx_table *t, size_t rec, size_t len)
{
	return t->off >= sizeof(hpx_header) && t->off <= len && t->off % 8 == 0 &&
		t->n <= (len - t->off) / rec;
}

bool
hp_symindex_open(hp_symindex *ix, const void *p, size_t len,
				 const uint8_t *id, size_t idlen)
{
	const hpx_header *h = p;
	const char *base = p;
	static const size_t rec[HPX_NTABLES] = {
		sizeof(hpx_sym), sizeof(hpx_sym), sizeof(hpx_fde), sizeof(hpx_line),
		sizeof(hpx_inline), 1
	};

	if (p == NULL || len < sizeof(hpx_header) || ((uintptr_t) p) % 8 != 0 ||
		memcmp(h->magic, HPX_MAGIC, sizeof(h->magic)) != 0 ||
		h->version != HPX_VERSION || h->size != len || h->idlen > sizeof(h->id) ||
		!hp_verify_id(h->id, h->idlen, id, idlen))
		return false;
	for (int i = 0; i < HPX_NTABLES; i++)
		if (!table_ok(&h->t[i], rec[i], len))
			return false;
	/* the pool ends with a NUL: every offset in it starts a terminated string */
	if (h->t[HPX_STRINGS].n == 0 || base[h->t[HPX_STRINGS].off + h->t[HPX_STRINGS].n - 1] != '\0')
		return false;
	for (int d = 0; d < HPX_DEPTHS; d++)
		if (h->depth[d] > h->depth[d + 1])
			return false;
	if (h->depth[0] != 0 || h->depth[HPX_DEPTHS] != h->t[HPX_INLINES].n)
		return false;

	ix->flags = h->flags;
	memcpy(ix->depth, h->depth, sizeof(ix->depth));
	ix->syms = (const hpx_sym *) (base + h->t[HPX_SYMS].off);
	ix->nsyms = h->t[HPX_SYMS].n;
	ix->labels = (const hpx_sym *) (base + h->t[HPX_LABELS].off);
	ix->nlabels = h->t[HPX_LABELS].n;
	ix->fdes = (const hpx_fde *) (base + h->t[HPX_FDES].off);
	ix->nfdes = h->t[HPX_FDES].n;
	ix->lines = (const hpx_line *) (base + h->t[HPX_LINES].off);
	ix->nlines = h->t[HPX_LINES].n;
	ix->inl = (const hpx_inline *) (base + h->t[HPX_INLINES].off);
	ix->ninl = h->t[HPX_INLINES].n;
	ix->str = base + h->t[HPX_STRINGS].off;
	ix->nstr = h->t[HPX_STRINGS].n;
	return true;
}

/* ---- searching ---- */

/* Index of the last symbol starting at or below addr, or SIZE_MAX. */
HP_RANGE_TYPE(hpx_sym);
HP_RANGE_TYPE(hpx_fde);
HP_RANGE_TYPE(hpx_inline);
_Static_assert(offsetof(hpx_line, addr) == 0, "hpx_line is sorted by addr");

const hpx_sym *
hp_symindex_sym(const hp_symindex *ix, uint64_t addr)
{
	size_t		i = hp_symbol_at(ix->syms, ix->nsyms, sizeof(hpx_sym), addr);

	return i == SIZE_MAX ? NULL : &ix->syms[i];
}

const hpx_sym *
hp_symindex_label(const hp_symindex *ix, uint64_t addr, uint64_t start)
{
	size_t		i = hp_label_at(ix->labels, ix->nlabels, ix->syms, ix->nsyms, sizeof(hpx_sym), addr, start);

	return i == SIZE_MAX ? NULL : &ix->labels[i];
}

const hpx_fde *
hp_symindex_fde(const hp_symindex *ix, uint64_t addr)
{
	size_t		i = hp_range_at(ix->fdes, ix->nfdes, sizeof(hpx_fde), addr);

	return i == SIZE_MAX ? NULL : &ix->fdes[i];
}

const hpx_line *
hp_symindex_line(const hp_symindex *ix, uint64_t addr)
{
	size_t		i = hp_last_le(ix->lines, ix->nlines, sizeof(hpx_line), addr);

	return i != SIZE_MAX && ix->lines[i].file != HPX_END ? &ix->lines[i] : NULL;
}

int
hp_symindex_chain(const hp_symindex *ix, uint64_t addr, const hpx_inline *out[HPX_DEPTHS])
{
	int			k = 0;

	for (int d = 0; d < HPX_DEPTHS; d++)
	{
		const hpx_inline *v = ix->inl + ix->depth[d];
		size_t		i = hp_range_at(v, ix->depth[d + 1] - ix->depth[d], sizeof(hpx_inline), addr);

		if (i == SIZE_MAX)
			break;
		out[k++] = &v[i];
	}
	return k;
}

/* ---- writing ---- */

void
hpx_writer_init(hpx_writer *w, hp_arena *a)
{
	memset(w, 0, sizeof(*w));
	w->a = a;
	hp_map_init(&w->strings, a);
	hp_buf_init(&w->pool, a);
}

uint32_t
hpx_string(hpx_writer *w, const char *s)
{
	size_t		len;
	size_t		k;
	bool		added = false;

	if (s == NULL)
		return HPX_NONE;
	len = strlen(s);
	k = hp_map_put(&w->strings, s, len, &added);
	if (added)
	{
		if (w->pool.len + len + 1 >= HPX_END)
		{
			w->full = true;
			return HPX_NONE;
		}
		HP_RESERVE(w->a, w->offs, w->capoffs, k);
		w->offs[k] = (uint32_t) w->pool.len;
		hp_buf_append(&w->pool, s, len + 1);
	}
	return w->offs[k];
}

void
hpx_add_sym(hpx_writer *w, bool label, uint64_t lo, uint64_t hi, const char *name, int rank)
{
	hpx_sym		r = {lo, hi, hpx_string(w, name), rank};

	if (label)
	{
		HP_RESERVE(w->a, w->labels, w->caplabels, w->nlabels);
		w->labels[w->nlabels++] = r;
	}
	else
	{
		HP_RESERVE(w->a, w->syms, w->capsyms, w->nsyms);
		w->syms[w->nsyms++] = r;
	}
}

void
hpx_add_fde(hpx_writer *w, uint64_t lo, uint64_t hi)
{
	HP_RESERVE(w->a, w->fdes, w->capfdes, w->nfdes);
	w->fdes[w->nfdes++] = (hpx_fde) {lo, hi};
}

void
hpx_add_line(hpx_writer *w, uint64_t addr, bool end, const char *file, int line, uint64_t order)
{
	HP_RESERVE(w->a, w->lines, w->caplines, w->nlines);
	w->lines[w->nlines++] = (hpx_wline) {
		{addr, end ? HPX_END : hpx_string(w, file), end ? 0 : line}, order
	};
}

void
hpx_add_inline(hpx_writer *w, int depth, uint64_t lo, uint64_t hi, uint64_t order,
			   const char *name, const char *call_file, int call_line)
{
	if (depth < 0 || depth >= HPX_DEPTHS)
		return;
	HP_RESERVE(w->a, w->inl, w->capinl, w->ninl);
	w->inl[w->ninl++] = (hpx_winline) {
		{lo, hi, hpx_string(w, name), hpx_string(w, call_file), call_line, 0}, order, depth
	};
}

/*
 * Rows by address; at one address a sequence's end before a row that starts
 * code there (another CU's), then in the order given: the last of them is
 * the row libdwfl would give.
 */
static int
wline_cmp(const void *x, const void *y)
{
	const hpx_wline *a = x;
	const hpx_wline *b = y;
	bool		ae = a->r.file == HPX_END;
	bool		be = b->r.file == HPX_END;

	if (a->r.addr != b->r.addr)
		return a->r.addr < b->r.addr ? -1 : 1;
	if (ae != be)
		return ae ? -1 : 1;
	return (a->order > b->order) - (a->order < b->order);
}

/* By depth, then as sym_dwarf.c sorts one depth: start, then DIE order. */
static int
winline_cmp(const void *x, const void *y)
{
	const hpx_winline *a = x;
	const hpx_winline *b = y;

	if (a->depth != b->depth)
		return a->depth - b->depth;
	if (a->r.lo != b->r.lo)
		return a->r.lo < b->r.lo ? -1 : 1;
	return (a->order > b->order) - (a->order < b->order);
}

/* Count an n log n sort's work before it (qsort polls nothing). */
static void
sort_work(hp_env *env, size_t n)
{
	for (size_t m = n; m > 1; m /= 2)
		hp_work(env, n);
}

/* Place n records of size rec at *at in out (8-aligned); fill the table. */
static void
put_table(char *out, size_t *at, hpx_table *t, const void *v, size_t n, size_t rec)
{
	t->off = *at;
	t->n = n;
	if (n > 0)
		memcpy(out + *at, v, n * rec);
	*at += (n * rec + 7) & ~(size_t) 7;
}

void *
hpx_finish(hpx_writer *w, const uint8_t *id, size_t idlen, size_t *len)
{
	hp_env	   *env = w->a->env;
	hpx_header *h;
	hpx_line   *lines;
	hpx_inline *inl;
	size_t		nlines = 0;
	size_t		size;
	size_t		at;
	char	   *out;

	*len = 0;
	if (w->full || idlen == 0 || idlen > sizeof(h->id))
		return NULL;
	/* an empty pool still ends with a NUL */
	hpx_string(w, "");

	/* lines: one row per address, the last after sorting */
	sort_work(env, w->nlines);
	if (w->nlines > 1)
		qsort(w->lines, w->nlines, sizeof(hpx_wline), wline_cmp);
	lines = hp_alloc(w->a, (w->nlines ? w->nlines : 1) * sizeof(hpx_line));
	for (size_t i = 0; i < w->nlines; i++)
	{
		hp_work(env, 1);
		if (i + 1 < w->nlines && w->lines[i + 1].r.addr == w->lines[i].r.addr)
			continue;
		lines[nlines++] = w->lines[i].r;
	}

	sort_work(env, w->ninl);
	if (w->ninl > 1)
		qsort(w->inl, w->ninl, sizeof(hpx_winline), winline_cmp);
	inl = hp_alloc(w->a, (w->ninl ? w->ninl : 1) * sizeof(hpx_inline));

	size = sizeof(hpx_header) +
		((w->nsyms + w->nlabels) * sizeof(hpx_sym) + 7) +
		(w->nfdes * sizeof(hpx_fde)) + (nlines * sizeof(hpx_line)) +
		(w->ninl * sizeof(hpx_inline)) + w->pool.len + 8 * HPX_NTABLES;
	out = hp_alloc(w->a, size);
	h = (hpx_header *) out;
	memcpy(h->magic, HPX_MAGIC, sizeof(h->magic));
	h->version = HPX_VERSION;
	h->flags = w->flags;
	h->idlen = (uint32_t) idlen;
	memcpy(h->id, id, idlen);
	for (size_t i = 0, d = 0; i < w->ninl; i++)
	{
		hp_work(env, 1);
		inl[i] = w->inl[i].r;
		while ((int) d < w->inl[i].depth)
			h->depth[++d] = i;
		if (i + 1 == w->ninl)
			while (d < HPX_DEPTHS)
				h->depth[++d] = w->ninl;
	}
	if (w->ninl == 0)
		memset(h->depth, 0, sizeof(h->depth));

	at = sizeof(hpx_header);
	put_table(out, &at, &h->t[HPX_SYMS], w->syms, w->nsyms, sizeof(hpx_sym));
	put_table(out, &at, &h->t[HPX_LABELS], w->labels, w->nlabels, sizeof(hpx_sym));
	put_table(out, &at, &h->t[HPX_FDES], w->fdes, w->nfdes, sizeof(hpx_fde));
	put_table(out, &at, &h->t[HPX_LINES], lines, nlines, sizeof(hpx_line));
	put_table(out, &at, &h->t[HPX_INLINES], inl, w->ninl, sizeof(hpx_inline));
	put_table(out, &at, &h->t[HPX_STRINGS], w->pool.data, w->pool.len, 1);
	h->size = at;
	*len = at;
	return out;
}
