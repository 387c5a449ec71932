/*
 * image.c -- this process's image: the executable's code and its slots for
 * the functions it calls, and writing into read-only data.
 *
 * owner.c wraps the memory allocators' method tables, which PostgreSQL
 * keeps const, and, for a moment while it learns where the allocators call
 * malloc, points the executable's slot for malloc at its own.  Both are
 * words in pages mapped read-only (.rodata; the GOT, read-only after
 * relocation under -z now and RELRO).  Each write makes the pages writable
 * and gives them back the protection they had, as read beforehand: the hook
 * that writes while a process samples may not open /proc.  And it tells
 * whether a sampled malloc was called by an allocator from the function the
 * caller's frame is in: the executable's code range, and the start of a
 * function as the unwinder's tables (.eh_frame, found by libgcc's
 * _Unwind_Find_FDE, as jemalloc's backtrace finds them) give it.
 */
#include "postgres.h"

#include <elf.h>
#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include "image.h"

int
hpg_image_protection(const void *addr, size_t len)
{
	FILE	   *f = fopen("/proc/self/maps", "r");
	uintptr_t	first = (uintptr_t) addr;
	uintptr_t	last = first + len - 1;
	char		line[512];
	int			prot = -1;

	if (f == NULL || len == 0)
	{
		if (f != NULL)
			fclose(f);
		return -1;
	}
	while (fgets(line, sizeof(line), f) != NULL)
	{
		unsigned long lo,
					hi;
		char		perms[8];

		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && first >= lo && first < hi)
		{
			if (last < hi)
				prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
					(perms[2] == 'x' ? PROT_EXEC : 0);
			break;
		}
	}
	fclose(f);
	return prot;
}

int
hpg_image_write(void *dst, const void *src, size_t len, int prot)
{
	static uintptr_t page;
	uintptr_t	lo,
				hi;

	if (prot < 0)
		return ENOTSUP;
	if (page == 0)
		page = (uintptr_t) sysconf(_SC_PAGESIZE);
	lo = (uintptr_t) dst & ~(page - 1);
	hi = ((uintptr_t) dst + len + page - 1) & ~(page - 1);
	if (!(prot & PROT_WRITE) && mprotect((void *) lo, hi - lo, prot | PROT_WRITE) != 0)
		return errno;
	memcpy(dst, src, len);
	if (!(prot & PROT_WRITE) && mprotect((void *) lo, hi - lo, prot) != 0)
		return errno;			/* written, but left writable: the caller undoes it */
	return 0;
}

/* The relocations that bind a slot to a function, on the platforms known here. */
#if defined(__x86_64__)
#define SLOT_RELOC(t) ((t) == R_X86_64_JUMP_SLOT || (t) == R_X86_64_GLOB_DAT)
#elif defined(__aarch64__)
#define SLOT_RELOC(t) ((t) == R_AARCH64_JUMP_SLOT || (t) == R_AARCH64_GLOB_DAT)
#endif

#ifdef SLOT_RELOC
typedef struct
{
	const char *name;
	void	  **slot;
} slot_search;

/* A .dynamic address: relocated in place by ld.so on most platforms, not all. */
static uintptr_t
dyn_addr(ElfW(Addr) ptr, ElfW(Addr) base)
{
	return ptr < base ? ptr + base : ptr;
}

static int
find_slot(struct dl_phdr_info *info, size_t size, void *arg)
{
	slot_search *s = arg;
	const ElfW(Dyn) *dyn = NULL;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	const ElfW(Rela) *rel[2] = {NULL, NULL};
	size_t		relsz[2] = {0, 0};

	(void) size;
	/* the executable comes first */
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *) (info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	for (; dyn != NULL && dyn->d_tag != DT_NULL; dyn++)
	{
		switch (dyn->d_tag)
		{
			case DT_SYMTAB:
				symtab = (const ElfW(Sym) *) dyn_addr(dyn->d_un.d_ptr, info->dlpi_addr);
				break;
			case DT_STRTAB:
				strtab = (const char *) dyn_addr(dyn->d_un.d_ptr, info->dlpi_addr);
				break;
			case DT_JMPREL:
				rel[0] = (const ElfW(Rela) *) dyn_addr(dyn->d_un.d_ptr, info->dlpi_addr);
				break;
			case DT_PLTRELSZ:
				relsz[0] = dyn->d_un.d_val;
				break;
			case DT_RELA:
				rel[1] = (const ElfW(Rela) *) dyn_addr(dyn->d_un.d_ptr, info->dlpi_addr);
				break;
			case DT_RELASZ:
				relsz[1] = dyn->d_un.d_val;
				break;
		}
	}
	for (int k = 0; k < 2 && symtab != NULL && strtab != NULL; k++)
	{
		for (size_t i = 0; rel[k] != NULL && i < relsz[k] / sizeof(ElfW(Rela)); i++)
		{
			const ElfW(Rela) *r = &rel[k][i];

			if (SLOT_RELOC(ELF64_R_TYPE(r->r_info)) &&
				strcmp(strtab + symtab[ELF64_R_SYM(r->r_info)].st_name, s->name) == 0)
			{
				s->slot = (void **) (info->dlpi_addr + r->r_offset);
				return 1;
			}
		}
	}
	return 1;					/* only the executable */
}
#endif

void **
hpg_image_slot(const char *name)
{
#ifdef SLOT_RELOC
	slot_search s = {name, NULL};

	dl_iterate_phdr(find_slot, &s);
	return s.slot;
#else
	(void) name;
	return NULL;
#endif
}

/* libgcc's (unwind-dw2-fde.h): the unwind entry of pc, and its function's start in bases->func */
struct dwarf_eh_bases
{
	void	   *tbase;
	void	   *dbase;
	void	   *func;
};
typedef const void *(*find_fde_fn) (void *pc, struct dwarf_eh_bases *bases);

static find_fde_fn find_fde;
static uintptr_t code_lo,
			code_hi;

static int
find_code(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void) size;
	(void) arg;
	/* the executable comes first; its one executable segment */
	for (int i = 0; i < info->dlpi_phnum; i++)
	{
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && code_hi == 0)
		{
			code_lo = info->dlpi_addr + ph->p_vaddr;
			code_hi = code_lo + ph->p_memsz;
		}
	}
	return 1;
}

bool
hpg_image_init(void)
{
	if (code_hi == 0)
		dl_iterate_phdr(find_code, NULL);
	if (find_fde == NULL)
		find_fde = (find_fde_fn) dlsym(RTLD_DEFAULT, "_Unwind_Find_FDE");
	return code_hi != 0 && find_fde != NULL;
}

bool
hpg_image_code(uintptr_t pc)
{
	return pc >= code_lo && pc < code_hi && find_fde != NULL;
}

uintptr_t
hpg_image_function(uintptr_t pc)
{
	struct dwarf_eh_bases bases = {NULL, NULL, NULL};

	if (find_fde == NULL || find_fde((void *) pc, &bases) == NULL)
		return 0;
	return (uintptr_t) bases.func;
}
