/*
 * ranges.h -- the lookups every index of code shares: ELF symbols, FDEs and
 * DWARF ranges, in memory (sym_*.c) or in a shared symbol index
 * (symindex.c).  A range record starts with two uint64_t, its first address
 * and its end (lo, hi); records are sorted by lo.  One copy of each rule, so
 * an index read from memory and one read from a file cannot name an address
 * differently.
 */
#ifndef HEAPPROF_RANGES_H
#define HEAPPROF_RANGES_H

#include <stddef.h>
#include <stdint.h>

/* A record type whose first members are uint64_t lo, hi (checked where used). */
#define HP_RANGE_TYPE(T) \
	_Static_assert(offsetof(T, lo) == 0 && offsetof(T, hi) == sizeof(uint64_t), #T " is not a range")

#define HP_LO(v, stride, i) (*(const uint64_t *) ((const char *) (v) + (i) * (stride)))
#define HP_HI(v, stride, i) (*(const uint64_t *) ((const char *) (v) + (i) * (stride) + sizeof(uint64_t)))

/* The last of n records (stride bytes apart, key first) whose key is <= x; SIZE_MAX if none. */
static inline size_t
hp_last_le(const void *v, size_t n, size_t stride, uint64_t x)
{
	size_t		lo = 0;
	size_t		hi = n;

	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (HP_LO(v, stride, mid) <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == 0 ? SIZE_MAX : lo - 1;
}

/*
 * Nested ranges, none overlapping another at its depth but several starting
 * at one address (a DWARF function and its first inlined call, FDEs): the
 * first of those starting last at or below pc that contains it; SIZE_MAX if
 * none.
 */
static inline size_t
hp_range_at(const void *v, size_t n, size_t stride, uint64_t pc)
{
	size_t		i = hp_last_le(v, n, stride, pc);

	if (i == SIZE_MAX || pc >= HP_HI(v, stride, i))
		return SIZE_MAX;
	while (i > 0 && HP_LO(v, stride, i - 1) == HP_LO(v, stride, i) && pc < HP_HI(v, stride, i - 1))
		i--;
	return i;
}

/*
 * ELF symbols, which may overlap (a function inside another's range): of
 * the last 8 starting at or below pc, the one nearest pc that spans it, and
 * of aliases (same start; sorted best first) the first that spans it.
 */
static inline size_t
hp_symbol_at(const void *v, size_t n, size_t stride, uint64_t pc)
{
	size_t		lo = hp_last_le(v, n, stride, pc) + 1;	/* SIZE_MAX + 1 = 0 */

	for (size_t i = lo, tries = 0; i-- > 0 && tries < 8; tries++)
		if (pc < HP_HI(v, stride, i))
		{
			while (i > 0 && HP_LO(v, stride, i - 1) == HP_LO(v, stride, i) && pc < HP_HI(v, stride, i - 1))
				i--;
			return i;
		}
	return SIZE_MAX;
}

/*
 * An assembly entry point (sizeless global label) names pc only when no
 * sized symbol and no function start (start, from .eh_frame; UINT64_MAX if
 * unknown) lies between it and pc -- libdwfl's rule, so code after a label
 * is never given the label's name across a real function boundary.  The
 * label's index, or SIZE_MAX.
 */
static inline size_t
hp_label_at(const void *labels, size_t nlabels, const void *syms, size_t nsyms, size_t stride,
			uint64_t pc, uint64_t start)
{
	size_t		i = hp_last_le(labels, nlabels, stride, pc);
	size_t		j = hp_last_le(syms, nsyms, stride, pc);

	if (i == SIZE_MAX || pc >= HP_HI(labels, stride, i))
		return SIZE_MAX;
	if (j != SIZE_MAX && HP_HI(syms, stride, j) > HP_LO(labels, stride, i))
		return SIZE_MAX;
	if (start != UINT64_MAX && start > HP_LO(labels, stride, i))
		return SIZE_MAX;
	return i;
}

#endif
