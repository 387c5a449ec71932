/*
 * symbolize.c -- one libdwfl session, with indexes of our own per module.
 *
 * libdwfl's per-address symbol lookup scans the whole symbol table on every
 * call (elfutils 0.188), so each module gets, on first use, a sorted array of
 * sized function symbols and a sorted array of .eh_frame FDE ranges, both
 * binary-searched.  The indexes live in the module's userdata slot and are
 * freed when a re-sync drops the module.
 */
#include "symbolize.h"

#include <ctype.h>
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

typedef struct sym_range
{
	uint64_t	lo;				/* run-time addresses */
	uint64_t	hi;
	const char *name;			/* owned by libelf, lives with the module */
	int			rank;			/* lower is preferred among aliases */
} sym_range;

typedef struct fde_range
{
	uint64_t	lo;				/* file addresses */
	uint64_t	hi;
} fde_range;

#define MAX_INLINE_DEPTH 64

/* A function or inlined-call range at one nesting depth of a CU (DWARF addresses). */
typedef struct fn_range
{
	uint64_t	lo;
	uint64_t	hi;
	Dwarf_Off	die;
} fn_range;

/*
 * Per compile unit: every subprogram / inlined_subroutine range, by how many
 * such DIEs enclose it.  One walk of the CU replaces a dwarf_getscopes walk
 * per address (which re-reads the CU from its root every time).
 */
typedef struct cu_index
{
	Dwarf_Off	cu;
	fn_range   *level[MAX_INLINE_DEPTH];
	size_t		nlevel[MAX_INLINE_DEPTH];
	size_t		cap[MAX_INLINE_DEPTH];
	size_t		bytes;
} cu_index;

typedef struct mod_index
{
	const char *path;			/* as in the maps (libdwfl's copy) */
	const char *object;			/* its basename */
	uint64_t	low;			/* first mapped address */
	uint64_t	bias;
	bool		has_elf;		/* the file could be read */
	bool		defines_mallctl;	/* the file's symbols say it is jemalloc */

	/*
	 * The verdict for the profile being analysed (generation gen): the file
	 * may be right for one process and stale for another, so it is judged
	 * again whenever the maps or the expected build-ids change.
	 */
	unsigned	gen;
	const char *mismatch;		/* why the file is not what was loaded, or NULL */
	bool		allocator;
	sym_range  *syms;
	size_t		nsyms;
	sym_range  *labels;			/* sizeless symbols, hi = end of their section */
	size_t		nlabels;
	fde_range  *fdes;
	size_t		nfdes;
	cu_index  **cus;			/* open hash on CU offset */
	size_t		ncus;
	size_t		cuslots;
	size_t		bytes;
} mod_index;

/* One line of the dump's maps: what the process had mapped. */
typedef struct map_line
{
	uint64_t	start;
	unsigned	dev_major;
	unsigned	dev_minor;
	uint64_t	inode;
} map_line;

struct hp_symbolizer
{
	Dwfl	   *dwfl;
	char	   *maps;			/* the maps last reported, filtered */
	size_t		maps_len;
	map_line   *lines;
	size_t		nlines;
	hp_build_id *ids;
	size_t		nids;
	uint64_t	allocator_base;
	unsigned	gen;			/* bumped by every sync and expect */
	char	   *demangled;		/* __cxa_demangle's buffer, reused */
	size_t		demangled_len;
	size_t		index_bytes;
};

static char *debuginfo_path;

static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

hp_symbolizer *
hp_symbolizer_new(void)
{
	hp_symbolizer *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	/* a backend must never wait on the network for debug info */
	unsetenv("DEBUGINFOD_URLS");
	s->dwfl = dwfl_begin(&callbacks);
	if (s->dwfl == NULL)
	{
		free(s);
		return NULL;
	}
	return s;
}

static void
free_index(hp_symbolizer *s, mod_index *ix)
{
	if (ix == NULL)
		return;
	s->index_bytes -= ix->bytes;
	for (size_t i = 0; i < ix->cuslots; i++)
		if (ix->cus[i])
		{
			for (int d = 0; d < MAX_INLINE_DEPTH; d++)
				free(ix->cus[i]->level[d]);
			free(ix->cus[i]);
		}
	free(ix->cus);
	free(ix->syms);
	free(ix->labels);
	free(ix->fdes);
	free(ix);
}

