/*
 * sym_dwarf.c -- function names and inline chains from DWARF, per CU.
 *
 * dwarf_getscopes re-reads a CU's DIE tree from its root on every call
 * (~100-150 us).  Instead each CU touched is walked once: every subprogram /
 * inlined_subroutine range goes to a sorted array by how many such DIEs
 * enclose it (gimli-addr2line's design), and a lookup binary-searches one
 * depth after the other.  CU offsets repeat across modules, so each module
 * has its own table.  A walk counts its DIEs through the analysis' env,
 * whose interrupt may longjmp out: the CU's entry is in the table already,
 * marked unfinished, and walked again from scratch when next looked up.
 */
#include "ranges.h"
#include "sym_internal.h"

#include <dwarf.h>

/* A function or inlined-call range at one nesting depth of a CU (DWARF addresses). */
typedef struct fn_range
{
	uint64_t	lo;
	uint64_t	hi;
	Dwarf_Off	die;
} fn_range;

HP_RANGE_TYPE(fn_range);

struct sym_cu
{
	Dwarf_Off	cu;
	fn_range   *level[SYM_MAX_INLINE_DEPTH];
	size_t		nlevel[SYM_MAX_INLINE_DEPTH];
	size_t		cap[SYM_MAX_INLINE_DEPTH];
	size_t		bytes;
	bool		done;			/* walked and sorted */
};

static bool
push_range(sym_cu *ci, int depth, uint64_t lo, uint64_t hi, Dwarf_Off die)
{
	if (ci->nlevel[depth] == ci->cap[depth])
	{
		size_t		old = ci->cap[depth];
		fn_range   *v = grow_array(ci->level[depth], &ci->cap[depth], 16, sizeof(*v));

		if (v == NULL)
			return false;
		ci->level[depth] = v;
		ci->bytes += (ci->cap[depth] - old) * sizeof(*v);
	}
	ci->level[depth][ci->nlevel[depth]++] = (fn_range) {lo, hi, die};
	return true;
}

/* Record the code ranges below die; depth counts enclosing function DIEs. */
static void
walk_cu(hp_env *env, Dwarf_Die *die, int depth, int nesting, sym_cu *ci)
{
	Dwarf_Die	child;

	if (nesting > 256 || dwarf_child(die, &child) != 0)
		return;
	do
	{
		int			tag = dwarf_tag(&child);
		bool		code = tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine;

		hp_work(env, 1);
		if (code && depth < SYM_MAX_INLINE_DEPTH)
		{
			Dwarf_Addr	base;
			Dwarf_Addr	lo;
			Dwarf_Addr	hi;
			ptrdiff_t	off = 0;

			while ((off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0)
			{
				hp_work(env, 1);
				/* compilers emit empty ranges; they break the search */
				if (hi > lo)
					push_range(ci, depth, lo, hi, dwarf_dieoffset(&child));
			}
		}
		if (code || tag == DW_TAG_lexical_block || tag == DW_TAG_namespace ||
			tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
			tag == DW_TAG_union_type)
			walk_cu(env, &child, depth + (code ? 1 : 0), nesting + 1, ci);
	} while (dwarf_siblingof(&child, &child) == 0);
}

static int
fn_range_cmp(const void *a, const void *b)
{
	const fn_range *x = a;
	const fn_range *y = b;

	/* aliases (equal ranges) resolve to the first in DIE order, as dwarf_getscopes does */
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return (x->die > y->die) - (x->die < y->die);
}

/* Walk the CU into ci, from scratch. */
static void
index_cu(hp_env *env, sym_cu *ci, Dwarf_Die *cu)
{
	for (int d = 0; d < SYM_MAX_INLINE_DEPTH; d++)
	{
		free(ci->level[d]);
		ci->level[d] = NULL;
		ci->nlevel[d] = ci->cap[d] = 0;
	}
	ci->bytes = 0;
	walk_cu(env, cu, 0, 0, ci);
	for (int d = 0; d < SYM_MAX_INLINE_DEPTH; d++)
		if (ci->nlevel[d] > 1)
		{
			/* qsort polls nothing: its n log n counted before */
			for (size_t m = ci->nlevel[d]; m > 1; m /= 2)
				hp_work(env, ci->nlevel[d]);
			qsort(ci->level[d], ci->nlevel[d], sizeof(fn_range), fn_range_cmp);
		}
	ci->bytes += sizeof(*ci);
	ci->done = true;
}

/* The index of the CU, built on first use; NULL without memory. */
static sym_cu *
cu_lookup(hp_env *env, sym_cus *cus, Dwarf_Die *cu)
{
	Dwarf_Off	off = dwarf_dieoffset(cu);
	size_t		i;
	sym_cu	   *ci;

	if ((cus->n + 1) * 2 > cus->nslots)
	{
		size_t		n = cus->nslots ? cus->nslots * 2 : 64;
		sym_cu	  **slots = calloc(n, sizeof(*slots));

		if (slots == NULL)
			return NULL;
		for (size_t k = 0; k < cus->nslots; k++)
			if (cus->slots[k])
			{
				for (i = cus->slots[k]->cu & (n - 1); slots[i]; i = (i + 1) & (n - 1))
					;
				slots[i] = cus->slots[k];
			}
		free(cus->slots);
		cus->bytes += (n - cus->nslots) * sizeof(*slots);
		cus->slots = slots;
		cus->nslots = n;
	}
	for (i = off & (cus->nslots - 1); cus->slots[i]; i = (i + 1) & (cus->nslots - 1))
		if (cus->slots[i]->cu == off)
			break;
	ci = cus->slots[i];
	if (ci && ci->done)
		return ci;
	if (ci == NULL)
	{
		if ((ci = calloc(1, sizeof(*ci))) == NULL)
			return NULL;
		ci->cu = off;
		cus->slots[i] = ci;
		cus->n++;
	}
	/* new, or a walk cut short by an interrupt */
	index_cu(env, ci, cu);
	cus->bytes += ci->bytes;
	return ci;
}

/* The range at one depth containing addr (ranges at a depth do not overlap). */
static const fn_range *
find_range(const sym_cu *ci, int depth, uint64_t addr)
{
	size_t		i = hp_range_at(ci->level[depth], ci->nlevel[depth], sizeof(fn_range), addr);

	return i == SIZE_MAX ? NULL : &ci->level[depth][i];
}

/* A DIE's function name, preferring the linkage name that carries C++ scopes. */
static const char *
die_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));

	return name ? name : dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
}

