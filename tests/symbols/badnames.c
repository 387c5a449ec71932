/*
 * badnames.c -- give every function symbol of an ELF file a name offset far
 * outside its string table.  The file still loads and runs (.symtab is not
 * used at run time), but a symbolizer that trusts symbol names crashes.
 * Usage: badnames FILE
 */
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
	int			fd;
	Elf		   *elf;
	Elf_Scn    *scn = NULL;
	int			changed = 0;

	if (argc != 2 || elf_version(EV_CURRENT) == EV_NONE ||
		(fd = open(argv[1], O_RDWR)) < 0 ||
		(elf = elf_begin(fd, ELF_C_RDWR, NULL)) == NULL)
		return 2;
	while ((scn = elf_nextscn(elf, scn)) != NULL)
	{
		GElf_Shdr	sh;
		Elf_Data   *data;

		if (gelf_getshdr(scn, &sh) == NULL || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		if (sh.sh_type == SHT_DYNSYM || (data = elf_getdata(scn, NULL)) == NULL)
			continue;			/* the loader needs .dynsym; break .symtab only */
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++)
		{
			GElf_Sym	sym;

			if (gelf_getsym(data, (int) i, &sym) && GELF_ST_TYPE(sym.st_info) == STT_FUNC)
			{
				sym.st_name = 0x7ffffff0;
				gelf_update_sym(data, (int) i, &sym);
				changed++;
			}
		}
		elf_flagdata(data, ELF_C_SET, ELF_F_DIRTY);
	}
	elf_flagelf(elf, ELF_C_SET, ELF_F_LAYOUT);
	if (changed == 0 || elf_update(elf, ELF_C_WRITE) < 0)
		return 1;
	elf_end(elf);
	close(fd);
	printf("%d symbols broken\n", changed);
	return 0;
}
