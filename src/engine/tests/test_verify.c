/*
 * test_verify.c -- the one check of files from outside (verify.h): a file
 * of another build is refused, whether asked by build-id or by a
 * debuglink's CRC; a fetched debug file of another build names nothing, is
 * said to be refused and is given back to be removed from the cache.
 */
#define _GNU_SOURCE
#include "test.h"

#include "engine/debuginfo.h"
#include "engine/symbolize.h"
#include "engine/verify.h"

#include <dlfcn.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>
#include <zlib.h>

/* This program's build-id, and its file open at *fd. */
static size_t
own_id(uint8_t *id, int *fd)
{
	Elf		   *elf;
	const void *bits;
	ssize_t		len;

	*fd = open("/proc/self/exe", O_RDONLY);
	elf_version(EV_CURRENT);
	elf = elf_begin(*fd, ELF_C_READ, NULL);
	len = elf ? dwelf_elf_gnu_build_id(elf, &bits) : -1;
	if (len > 0 && len <= 64)
		memcpy(id, bits, (size_t) len);
	elf_end(elf);
	return len > 0 && len <= 64 ? (size_t) len : 0;
}

static uint32_t
crc_of(int fd)
{
	unsigned char buf[4096];
	uLong		c = crc32(0L, Z_NULL, 0);
	ssize_t		n;
	off_t		off = 0;

	while ((n = pread(fd, buf, sizeof(buf), off)) > 0)
	{
		c = crc32(c, buf, (uInt) n);
		off += n;
	}
	return (uint32_t) c;
}

static void
test_file(void)
{
	uint8_t		id[64];
	int			fd;
	size_t		len = own_id(id, &fd);
	uint32_t	crc = crc_of(fd);
	char		text[] = "/tmp/hp_verify_XXXXXX";
	int			tfd = mkstemp(text);
	const char *why;

	T_CHECK("verify_has_id", len > 0, "this program has no build-id");
	why = hp_verify_file(NULL, fd, &(hp_want) {id, len, false, 0});
	T_CHECK("verify_same_build", why == NULL, "refused its own build: %s", why);
	id[len - 1] ^= 1;
	why = hp_verify_file(NULL, fd, &(hp_want) {id, len, false, 0});
	T_CHECK("verify_other_build", why && strcmp(why, "build-id mismatch") == 0, "gave %s", why);
	why = hp_verify_file(NULL, fd, &(hp_want) {id, len - 1, false, 0});
	T_CHECK("verify_prefix", why && strcmp(why, "build-id mismatch") == 0, "a prefix of the id: %s", why);
	why = hp_verify_file(NULL, fd, &(hp_want) {NULL, 0, true, crc});
	T_CHECK("verify_crc", why == NULL, "refused the right CRC: %s", why);
	why = hp_verify_file(NULL, fd, &(hp_want) {NULL, 0, true, crc ^ 1});
	T_CHECK("verify_crc_mismatch", why && strcmp(why, "CRC mismatch") == 0, "gave %s", why);
	why = hp_verify_file(NULL, fd, &(hp_want) {NULL, 0, false, 0});
	T_CHECK("verify_nothing", why != NULL, "took a file with nothing to check it by");
	T_CHECK("verify_offset", lseek(fd, 0, SEEK_CUR) == 0, "moved the descriptor's offset");
	(void) !write(tfd, "not ELF\n", 8);
	why = hp_verify_file(NULL, tfd, &(hp_want) {id, len, false, 0});
	T_CHECK("verify_not_elf", why && strcmp(why, "not an ELF file") == 0, "gave %s", why);
	T_CHECK("verify_id", hp_verify_id(id, len, id, len) && !hp_verify_id(id, 0, id, 0) &&
			!hp_verify_id(id, len, id, len - 1), "hp_verify_id");
	close(tfd);
	unlink(text);
	close(fd);
}

/* A debuginfod that answers every build-id with this program (another build). */
typedef struct forger
{
	int			asked;
	int			discarded;
	char		path[64];
} forger;

static int
forge(void *arg, const unsigned char *id, size_t len, char **path)
{
	forger	   *f = arg;
	int			in = open("/proc/self/exe", O_RDONLY);
	int			out;
	char		buf[65536];
	ssize_t		n;

	f->asked++;
	snprintf(f->path, sizeof(f->path), "/tmp/hp_forged_XXXXXX");
	out = mkstemp(f->path);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		(void) !write(out, buf, (size_t) n);
	close(in);
	*path = strdup(f->path);
	return out;
}

static void
discard(void *arg, const char *path)
{
	forger	   *f = arg;

	f->discarded += strcmp(path, f->path) == 0 && unlink(path) == 0;
}