/* The call site of an inlined call, as addr2line -i shows it for the level out. */
static void
call_site(Dwarf_Die *cu, Dwarf_Die *die, sym_level *out)
{
	Dwarf_Attribute attr;
	Dwarf_Word	file;
	Dwarf_Word	line;
	Dwarf_Files *files;
	size_t		nfiles;

	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &line) == 0 && line <= INT32_MAX)
		out->call_line = (int) line;
	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &file) == 0 &&
		dwarf_getsrcfiles(cu, &files, &nfiles) == 0 && file < nfiles)
		out->call_file = dwarf_filesrc(files, file, NULL, NULL);
}

static int
cu_range_cmp(const void *a, const void *b)
{
	const sym_cu_range *x = a;
	const sym_cu_range *y = b;

	return (x->lo > y->lo) - (x->lo < y->lo);
}

HP_RANGE_TYPE(sym_cu_range);

/*
 * Every CU's ranges into cus->ranges, sorted (fewer without memory), from
 * scratch: a walk cut short by an interrupt is not trusted, and what it
 * took stays reachable for sym_dwarf_free.
 */
static void
range_cus(hp_env *env, sym_cus *cus, Dwfl_Module *mod)
{
	Dwarf_Die  *cu = NULL;
	Dwarf_Addr	bias;
	size_t		cap = 0;

	free(cus->ranges);
	cus->ranges = NULL;
	cus->nranges = 0;
	while ((cu = dwfl_module_nextcu(mod, cu, &bias)) != NULL)
	{
		Dwarf_Addr	base;
		Dwarf_Addr	lo;
		Dwarf_Addr	hi;
		ptrdiff_t	off = 0;
		bool		full = false;

		hp_work(env, 1);		/* a unit without ranges is work too */
		while ((off = dwarf_ranges(cu, off, &base, &lo, &hi)) > 0)
		{
			hp_work(env, 1);
			if (hi <= lo)
				continue;
			if (cus->nranges == cap)
			{
				size_t		n = cap ? cap * 2 : 64;
				sym_cu_range *v = realloc(cus->ranges, n * sizeof(*v));

				if (v == NULL)
				{
					full = true;	/* fewer ranges, still sorted below */
					break;
				}
				cus->ranges = v;
				cap = n;
			}
			cus->ranges[cus->nranges++] = (sym_cu_range) {lo + bias, hi + bias, dwarf_dieoffset(cu)};
		}
		if (full)
			break;
	}
	for (size_t m = cus->nranges; m > 1; m /= 2)
		hp_work(env, cus->nranges);
	if (cus->nranges > 1)
		qsort(cus->ranges, cus->nranges, sizeof(*cus->ranges), cu_range_cmp);
	cus->bytes += cap * sizeof(*cus->ranges);
	cus->ranged = true;
}