static int
removed_module(Dwfl_Module *mod, void *userdata, const char *name,
			   Dwarf_Addr base, void *arg)
{
	/* elfutils passes the address of the userdata slot */
	void	  **slot = userdata;

	free_index(arg, *slot);
	*slot = NULL;
	return DWARF_CB_OK;
}

static int
free_module_index(Dwfl_Module *mod, void **userdata, const char *name,
				  Dwarf_Addr base, void *arg)
{
	free_index(arg, *userdata);
	*userdata = NULL;
	return DWARF_CB_OK;
}

void
hp_symbolizer_free(hp_symbolizer *s)
{
	if (s == NULL)
		return;
	dwfl_getmodules(s->dwfl, free_module_index, s, 0);
	dwfl_end(s->dwfl);
	free(s->maps);
	free(s->lines);
	free(s->ids);
	free(s->demangled);
	free(s);
}

size_t
hp_symbolizer_memory(const hp_symbolizer *s)
{
	return s->index_bytes;
}

/* Index the lines of a maps text that map a file. */
/*
 * Double a malloc'ed array of *cap elements of elem bytes (first: the
 * initial capacity).  NULL when memory ran out; the array is then untouched.
 */
static void *
grow_array(void *arr, size_t *cap, size_t first, size_t elem)
{
	size_t		ncap = *cap ? *cap * 2 : first;
	void	   *v = ncap <= SIZE_MAX / elem ? realloc(arr, ncap * elem) : NULL;

	if (v != NULL)
		*cap = ncap;
	return v;
}

static hp_status
parse_maps(hp_symbolizer *s, const char *maps, size_t len)
{
	size_t		cap = 0;
	const char *p = maps;
	const char *end = maps + len;

	free(s->lines);
	s->lines = NULL;
	s->nlines = 0;
	while (p < end)
	{
		const char *nl = memchr(p, '\n', (size_t) (end - p));
		char		line[512];
		size_t		n = (size_t) ((nl ? nl : end) - p);
		unsigned long long start;
		unsigned long long lend;
		unsigned long long off;
		unsigned long long inode;
		unsigned	maj;
		unsigned	min;
		int			pathpos = 0;
		char		perms[8];

		/* the fields before the path fit; the path itself is not needed here */
		n = n < sizeof(line) - 1 ? n : sizeof(line) - 1;
		memcpy(line, p, n);
		line[n] = '\0';
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &lend, perms, &off,
				   &maj, &min, &inode, &pathpos) >= 7 && pathpos > 0 && line[pathpos] == '/')
		{
			if (s->nlines == cap)
			{
				map_line   *v = grow_array(s->lines, &cap, 64, sizeof(*v));

				if (v == NULL)
					return HP_ENOMEM;
				s->lines = v;
			}
			s->lines[s->nlines++] = (map_line) {start, maj, min, inode};
		}
		p = nl ? nl + 1 : end;
	}
	return HP_OK;
}

/* The path of a maps line (after five fields), or NULL if it has none. */
static const char *
line_path(const char *line, const char *end, size_t *len)
{
	const char *p = line;

	for (int field = 0; field < 5; field++)
	{
		while (p < end && *p != ' ')
			p++;
		while (p < end && *p == ' ')
			p++;
	}
	if (p >= end || *p != '/')
		return NULL;
	*len = (size_t) (end - p);
	return p;
}

/*
 * A run of maps lines of one file: from its offset-0 line on, while the lines
 * of that file follow (anonymous lines may come between).
 */
typedef struct map_run
{
	const char *first;			/* first line of the run */
	const char *end;			/* end of its last line */
	const char *path;
	size_t		pathlen;
	bool		exec;			/* has an executable mapping */
	bool		keep;
} map_run;

/*
 * Keep, of each file, one run of lines: the loader maps an object's segments
 * next to each other, one of them executable.  Other mappings of the same
 * file are something else -- libelf's own read/write mmap of it, when the
 * dumping process is a backend that has symbolized before -- and would
 * stretch the module over unrelated memory.  The run with an executable
 * mapping is kept, or else the first.  Returns the kept text's length (at
 * most len + 1).
 */
