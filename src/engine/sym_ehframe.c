/*
 * sym_ehframe.c -- function ranges from a module's .eh_frame.
 *
 * A stripped object still has an FDE per function for unwinding, so an
 * address outside every symbol can be labelled "object+0xSTART" with its
 * function's true start.  libdw's dwarf_frame_info gives CFI rows, not FDE
 * ranges, so the section is walked with dwarf_next_cfi and each FDE's
 * initial location and range decoded here (x86-64 objects only).  Work is
 * counted per entry through the analysis' env, whose interrupt may longjmp
 * out: everything allocated so far is then in the index, freed with it.
 */
#include "ranges.h"
#include "sym_internal.h"

#include <gelf.h>
#include <string.h>

/* DW_EH_PE value of the given encoding at *p; false when out of bounds. */
static bool
read_encoded(uint8_t enc, const uint8_t **p, const uint8_t *end,
			 uint64_t field_addr, uint64_t *out)
{
	const uint8_t *q = *p;
	uint64_t	v = 0;
	size_t		size;
	bool		sign = false;

	if (enc == 0xff)			/* DW_EH_PE_omit */
		return false;
	switch (enc & 0x0f)
	{
		case 0x00:				/* absptr: heapprof reads 64-bit objects only */
		case 0x04:				/* udata8 */
		case 0x0c:				/* sdata8 */
			size = 8;
			break;
		case 0x02:				/* udata2 */
			size = 2;
			break;
		case 0x0a:				/* sdata2 */
			size = 2;
			sign = true;
			break;
		case 0x03:				/* udata4 */
			size = 4;
			break;
		case 0x0b:				/* sdata4 */
			size = 4;
			sign = true;
			break;
		default:
			return false;		/* leb128 forms are not used for FDE addresses */
	}
	if ((size_t) (end - q) < size)
		return false;
	for (size_t i = 0; i < size; i++)
		v |= (uint64_t) q[i] << (8 * i);
	if (sign && size < 8 && (v >> (8 * size - 1)) & 1)
		v |= ~UINT64_C(0) << (8 * size);
	*p = q + size;
	switch (enc & 0x70)
	{
		case 0x00:
			break;
		case 0x10:				/* pcrel */
			v += field_addr;
			break;
		default:
			return false;
	}
	*out = v;
	return true;
}

/* The FDE pointer encoding ('R') of a CIE, from its augmentation. */
static uint8_t
cie_fde_encoding(const Dwarf_CIE *cie)
{
	const uint8_t *p = cie->augmentation_data;
	const uint8_t *end = p + cie->augmentation_data_size;
	const char *aug = cie->augmentation;

	if (aug == NULL || aug[0] != 'z')
		return 0x00;
	for (aug++; *aug; aug++)
	{
		if (*aug == 'R')
			return p < end ? *p : 0xff;
		if (*aug == 'L')
			p++;
		else if (*aug == 'P')
		{
			uint64_t	ignored;
			uint8_t		penc;

			if (p >= end)
				return 0xff;
			penc = *p++;
			if (!read_encoded(penc & 0x7f, &p, end, 0, &ignored))
				return 0xff;
		}
		else if (*aug != 'S' && *aug != 'B')
			return 0xff;
	}
	return 0x00;
}

static int
fde_cmp(const void *a, const void *b)
{
	const sym_fde *x = a;
	const sym_fde *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return (x->hi > y->hi) - (x->hi < y->hi);
}

void
sym_ehframe_index(hp_env *env, Elf *elf, sym_fdes *ix)
{
	size_t		shstrndx;
	Elf_Scn    *scn = NULL;
	Elf_Data   *data = NULL;
	GElf_Shdr	shdr;
	const unsigned char *ident;
	Dwarf_Off	off = 0;
	Dwarf_Off	next;
	Dwarf_CFI_Entry entry;
	size_t		ncies = 0;
	size_t		ciecap = 0;
	size_t		cap = 0;

	if (elf == NULL || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return;
	while ((scn = elf_nextscn(elf, scn)) != NULL)
	{
		const char *name;

		if (gelf_getshdr(scn, &shdr) == NULL)
			continue;
		name = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (name && strcmp(name, ".eh_frame") == 0 && shdr.sh_type == SHT_PROGBITS)
		{
			data = elf_getdata(scn, NULL);
			break;
		}
	}
	ident = (const unsigned char *) elf_getident(elf, NULL);
	if (data == NULL || data->d_buf == NULL || ident == NULL || ident[EI_CLASS] != ELFCLASS64)
		return;

	while (dwarf_next_cfi(ident, data, true, off, &next, &entry) == 0)
	{
		hp_work(env, 1);
		if (dwarf_cfi_cie_p(&entry))
		{
			if (ncies == ciecap)
			{
				sym_cie    *v = grow_array(ix->cies, &ciecap, 8, sizeof(*v));

				if (v == NULL)
					break;
				ix->cies = v;
			}
			ix->cies[ncies++] = (sym_cie) {off, cie_fde_encoding(&entry.cie)};
		}
		else
		{
			uint8_t		enc = 0xff;
			const uint8_t *p = entry.fde.start;
			const uint8_t *end = entry.fde.end;
			uint64_t	lo;
			uint64_t	len;

			size_t		c = 0;
			size_t		n = ncies;

			/* CIEs are read in offset order: a binary search */
			while (n > 0)
			{
				size_t		half = n / 2;

				if (ix->cies[c + half].offset < entry.fde.CIE_pointer)
				{
					c += half + 1;
					n -= half + 1;
				}
				else
					n = half;
			}
			if (c < ncies && ix->cies[c].offset == entry.fde.CIE_pointer)
				enc = ix->cies[c].enc;
			if (read_encoded(enc, &p, end, shdr.sh_addr + (uint64_t) (p - (const uint8_t *) data->d_buf), &lo) &&
				read_encoded(enc & 0x0f, &p, end, 0, &len) && len > 0)
			{
				if (ix->n == cap)
				{
					sym_fde    *v = grow_array(ix->v, &cap, 1024, sizeof(*v));

					if (v == NULL)
						break;
					ix->v = v;
				}
				ix->v[ix->n++] = (sym_fde) {lo, lo + len};
			}
		}
		if (next <= off)
			break;
		off = next;
	}
	free(ix->cies);
	ix->cies = NULL;
	ix->bytes += cap * sizeof(*ix->v);
	/* qsort polls nothing: its n log n counted before */
	for (size_t m = ix->n; m > 1; m /= 2)
		hp_work(env, ix->n);
	if (ix->n > 1)
		qsort(ix->v, ix->n, sizeof(*ix->v), fde_cmp);
}

void
sym_ehframe_free(sym_fdes *ix)
{
	free(ix->v);
	free(ix->cies);
}

HP_RANGE_TYPE(sym_fde);

const sym_fde *
sym_ehframe_find(const sym_fdes *ix, uint64_t addr)
{
	size_t		i = hp_range_at(ix->v, ix->n, sizeof(sym_fde), addr);

	return i == SIZE_MAX ? NULL : &ix->v[i];
}