typedef struct run_arg
{
	hp_symbolizer *s;
	hp_arena   *a;
	const char *maps;
	size_t		len;
	uint64_t	pc;
	hp_symbol	out;
} run_arg;

static void
run(void *p)
{
	run_arg    *r = p;

	hp_symbolizer_sync(r->s, r->a, r->maps, r->len, &r->pc, 1);
	hp_symbolize(r->s, r->pc, r->a, &r->out);
}

static void
count_refusal(void *arg, const char *refusal)
{
	if (strstr(refusal, "debug file for libz") && strstr(refusal, "refused: build-id mismatch (from debuginfod)"))
		++*(int *) arg;
}

/* libz's code (no debug info on this machine) asks the forger for its debug file */
static void
test_forged_fetch(void)
{
	t_env		t;
	hp_arena	a;
	char	   *maps = malloc(1 << 20);
	FILE	   *mf = fopen("/proc/self/maps", "r");
	size_t		len = fread(maps, 1, (1 << 20) - 1, mf);
	forger		f = {0};
	hp_fetcher	fetcher = {NULL, forge, discard, &f};
	hp_symbolizer *plain = hp_symbolizer_new();
	hp_symbolizer *s = hp_symbolizer_new();
	run_arg		r0;
	run_arg		r;
	int			said = 0;

	fclose(mf);
	maps[len] = '\0';
	t_env_init(&t);
	hp_arena_init(&a, &t.env);
	hp_symbolizer_fetch(s, &fetcher);
	/* crc32 itself: named from libz's .dynsym unless a debug file says otherwise */
	r0 = (run_arg) {plain, &a, maps, len, (uint64_t) (uintptr_t) & crc32 + 4, {0}};
	r = r0;
	r.s = s;
	T_CHECK("verify_plain_run", t_run(&t, run, &r0) == 0, "%s", t.message);
	T_CHECK("verify_forged_run", t_run(&t, run, &r) == 0, "%s", t.message);
	hp_symbolizer_refusals(s, count_refusal, &said);
	T_CHECK("verify_forged_asked", f.asked == 1, "the forger was asked %d times", f.asked);
	T_CHECK("verify_forged_refused", said == 1, "no refusal said for libz's forged debug file");
	T_CHECK("verify_forged_discarded", f.discarded == 1 && access(f.path, F_OK) != 0,
			"the forged file was not given back to be removed");
	T_CHECK("verify_forged_names_nothing", r0.out.name && r.out.name && strcmp(r0.out.name, r.out.name) == 0 &&
			strstr(r.out.name, "crc32") != NULL, "named %s, not %s", r.out.name, r0.out.name);
	hp_arena_free(&a);
	hp_symbolizer_free(plain);
	hp_symbolizer_free(s);
	free(maps);
}

/* Copy from into the file at to; false on any failure. */
static bool
copy(const char *from, const char *to)
{
	int			in = open(from, O_RDONLY);
	int			out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	char		buf[65536];
	ssize_t		n;
	bool		ok = in >= 0 && out >= 0;

	while (ok && (n = read(in, buf, sizeof(buf))) > 0)
		ok = write(out, buf, (size_t) n) == n;
	close(in);
	close(out);
	return ok;
}

/* heapprof_objects()' probe: a debuglink file of another build next to the object is no debug info */
static void
test_probe(void)
{
	char		dir[] = "/tmp/hp_probe_XXXXXX";
	char		lib[64];
	char		link[128];
	hp_debuginfo info;
	Dl_info		z;
	bool		made = mkdtemp(dir) != NULL && dladdr((void *) crc32, &z) && z.dli_fname;

	snprintf(lib, sizeof(lib), "%s/libz.so.1", dir);
	/* libz's .gnu_debuglink names BUILDID-REST.debug, next to it */
	made = made && copy(z.dli_fname, lib) && hp_debuginfo_probe(lib, &info) &&
		!info.found && strlen(info.build_id) == 40;
	snprintf(link, sizeof(link), "%s/%.38s.debug", dir, made ? info.build_id + 2 : "");
	made = made && copy("/proc/self/exe", link);
	T_CHECK("verify_probe_setup", made, "no stripped libz with a debuglink to plant next to");
	if (made)
	{
		bool		probed = hp_debuginfo_probe(lib, &info);

		T_CHECK("verify_probe_refused", probed && !info.found && info.refused &&
				strcmp(info.refused, "build-id mismatch") == 0 && strcmp(info.refused_file, link) == 0,
				"found %d, refused %s (%s)", info.found, info.refused, info.refused_file);
	}
	unlink(link);
	unlink(lib);
	rmdir(dir);
}

int
main(void)
{
	test_file();
	test_forged_fetch();
	test_probe();
	return t_exit();
}