static size_t
filter_maps(const char *maps, size_t len, char *out)
{
	const char *p = maps;
	const char *end;
	map_run    *runs = NULL;
	size_t		nruns = 0;
	size_t		cap = 0;
	size_t		n = 0;

	if (len == 0)
		return 0;				/* no maps (maps may then be NULL) */
	end = maps + len;
	while (p < end)
	{
		const char *nl = memchr(p, '\n', (size_t) (end - p));
		const char *eol = nl ? nl : end;
		size_t		plen = 0;
		const char *path = line_path(p, eol, &plen);
		const char *perms = memchr(p, ' ', (size_t) (eol - p));
		bool		exec = perms && eol - perms > 4 && perms[3] == 'x';
		/* the offset field: an image's first segment is its only one at 0 */
		bool		at_zero = perms && eol - perms > 14 &&
			strspn(perms + 6, "0") == 8 && perms[14] == ' ';

		if (path)
		{
			map_run    *r = nruns ? &runs[nruns - 1] : NULL;

			if (r && !at_zero && r->pathlen == plen && memcmp(r->path, path, plen) == 0)
			{
				r->end = eol;
				r->exec |= exec;
			}
			else
			{
				if (nruns == cap)
				{
					map_run    *v = grow_array(runs, &cap, 256, sizeof(*v));

					if (v == NULL)
					{
						free(runs);
						memcpy(out, maps, len);
						return len;		/* unfiltered: names may suffer, nothing worse */
					}
					runs = v;
				}
				runs[nruns++] = (map_run) {p, eol, path, plen, exec, true};
			}
		}
		p = nl ? nl + 1 : end;
	}
	/* per file: keep its first executable run, or its first run */
	for (size_t i = 0; i < nruns; i++)
		for (size_t j = 0; j < i && runs[i].keep; j++)
			if (runs[j].keep && runs[j].pathlen == runs[i].pathlen &&
				memcmp(runs[j].path, runs[i].path, runs[i].pathlen) == 0)
			{
				if (runs[i].exec && !runs[j].exec)
					runs[j].keep = false;
				else
					runs[i].keep = false;
			}
	/*
	 * Copy the kept runs only: libdwfl ignores anonymous mappings, and
	 * without them the text stays the same while only the heap changes, so
	 * a backend's next report needs no new sync.
	 */
	for (size_t i = 0; i < nruns; i++)
		if (runs[i].keep)
		{
			const char *stop = runs[i].end < end ? runs[i].end + 1 : end;

			memcpy(out + n, runs[i].first, (size_t) (stop - runs[i].first));
			n += (size_t) (stop - runs[i].first);
			if (stop == end)
				out[n++] = '\n';
		}
	free(runs);
	return n;
}

hp_status
hp_symbolizer_sync(hp_symbolizer *s, const char *maps, size_t len)
{
	FILE	   *f;
	char	   *kept;
	size_t		nkept;
	int			rc = 0;

	s->gen++;
	kept = malloc(len + 2);
	if (kept == NULL)
		return HP_ENOMEM;
	nkept = filter_maps(maps, len, kept);
	/* the same objects at the same places: modules and indexes stay */
	if (s->maps && s->maps_len == nkept && (nkept == 0 || memcmp(s->maps, kept, nkept) == 0))
	{
		free(kept);
		return HP_OK;
	}

	dwfl_report_begin(s->dwfl);
	if (nkept > 0)
	{
		f = fmemopen(kept, nkept, "r");
		if (f == NULL)
			rc = -1;
		else
		{
			rc = dwfl_linux_proc_maps_report(s->dwfl, f);
			fclose(f);
		}
	}
	/* modules not reported again are freed, with their indexes */
	dwfl_report_end(s->dwfl, removed_module, s);

	/* a maps text libdwfl cannot read leaves no modules: frames stay unnamed */
	(void) rc;
	free(s->maps);
	s->maps = kept;
	s->maps_len = nkept;
	return parse_maps(s, kept, nkept);
}

