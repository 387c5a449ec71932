/*
 * sym_elf.c -- a module's function symbols, sorted and binary-searched.
 *
 * libdwfl's own per-address lookup scans the whole symbol table on every
 * call (elfutils 0.188).  A name is given only when a symbol's [value, value
 * + size) contains the address; sizeless assembly labels name code after
 * them only up to the next real function boundary.  Work is counted per
 * symbol through the analysis' env, whose interrupt may longjmp out: the
 * arrays are then the index's own (freed with it), and the caller keeps the
 * index marked unfinished until this returns.
 */
#include "ranges.h"
#include "sym_internal.h"

#include <gelf.h>
#include <string.h>

static int
sym_cmp(const void *a, const void *b)
{
	const sym_range *x = a;
	const sym_range *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	return strcmp(x->name, y->name);
}

static int
bind_rank(const GElf_Sym *sym, const char *name)
{
	int			rank;

	switch (GELF_ST_BIND(sym->st_info))
	{
		case STB_GLOBAL:
			rank = 0;
			break;
		case STB_WEAK:
			rank = 1;
			break;
		default:
			rank = 2;
	}
	/* public names before versioned or reserved-looking aliases (clone3, not __clone3) */
	if (strchr(name, '@') || name[0] == '_')
		rank += 4;
	return rank;
}

/* Append to a malloc'ed range array; false when memory ran out. */
static bool
push_sym(sym_range **v, size_t *n, size_t *cap, sym_range r)
{
	if (*n == *cap)
	{
		sym_range  *nv = grow_array(*v, cap, 1024, sizeof(**v));

		if (nv == NULL)
			return false;
		*v = nv;
	}
	(*v)[(*n)++] = r;
	return true;
}

/* Sort, and keep the preferred name of each group of aliases. */
static void
sort_syms(hp_env *env, sym_range *v, size_t *n)
{
	size_t		k = 0;

	if (*n == 0)
		return;
	/* qsort polls nothing: its n log n counted before */
	for (size_t m = *n; m > 1; m /= 2)
		hp_work(env, *n);
	qsort(v, *n, sizeof(*v), sym_cmp);
	for (size_t i = 0; i < *n; i++)
		if (k == 0 || v[i].lo != v[k - 1].lo || v[i].hi != v[k - 1].hi)
			v[k++] = v[i];
	*n = k;
}

void
sym_elf_index(hp_env *env, Dwfl_Module *mod, sym_symbols *ix)
{
	int			n = dwfl_module_getsymtab(mod);
	size_t		cap = 0;
	size_t		lcap = 0;

	for (int i = 1; i < n; i++)
	{
		GElf_Sym	sym;
		GElf_Addr	addr;
		GElf_Word	shndx;
		Elf		   *elf;
		Dwarf_Addr	bias;
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx, &elf, &bias);
		int			type = GELF_ST_TYPE(sym.st_info);
		sym_range	r;

		hp_work(env, 1);
		/* a name offset outside the string table gives NULL */
		if (name == NULL || name[0] == '\0' || shndx == SHN_UNDEF || shndx == SHN_ABS)
			continue;
		r = (sym_range) {addr, addr + sym.st_size, name, bind_rank(&sym, name)};
		if (type == STT_FUNC && strcmp(name, "mallctl") == 0)
			ix->defines_mallctl = true;
		/* fewer names when memory runs out: still honest */
		if ((type == STT_FUNC || type == STT_GNU_IFUNC) && sym.st_size > 0)
			push_sym(&ix->syms, &ix->nsyms, &cap, r);
		else if ((type == STT_FUNC || type == STT_NOTYPE) && sym.st_size == 0)
		{
			/* a label reaches at most to the end of its own code section */
			Elf_Scn    *scn = elf ? elf_getscn(elf, shndx) : NULL;
			GElf_Shdr	sh;

			if (scn && gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR) &&
				sh.sh_addr + bias <= addr)
			{
				r.hi = sh.sh_addr + bias + sh.sh_size;
				push_sym(&ix->labels, &ix->nlabels, &lcap, r);
			}
		}
	}
	ix->bytes += (cap + lcap) * sizeof(sym_range);
	sort_syms(env, ix->syms, &ix->nsyms);
	sort_syms(env, ix->labels, &ix->nlabels);
}

void
sym_elf_free(sym_symbols *ix)
{
	free(ix->syms);
	free(ix->labels);
}

HP_RANGE_TYPE(sym_range);

const sym_range *
sym_elf_find(const sym_symbols *ix, uint64_t pc)
{
	size_t		i = hp_symbol_at(ix->syms, ix->nsyms, sizeof(sym_range), pc);

	return i == SIZE_MAX ? NULL : &ix->syms[i];
}

/* The label naming pc (see ranges.h), or NULL. */
const sym_range *
sym_elf_label(const sym_symbols *ix, uint64_t pc, uint64_t start)
{
	size_t		i = hp_label_at(ix->labels, ix->nlabels, ix->syms, ix->nsyms, sizeof(sym_range), pc, start);

	return i == SIZE_MAX ? NULL : &ix->labels[i];
}
