/*
 * fuzz_symindex.c -- libFuzzer target for symbol index files.
 *
 * Every backend maps the files under $PGDATA/heapprof/symbols, which anyone
 * with the server's file access could have planted or a crash torn: the
 * loader must refuse or accept any bytes without reading outside them, and
 * every lookup in an accepted file must stay inside it.  The input is the
 * file (copied to an exact, aligned block: a read past it is an ASan
 * error), checked against the build-id its own header names, so that the
 * fuzzer gets past that check; then addresses taken from the input are
 * looked up and every string found is read to its end.  Seeds in
 * corpus-symindex/.
 *
 * Build and run: make -C fuzz run SECONDS=60 (clang, ASan, UBSan).
 */
#include "engine/symindex.h"

#include <stdlib.h>
#include <string.h>

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
look_up(const hp_symindex *ix, uint64_t addr)
{
	const hpx_inline *lv[HPX_DEPTHS];
	const hpx_sym *s = hp_symindex_sym(ix, addr);
	const hpx_line *l = hp_symindex_line(ix, addr);
	const hpx_fde *f = hp_symindex_fde(ix, addr);
	int			k = hp_symindex_chain(ix, addr, lv);
	const char *str;
	size_t		n = 0;

	if (s && (str = hp_symindex_str(ix, s->name)))
		n += strlen(str);
	if ((s = hp_symindex_label(ix, addr, f ? f->lo : UINT64_MAX)) && (str = hp_symindex_str(ix, s->name)))
		n += strlen(str);
	if (l && (str = hp_symindex_str(ix, l->file)))
		n += strlen(str);
	for (int i = 0; i < k; i++)
	{
		if ((str = hp_symindex_str(ix, lv[i]->name)))
			n += strlen(str);
		if ((str = hp_symindex_str(ix, lv[i]->call_file)))
			n += strlen(str);
	}
	if (n > ix->nstr * (size_t) (2 + 2 * HPX_DEPTHS))
		abort();				/* strings longer than the pool */
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t   *copy = malloc(size ? size : 1);	/* malloc's alignment: 16 */
	const hpx_header *h = (const hpx_header *) copy;
	hp_symindex ix;

	memcpy(copy, data, size);
	if (size >= sizeof(hpx_header) && h->idlen <= sizeof(h->id) &&
		hp_symindex_open(&ix, copy, size, h->id, h->idlen))
	{
		for (size_t i = 0; i + 8 <= size && i < 64 * 8; i += 8)
			look_up(&ix, copy[i / 8] ^ (uint64_t) i);
		for (size_t i = 0; i < ix.nsyms && i < 16; i++)
			look_up(&ix, ix.syms[i].lo + i);
		for (size_t i = 0; i < ix.ninl && i < 16; i++)
			look_up(&ix, ix.inl[i].lo + i);
	}
	free(copy);
	return 0;
}