hp_status
hp_symbolizer_expect(hp_symbolizer *s, const hp_build_id *ids, size_t n,
					 uint64_t allocator_base)
{
	hp_build_id *copy = n ? malloc(n * sizeof(*ids)) : NULL;

	s->gen++;
	s->allocator_base = allocator_base;
	free(s->ids);
	s->ids = NULL;
	s->nids = 0;
	if (n && copy == NULL)
		return HP_ENOMEM;
	if (n)
		memcpy(copy, ids, n * sizeof(*ids));
	s->ids = copy;
	s->nids = n;
	return HP_OK;
}

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
fde_cmp(const void *a, const void *b)
{
	const fde_range *x = a;
	const fde_range *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return (x->hi > y->hi) - (x->hi < y->hi);
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
sort_syms(sym_range *v, size_t *n)
{
	size_t		k = 0;

	if (*n == 0)
		return;
	qsort(v, *n, sizeof(*v), sym_cmp);
	for (size_t i = 0; i < *n; i++)
		if (k == 0 || v[i].lo != v[k - 1].lo || v[i].hi != v[k - 1].hi)
			v[k++] = v[i];
	*n = k;
}

static void
index_symbols(Dwfl_Module *mod, mod_index *ix)
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
	sort_syms(ix->syms, &ix->nsyms);
	sort_syms(ix->labels, &ix->nlabels);
	ix->bytes += (cap + lcap) * sizeof(sym_range);
}

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

			if (p >= end)
				return 0xff;
			{
				uint8_t		penc = *p++;

				if (!read_encoded(penc & 0x7f, &p, end, 0, &ignored))
					return 0xff;
			}
		}
		else if (*aug != 'S' && *aug != 'B')
			return 0xff;
	}
	return 0x00;
}

typedef struct cie_enc
{
	Dwarf_Off	offset;
	uint8_t		enc;
} cie_enc;

static void
index_fdes(Dwfl_Module *mod, mod_index *ix)
{
	GElf_Addr	bias;
	Elf		   *elf = dwfl_module_getelf(mod, &bias);
	size_t		shstrndx;
	Elf_Scn    *scn = NULL;
	Elf_Data   *data = NULL;
	GElf_Shdr	shdr;
	const unsigned char *ident;
	Dwarf_Off	off = 0;
	Dwarf_Off	next;
	Dwarf_CFI_Entry entry;
	cie_enc    *cies = NULL;
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
		if (dwarf_cfi_cie_p(&entry))
		{
			if (ncies == ciecap)
			{
				cie_enc    *v = grow_array(cies, &ciecap, 8, sizeof(*v));

				if (v == NULL)
					break;
				cies = v;
			}
			cies[ncies++] = (cie_enc) {off, cie_fde_encoding(&entry.cie)};
		}
		else
		{
			uint8_t		enc = 0xff;
			const uint8_t *p = entry.fde.start;
			const uint8_t *end = entry.fde.end;
			uint64_t	lo;
			uint64_t	len;

			for (size_t i = ncies; i-- > 0;)
				if (cies[i].offset == entry.fde.CIE_pointer)
				{
					enc = cies[i].enc;
					break;
				}
			if (read_encoded(enc, &p, end, shdr.sh_addr + (uint64_t) (p - (const uint8_t *) data->d_buf), &lo) &&
				read_encoded(enc & 0x0f, &p, end, 0, &len) && len > 0)
			{
				if (ix->nfdes == cap)
				{
					fde_range  *v = grow_array(ix->fdes, &cap, 1024, sizeof(*v));

					if (v == NULL)
						break;
					ix->fdes = v;
				}
				ix->fdes[ix->nfdes++] = (fde_range) {lo, lo + len};
			}
		}
		if (next <= off)
			break;
		off = next;
	}
	free(cies);
	if (ix->nfdes > 1)
		qsort(ix->fdes, ix->nfdes, sizeof(*ix->fdes), fde_cmp);
	ix->bytes += cap * sizeof(*ix->fdes);
}

#define DELETED_SUFFIX " (deleted)"