Dwarf_Die *
sym_dwarf_cu(hp_env *env, sym_cus *cus, Dwfl_Module *mod, uint64_t pc, Dwarf_Addr *bias, Dwarf_Die *out)
{
	Dwarf_Die  *cu = dwfl_module_addrdie(mod, pc, bias);
	Dwarf	   *dw;
	size_t		i;

	if (cu)
	{
		*out = *cu;
		return out;
	}
	if ((dw = dwfl_module_getdwarf(mod, bias)) == NULL)
		return NULL;
	if (cus->aranges == 0)
	{
		Dwarf_Aranges *ar;
		size_t		n = 0;

		cus->aranges = dwarf_getaranges(dw, &ar, &n) == 0 && n > 0 ? 1 : -1;
	}
	if (cus->aranges > 0)
		return NULL;
	if (!cus->ranged)
		range_cus(env, cus, mod);
	i = hp_range_at(cus->ranges, cus->nranges, sizeof(sym_cu_range), pc);
	return i == SIZE_MAX ? NULL : dwarf_offdie(dw, cus->ranges[i].cu, out);
}

/* Depth 0 is the real function, each deeper range an inlined call inside it. */
int
sym_dwarf_chain(hp_env *env, sym_cus *cus, Dwfl_Module *mod, uint64_t pc,
				sym_level levels[SYM_MAX_INLINE_DEPTH])
{
	Dwarf_Addr	bias;
	Dwarf_Die	cudie;
	Dwarf_Die  *cu = sym_dwarf_cu(env, cus, mod, pc, &bias, &cudie);
	Dwarf	   *dw;
	sym_cu	   *ci;
	int			k = 0;

	if (cu == NULL || (dw = dwfl_module_getdwarf(mod, &bias)) == NULL ||
		(ci = cu_lookup(env, cus, cu)) == NULL)
		return 0;
	for (int d = 0; d < SYM_MAX_INLINE_DEPTH; d++)
	{
		const fn_range *r = find_range(ci, d, pc - bias);
		Dwarf_Die	die;

		if (r == NULL || dwarf_offdie(dw, r->die, &die) == NULL)
			break;
		levels[k] = (sym_level) {die_name(&die), NULL, 0};
		if (d > 0)
			call_site(cu, &die, &levels[k]);
		k++;
	}
	return k;
}

void
sym_dwarf_export(hp_env *env, sym_cus *cus, Dwfl_Module *mod, uint64_t elf_bias, hpx_writer *w)
{
	Dwarf_Addr	bias;
	Dwarf	   *dw = dwfl_module_getdwarf(mod, &bias);
	Dwarf_Die  *cu = NULL;
	uint64_t	ncu = 0;

	if (dw == NULL)
		return;
	/* the index counts from the object's load bias, DWARF from its own */
	while ((cu = dwfl_module_nextcu(mod, cu, &bias)) != NULL)
	{
		uint64_t	shift = bias - elf_bias;
		sym_cu	   *ci = cu_lookup(env, cus, cu);
		Dwarf_Lines *lines;
		size_t		nlines = 0;

		ncu++;
		for (int d = 0; ci && d < SYM_MAX_INLINE_DEPTH; d++)
			for (size_t i = 0; i < ci->nlevel[d]; i++)
			{
				const fn_range *r = &ci->level[d][i];
				sym_level	lv = {NULL, NULL, 0};
				Dwarf_Die	die;

				hp_work(env, 1);
				if (dwarf_offdie(dw, r->die, &die) == NULL)
					continue;
				lv.name = die_name(&die);
				if (d > 0)
					call_site(cu, &die, &lv);
				hpx_add_inline(w, d, r->lo + shift, r->hi + shift, r->die,
							   lv.name, lv.call_file, lv.call_line);
			}
		if (dwarf_getsrclines(cu, &lines, &nlines) != 0)
			continue;
		for (size_t i = 0; i < nlines; i++)
		{
			Dwarf_Line *l = dwarf_onesrcline(lines, i);
			Dwarf_Addr	addr;
			bool		end = false;
			int			line = 0;

			hp_work(env, 1);
			if (l == NULL || dwarf_lineaddr(l, &addr) != 0)
				continue;
			dwarf_lineendsequence(l, &end);
			dwarf_lineno(l, &line);
			hpx_add_line(w, addr + shift, end, dwarf_linesrc(l, NULL, NULL), line,
						 (ncu << 32) | i);
		}
	}
}

void
sym_dwarf_free(sym_cus *cus)
{
	for (size_t i = 0; i < cus->nslots; i++)
		if (cus->slots[i])
		{
			for (int d = 0; d < SYM_MAX_INLINE_DEPTH; d++)
				free(cus->slots[i]->level[d]);
			free(cus->slots[i]);
		}
	free(cus->slots);
	free(cus->ranges);
}