/*
 * Is the file libdwfl would read the one the process had mapped at low?
 * Returns why not, or NULL.  Device and inode are compared only on the same
 * device: overlay file systems show other devices in maps than stat does.
 */
static const char *
file_mismatch(const hp_symbolizer *s, const char *path, uint64_t low)
{
	size_t		len = strlen(path);
	struct stat st;

	if (len > strlen(DELETED_SUFFIX) &&
		strcmp(path + len - strlen(DELETED_SUFFIX), DELETED_SUFFIX) == 0)
		return "deleted";
	for (size_t i = 0; i < s->nlines; i++)
	{
		const map_line *m = &s->lines[i];

		if (m->start != low)
			continue;
		if (stat(path, &st) != 0)
			return "missing";
		if (major(st.st_dev) == m->dev_major && minor(st.st_dev) == m->dev_minor &&
			st.st_ino != m->inode)
			return "replaced";
		break;
	}
	return NULL;
}

/* Does the build-id recorded at dump time (if any) match the file's? */
static bool
build_id_matches(const hp_symbolizer *s, Dwfl_Module *mod, uint64_t bias)
{
	const unsigned char *bits;
	GElf_Addr	vaddr;
	int			len;

	for (size_t i = 0; i < s->nids; i++)
	{
		if (s->ids[i].bias != bias)
			continue;
		len = dwfl_module_build_id(mod, &bits, &vaddr);
		return len <= 0 || ((size_t) len == s->ids[i].len && memcmp(bits, s->ids[i].id, (size_t) len) == 0);
	}
	return true;
}

static mod_index *
module_index(hp_symbolizer *s, Dwfl_Module *mod)
{
	void	  **slot;
	Dwarf_Addr	low = 0;
	const char *path = dwfl_module_info(mod, &slot, &low, NULL, NULL, NULL, NULL, NULL);
	mod_index  *ix = *slot;
	GElf_Addr	bias = 0;
	const char *base;

	if (ix)
		return ix;
	ix = calloc(1, sizeof(*ix));
	if (ix == NULL)
		return NULL;
	ix->path = path ? path : "?";
	base = strrchr(ix->path, '/');
	ix->object = base ? base + 1 : ix->path;
	ix->low = low;
	ix->bytes = sizeof(*ix);
	ix->gen = s->gen - 1;
	if (dwfl_module_getelf(mod, &bias) != NULL)
	{
		ix->bias = bias;
		ix->has_elf = true;
		index_symbols(mod, ix);
		index_fdes(mod, ix);
	}
	s->index_bytes += ix->bytes;
	*slot = ix;
	return ix;
}

/* Judge the module's file against the profile being analysed (see mod_index). */
static void
judge(hp_symbolizer *s, Dwfl_Module *mod, mod_index *ix)
{
	if (ix->gen == s->gen)
		return;
	ix->gen = s->gen;
	ix->mismatch = file_mismatch(s, ix->path, ix->low);
	if (ix->mismatch == NULL && ix->has_elf && !build_id_matches(s, mod, ix->bias))
		ix->mismatch = "build-id mismatch";
	/* the process said where jemalloc was; else trust the file only if it is right */
	ix->allocator = (s->allocator_base != 0 && ix->low == s->allocator_base) ||
		(ix->defines_mallctl && ix->mismatch == NULL);
}

/* The sized symbol containing pc, or NULL. */
static const sym_range *
find_symbol(const mod_index *ix, uint64_t pc)
{
	size_t		lo = 0;
	size_t		hi = ix->nsyms;

	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (ix->syms[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo = first symbol starting after pc; look back for one that spans it */
	for (size_t i = lo, tries = 0; i-- > 0 && tries < 8; tries++)
		if (pc < ix->syms[i].hi)
		{
			/* aliases sort best first: take the first of this start that spans pc */
			while (i > 0 && ix->syms[i - 1].lo == ix->syms[i].lo && pc < ix->syms[i - 1].hi)
				i--;
			return &ix->syms[i];
		}
	return NULL;
}

/* Index of the last range starting at or below pc, or SIZE_MAX. */
static size_t
last_at_or_below(const sym_range *v, size_t n, uint64_t pc)
{
	size_t		lo = 0;
	size_t		hi = n;

	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (v[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == 0 ? SIZE_MAX : lo - 1;
}

/*
 * An assembly entry point (sizeless global label) names pc only when no sized
 * symbol and no function start from .eh_frame lies between it and pc -- the
 * rule libdwfl uses, so code after a label is never given the label's name
 * across a real function boundary.
 */
static const sym_range *
find_label(const mod_index *ix, uint64_t pc, uint64_t fde_start)
{
	size_t		i = last_at_or_below(ix->labels, ix->nlabels, pc);
	size_t		j = last_at_or_below(ix->syms, ix->nsyms, pc);
	const sym_range *label;

	if (i == SIZE_MAX)
		return NULL;
	label = &ix->labels[i];
	if (pc >= label->hi)
		return NULL;
	if (j != SIZE_MAX && ix->syms[j].hi > label->lo)
		return NULL;
	if (fde_start != UINT64_MAX && fde_start + ix->bias > label->lo)
		return NULL;
	return label;
}

static const fde_range *
find_fde(const mod_index *ix, uint64_t addr)
{
	size_t		lo = 0;
	size_t		hi = ix->nfdes;

	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (ix->fdes[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0 && addr < ix->fdes[lo - 1].hi)
		return &ix->fdes[lo - 1];
	return NULL;
}

typedef char *(*demangle_fn) (const char *, char *, size_t *, int *);

/*
 * libstdc++'s demangler, found at run time: jemalloc already loads
 * libstdc++ into the server, and heapprof need not link it.
 */
static demangle_fn
demangler(void)
{
	static bool looked;
	static demangle_fn fn;

	if (!looked)
	{
		void	   *lib;

		looked = true;
		fn = (demangle_fn) dlsym(RTLD_DEFAULT, "__cxa_demangle");
		if (fn == NULL && (lib = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL)) != NULL)
			fn = (demangle_fn) dlsym(lib, "__cxa_demangle");
	}
	return fn;
}

/* Remove every innermost open..close group (and a following " const" after ")"). */
static bool
drop_groups(char *s, char open, char close)
{
	bool		changed = false;
	size_t		start = SIZE_MAX;

	for (size_t i = 0; s[i]; i++)
	{
		if (s[i] == open)
			start = i;
		else if (s[i] == close && start != SIZE_MAX)
		{
			size_t		rest = i + 1;

			if (open == '(')
			{
				size_t		q = rest;

				while (isspace((unsigned char) s[q]))
					q++;
				if (strncmp(s + q, "const", 5) == 0)
					rest = q + 5;
			}
			memmove(s + start, s + rest, strlen(s + rest) + 1);
			i = start;			/* re-examine from the group's place */
			start = SIZE_MAX;
			changed = true;
			if (s[i] == '\0')
				break;
			if (s[i] == open)
				start = i;
		}
		else if (s[i] == close)
			start = SIZE_MAX;
	}
	return changed;
}

/*
 * A C++ symbol as jeprof's ShortFunctionName shows it: demangled, without
 * argument lists, template arguments or return type ("ns::Class::method").
 * Other names are copied unchanged.  The demangler's buffer belongs to the
 * symbolizer, so running out of arena memory here leaks nothing.
 */
static const char *
display_name(hp_symbolizer *sz, hp_arena *a, const char *name)
{
	demangle_fn fn = name[0] == '_' && name[1] == 'Z' ? demangler() : NULL;
	char	   *out;
	char	   *s;
	int			status = -1;
	size_t		cut = 0;

	if (fn == NULL)
		return hp_strdup(a, name);
	out = fn(name, sz->demangled, &sz->demangled_len, &status);
	if (out == NULL || status != 0)
		return hp_strdup(a, name);
	sz->demangled = out;
	s = hp_strdup(a, out);
	while (drop_groups(s, '(', ')'))
		;
	while (drop_groups(s, '<', '>'))
		;
	/* "type ns::f" -> "ns::f": the last word with "::" after white space */
	for (size_t i = 1; s[0] && s[i]; i++)
		if (isspace((unsigned char) s[i - 1]) && (isalnum((unsigned char) s[i]) || s[i] == '_'))
		{
			size_t		q = i;

			while (isalnum((unsigned char) s[q]) || s[q] == '_')
				q++;
			if (s[q] == ':' && s[q + 1] == ':')
				cut = i;
		}
	return s + cut;
}

/* A DIE's function name, preferring the linkage name that carries C++ scopes. */
static const char *
die_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));

	return name ? name : dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
}

static bool
push_range(cu_index *ci, int depth, uint64_t lo, uint64_t hi, Dwarf_Off die)
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
walk_cu(Dwarf_Die *die, int depth, int nesting, cu_index *ci)
{
	Dwarf_Die	child;

	if (nesting > 256 || dwarf_child(die, &child) != 0)
		return;
	do
	{
		int			tag = dwarf_tag(&child);
		bool		code = tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine;

		if (code && depth < MAX_INLINE_DEPTH)
		{
			Dwarf_Addr	base;
			Dwarf_Addr	lo;
			Dwarf_Addr	hi;
			ptrdiff_t	off = 0;

			while ((off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0)
				if (hi > lo)	/* compilers emit empty ranges; they break the search */
					push_range(ci, depth, lo, hi, dwarf_dieoffset(&child));
		}
		if (code || tag == DW_TAG_lexical_block || tag == DW_TAG_namespace ||
			tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
			tag == DW_TAG_union_type)
			walk_cu(&child, depth + (code ? 1 : 0), nesting + 1, ci);
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

/* The index of the CU at cu_off, built on first use; NULL without memory. */
static cu_index *
cu_lookup(hp_symbolizer *s, mod_index *ix, Dwarf_Die *cu)
{
	Dwarf_Off	off = dwarf_dieoffset(cu);
	size_t		i;
	cu_index   *ci;

	if ((ix->ncus + 1) * 2 > ix->cuslots)
	{
		size_t		n = ix->cuslots ? ix->cuslots * 2 : 64;
		cu_index  **slots = calloc(n, sizeof(*slots));

		if (slots == NULL)
			return NULL;
		for (size_t k = 0; k < ix->cuslots; k++)
			if (ix->cus[k])
			{
				for (i = ix->cus[k]->cu & (n - 1); slots[i]; i = (i + 1) & (n - 1))
					;
				slots[i] = ix->cus[k];
			}
		free(ix->cus);
		ix->bytes += (n - ix->cuslots) * sizeof(*slots);
		s->index_bytes += (n - ix->cuslots) * sizeof(*slots);
		ix->cus = slots;
		ix->cuslots = n;
	}
	for (i = off & (ix->cuslots - 1); ix->cus[i]; i = (i + 1) & (ix->cuslots - 1))
		if (ix->cus[i]->cu == off)
			return ix->cus[i];

	ci = calloc(1, sizeof(*ci));
	if (ci == NULL)
		return NULL;
	ci->cu = off;
	walk_cu(cu, 0, 0, ci);
	for (int d = 0; d < MAX_INLINE_DEPTH; d++)
		if (ci->nlevel[d] > 1)
			qsort(ci->level[d], ci->nlevel[d], sizeof(fn_range), fn_range_cmp);
	ci->bytes += sizeof(*ci);
	ix->bytes += ci->bytes;
	s->index_bytes += ci->bytes;
	ix->cus[i] = ci;
	ix->ncus++;
	return ci;
}

/* The range at one depth containing addr (ranges at a depth do not overlap). */
static const fn_range *
find_range(const cu_index *ci, int depth, uint64_t addr)
{
	const fn_range *v = ci->level[depth];
	size_t		lo = 0;
	size_t		hi = ci->nlevel[depth];

	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (v[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= v[lo - 1].hi)
		return NULL;
	/* the first of several ranges starting at the same address */
	while (lo > 1 && v[lo - 2].lo == v[lo - 1].lo && addr < v[lo - 2].hi)
		lo--;
	return &v[lo - 1];
}

/*
 * The function containing pc and the functions inlined into it at pc, from
 * DWARF, through the CU's index: depth 0 is the real function, each deeper
 * range an inlined call inside it.  False when DWARF does not cover pc.
 */
static bool
dwarf_frames(hp_symbolizer *s, mod_index *ix, Dwfl_Module *mod, uint64_t pc,
			 hp_arena *a, hp_symbol *out)
{
	Dwarf_Addr	bias;
	Dwarf_Die  *cu = dwfl_module_addrdie(mod, pc, &bias);
	Dwarf	   *dw;
	cu_index   *ci;
	const char *names[MAX_INLINE_DEPTH];
	int			k = 0;

	if (cu == NULL || (dw = dwfl_module_getdwarf(mod, &bias)) == NULL ||
		(ci = cu_lookup(s, ix, cu)) == NULL)
		return false;
	for (int d = 0; d < MAX_INLINE_DEPTH; d++)
	{
		const fn_range *r = find_range(ci, d, pc - bias);
		Dwarf_Die	die;

		if (r == NULL || dwarf_offdie(dw, r->die, &die) == NULL)
			break;
		names[k++] = die_name(&die);
	}
	if (k == 0 || names[0] == NULL)
		return false;
	/* names[0] is the real function, names[k - 1] the innermost inlined one */
	out->name = display_name(s, a, names[0]);
	if (k > 1)
	{
		out->inlines = hp_alloc(a, (size_t) (k - 1) * sizeof(char *));
		for (int i = 0; i < k - 1; i++)
			out->inlines[i] = display_name(s, a, names[k - 1 - i] ? names[k - 1 - i] : "??");
		out->ninlines = (uint32_t) (k - 1);
	}
	return true;
}

void
hp_symbolize(hp_symbolizer *s, uint64_t pc, hp_arena *a, hp_symbol *out)
{
	Dwfl_Module *mod = dwfl_addrmodule(s->dwfl, pc);
	mod_index  *ix;
	const sym_range *sym;
	const fde_range *fde;
	Dwfl_Line  *line;
	char		label[512];

	memset(out, 0, sizeof(*out));
	ix = mod ? module_index(s, mod) : NULL;
	if (ix == NULL)
	{
		/* anonymous memory (JIT code), the vDSO, or outside every mapping */
		snprintf(label, sizeof(label), "0x%llx", (unsigned long long) pc);
		out->name = hp_strdup(a, label);
		return;
	}
	judge(s, mod, ix);
	out->object = hp_strdup(a, ix->object);
	out->allocator = ix->allocator;
	if (!ix->has_elf || ix->mismatch)
	{
		/* no trustworthy file: an offset in the object, and why */
		size_t		olen = strlen(ix->object);

		if (olen > strlen(DELETED_SUFFIX) &&
			strcmp(ix->object + olen - strlen(DELETED_SUFFIX), DELETED_SUFFIX) == 0)
			olen -= strlen(DELETED_SUFFIX);
		snprintf(label, sizeof(label), "%.*s+0x%llx%s%s%s", (int) olen, ix->object,
				 (unsigned long long) (pc - ix->low), ix->mismatch ? " [" : "",
				 ix->mismatch ? ix->mismatch : "", ix->mismatch ? "]" : "");
		out->name = hp_strdup(a, label);
		return;
	}

	line = dwfl_module_getsrc(mod, pc);
	if (line)
	{
		const char *file = dwfl_lineinfo(line, NULL, &out->line, NULL, NULL, NULL);

		if (file)
			out->file = hp_strdup(a, file);
	}

	sym = find_symbol(ix, pc);
	fde = find_fde(ix, pc - ix->bias);
	if (sym == NULL)
		sym = find_label(ix, pc, fde ? fde->lo : UINT64_MAX);
	out->start = sym ? sym->lo : fde ? fde->lo + ix->bias : 0;
	if (line && dwarf_frames(s, ix, mod, pc, a, out))
		return;
	if (sym)
	{
		out->name = display_name(s, a, sym->name);
		return;
	}
	if (fde)
		snprintf(label, sizeof(label), "%s+0x%llx", ix->object, (unsigned long long) fde->lo);
	else
		snprintf(label, sizeof(label), "%s+0x%llx", ix->object, (unsigned long long) (pc - ix->bias));
	out->name = hp_strdup(a, label);
}
