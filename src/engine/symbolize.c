/*
 * symbolize.c -- one libdwfl session, with indexes of our own per module.
 *
 * The session reports a dump's maps to libdwfl (modules and their caches
 * are reused while they stay the same) and names an address from the
 * indexes of its module, built on first use and kept in the module's
 * userdata slot until a re-sync drops the module.  The indexes, the name
 * shortening and the file identity checks live in sym_*.c (see
 * sym_internal.h); this file composes them into one answer per address.
 *
 * A dump may name one file in many ways (./ and // in its path, symlinks),
 * each a module of its own to libdwfl: the modules whose files are one on
 * disk (device, inode, size and time) share the indexes and libdw's debug
 * info of the first indexed, so a file is read once whatever its spellings
 * -- and opened once: libdwfl keeps a descriptor per module it reads, and
 * 1,024 of them exhaust a backend's.
 *
 * Index builds poll the analysis' interrupt, which may longjmp out of them
 * (a cancelled query): a module's index is used only once marked ready, and
 * one found unfinished is built again from scratch.
 *
 * With an index store (hp_symbolizer_store), a module whose file has a
 * build-id is named from that object's index file (symindex.h), mapped
 * read-only and shared by every process: neither its symbols nor its DWARF
 * are read.  Without a usable one, the module is indexed here as before,
 * and the whole object -- every CU -- is written as its index once, for the
 * next processes.
 */
#include "sym_internal.h"

#include "maps.h"
#include "verify.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct mod_index mod_index;

struct mod_index
{
	Dwfl_Module *mod;
	bool		ready;			/* the file read and indexed, or shared */
	size_t		counted;		/* its bytes in the symbolizer's index_bytes */
	const char *path;			/* as in the maps (libdwfl's copy) */
	const char *object;			/* its basename */
	uint64_t	low;			/* first mapped address */
	uint64_t	high;			/* end of the last */
	uint64_t	bias;
	Elf		   *elf;			/* the file as libdwfl read it, or NULL */
	bool		fetched;		/* found by build-id through the fetcher */
	bool		asked[2];		/* the fetcher asked for its debug file, its dwz file */
	bool		dwarf;			/* its DWARF is usable (module_dwarf) */
	hp_symbolizer *s;		/* for the libdwfl callbacks */

	/*
	 * The verdict for the profile being analysed (generation gen): the file
	 * may be right for one process and stale for another, so it is judged
	 * again whenever the maps or the expected build-ids change.
	 */
	unsigned	gen;
	const char *mismatch;		/* why the file is not what was loaded, or NULL */
	char		evidence[96];	/* what decided */
	bool		allocator;
	/* the file on disk libdwfl read, when stat could tell */
	bool		keyed;
	struct stat st;
	mod_index  *same;			/* a module of the same file, whose indexes are used */
	/* the object's shared index, when mapped: then syms, fdes, cus stay empty */
	const void *map;
	size_t		maplen;
	hp_symindex sx;
	sym_symbols syms;
	sym_fdes	fdes;
	sym_cus		cus;
};

struct hp_symbolizer
{
	Dwfl	   *dwfl;
	char	   *maps;			/* the maps last reported, filtered; NULL: none */
	size_t		maps_len;
	sym_identity id;
	unsigned	gen;			/* bumped by every sync and expect */
	sym_names	names;
	size_t		index_bytes;
	bool		removed;		/* a module went at the last report */
	hp_fetcher	fetcher;	/* all NULL: local files only */
	hp_index_store store;		/* map NULL: no shared indexes */
	/* files from outside refused by hp_verify_file, each said once */
	char		refused[HP_MAX_REFUSALS][256];
	size_t		nrefused;
};

static hp_index_counts counts;

static char *debuginfo_path;

/* The build-id the process recorded for the object loaded at bias, or NULL. */
static const hp_build_id *
recorded_id(const hp_symbolizer *s, uint64_t bias)
{
	for (size_t i = 0; i < s->id.nids; i++)
		if (s->id.ids[i].bias == bias)
			return &s->id.ids[i];
	return NULL;
}

/* Say once that a file from outside was refused, and why. */
static void
note_refusal(hp_symbolizer *s, const char *what, const char *object, const char *why,
			 const char *where)
{
	char		line[sizeof(s->refused[0])];

	snprintf(line, sizeof(line), "%s for %s refused: %s (%s)", what, object, why, where);
	for (size_t i = 0; i < s->nrefused; i++)
		if (strcmp(s->refused[i], line) == 0)
			return;
	if (s->nrefused < HP_MAX_REFUSALS)
		memcpy(s->refused[s->nrefused++], line, sizeof(line));
}

/*
 * fd (path *file, malloc'ed) if it is the file w asks for; else nothing
 * stays of it: refused, and removed from the fetcher's cache when fetched.
 */
static int
admit(mod_index *ix, int fd, char **file, const hp_want *w, const char *what, bool fetched)
{
	const char *why = hp_verify_file(NULL, fd, w);

	if (why == NULL)
		return fd;
	close(fd);
	if (ix)
	{
		note_refusal(ix->s, what, ix->object, why, fetched ? "from debuginfod" : *file ? *file : "local");
		if (fetched && *file && ix->s->fetcher.discard)
			ix->s->fetcher.discard(ix->s->fetcher.arg, *file);
	}
	free(*file);
	*file = NULL;
	return -1;
}

/*
 * The file at the module's path, or, when it is missing or another build
 * than the process recorded (a dump from another machine, an upgrade), the
 * recorded build from the fetcher.  The module's index is in its userdata
 * slot already (module_index).  For a PIE or a library the load bias is the
 * first mapped address, base.
 */
static int
find_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
		 char **file, Elf **elfp)
{
	mod_index  *ix = *userdata;
	int			fd = dwfl_linux_proc_find_elf(mod, userdata, name, base, file, elfp);
	const hp_build_id *want;
	hp_want		w;
	char	   *path = NULL;
	int			got;

	if (ix == NULL || ix->s->fetcher.executable == NULL ||
		(want = recorded_id(ix->s, base)) == NULL || want->len == 0)
		return fd;
	w = (hp_want) {want->id, want->len, false, 0};
	if (fd >= 0 && *elfp == NULL && hp_verify_file(NULL, fd, &w) == NULL)
		return fd;
	got = ix->s->fetcher.executable(ix->s->fetcher.arg, want->id, want->len, &path);
	if (got < 0 || (got = admit(ix, got, &path, &w, "executable", true)) < 0)
		return fd;
	if (fd >= 0)
		close(fd);
	elf_end(*elfp);
	*elfp = NULL;
	free(*file);
	*file = path;
	ix->fetched = true;
	return got;
}

/*
 * What a debug file asked for must be: libdwfl asks for the module's own
 * (link: the main file's .gnu_debuglink, the very pointer libelf gives) and
 * then, once that file's DWARF is open, for the dwz file it names in its
 * .gnu_debugaltlink (link: that name), whose build-id the DWARF holds.
 * Returns 0 for the debug file, 1 for the dwz file, -1 when neither is
 * known (then nothing is admitted).
 */
static int
wanted(Dwfl_Module *mod, const char *link, GElf_Word crc, hp_want *w)
{
	GElf_Addr	bias;
	GElf_Word	own_crc;
	Elf		   *elf = dwfl_module_getelf(mod, &bias);
	const unsigned char *bits;
	const char *alt;
	const void *altid;
	ssize_t		len;
	Dwarf	   *dw;

	*w = (hp_want) {NULL, 0, false, 0};
	if (elf && link == dwelf_elf_gnu_debuglink(elf, &own_crc))
	{
		len = dwfl_module_build_id(mod, &bits, &bias);
		*w = (hp_want) {bits, len > 0 ? (size_t) len : 0, link != NULL, crc};
		return 0;
	}
	/* only now is the module's DWARF open (asked before, libdwfl would look for it again) */
	if (link == NULL || crc != 0 || (dw = dwfl_module_getdwarf(mod, &bias)) == NULL ||
		(len = dwelf_dwarf_gnu_debugaltlink(dw, &alt, &altid)) <= 0 || alt != link)
		return -1;
	*w = (hp_want) {altid, (size_t) len, false, 0};
	return 1;
}

/*
 * Debug info from the usual local places, else from the fetcher; either
 * way only the build asked for (libdwfl checks its own finds too, but a
 * fetched file it would take as it comes).
 */
static int
find_debuginfo(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
			   const char *file, const char *link, GElf_Word crc, char **debug)
{
	mod_index  *ix = *userdata;
	hp_want		w;
	int			kind = wanted(mod, link, crc, &w);
	const char *what = kind == 1 ? "dwz file" : "debug file";
	int			fd = dwfl_standard_find_debuginfo(mod, userdata, name, base, file, link, crc, debug);

	if (fd >= 0)
	{
		if (kind >= 0)
			return admit(ix, fd, debug, &w, what, false);
		close(fd);
		free(*debug);
		*debug = NULL;
		return -1;
	}
	/* asked once: a refused file is not fetched again for the next lookup */
	if (kind < 0 || w.idlen == 0 || ix == NULL || ix->s->fetcher.debuginfo == NULL || ix->asked[kind])
		return fd;
	ix->asked[kind] = true;
	fd = ix->s->fetcher.debuginfo(ix->s->fetcher.arg, w.id, w.idlen, debug);
	return fd < 0 ? fd : admit(ix, fd, debug, &w, what, true);
}

static const Dwfl_Callbacks callbacks = {
	.find_elf = find_elf,
	.find_debuginfo = find_debuginfo,
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

static size_t
index_size(const mod_index *ix)
{
	return sizeof(*ix) + ix->syms.bytes + ix->fdes.bytes + ix->cus.bytes;
}

/* Count the index's bytes now in the symbolizer's total (an interrupted build's too). */
static void
account(hp_symbolizer *s, mod_index *ix)
{
	size_t		now = index_size(ix);

	s->index_bytes = s->index_bytes - ix->counted + now;
	ix->counted = now;
}

/* Free the index's tables, leaving it empty. */
static void
clear_index(mod_index *ix)
{
	if (ix->map)
		ix->s->store.unmap(ix->s->store.arg, ix->map, ix->maplen);
	ix->map = NULL;
	sym_elf_free(&ix->syms);
	sym_ehframe_free(&ix->fdes);
	sym_dwarf_free(&ix->cus);
	memset(&ix->syms, 0, sizeof(ix->syms));
	memset(&ix->fdes, 0, sizeof(ix->fdes));
	memset(&ix->cus, 0, sizeof(ix->cus));
}

static void
free_index(hp_symbolizer *s, mod_index *ix)
{
	if (ix == NULL)
		return;
	s->index_bytes -= ix->counted;
	clear_index(ix);
	free(ix);
}

static int
removed_module(Dwfl_Module *mod, void *userdata, const char *name,
			   Dwarf_Addr base, void *arg)
{
	/* elfutils passes the address of the userdata slot */
	void	  **slot = userdata;

	(void) mod, (void) name, (void) base;

	free_index(arg, *slot);
	*slot = NULL;
	((hp_symbolizer *) arg)->removed = true;
	return DWARF_CB_OK;
}

/* After modules went: those sharing another's indexes find their file again. */
static int
unshare(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base, void *arg)
{
	mod_index  *ix = *userdata;

	(void) mod, (void) name, (void) base, (void) arg;
	if (ix && ix->same)
	{
		ix->same = NULL;
		ix->elf = NULL;
		ix->ready = false;
	}
	return DWARF_CB_OK;
}

static int
free_module_index(Dwfl_Module *mod, void **userdata, const char *name,
				  Dwarf_Addr base, void *arg)
{
	(void) mod, (void) name, (void) base;
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
	sym_identity_free(&s->id);
	sym_names_free(&s->names);
	free(s);
}

size_t
hp_symbolizer_memory(const hp_symbolizer *s)
{
	return s->index_bytes;
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
	uint64_t	lo;				/* lowest and highest address it maps */
	uint64_t	hi;
	size_t		order;			/* its place in the maps */
	bool		exec;			/* has an executable mapping */
	bool		mixed;			/* other lines come between its lines */
	bool		keep;
} map_run;

/* Runs by path, then by place in the maps. */
static int
run_cmp(const void *x, const void *y)
{
	const map_run *a = *(const map_run *const *) x;
	const map_run *b = *(const map_run *const *) y;
	int			c = memcmp(a->path, b->path, a->pathlen < b->pathlen ? a->pathlen : b->pathlen);

	if (c == 0)
		c = (a->pathlen > b->pathlen) - (a->pathlen < b->pathlen);
	if (c == 0)
		c = (a->order > b->order) - (a->order < b->order);
	return c;
}

static int
u64_cmp(const void *x, const void *y)
{
	uint64_t	a = *(const uint64_t *) x;
	uint64_t	b = *(const uint64_t *) y;

	return (a > b) - (a < b);
}

/* Does sorted pcs[0..n) hold an address in [lo, hi)? */
static bool
any_in(const uint64_t *pcs, size_t n, uint64_t lo, uint64_t hi)
{
	size_t		l = 0;
	size_t		h = n;

	while (l < h)
	{
		size_t		mid = l + (h - l) / 2;

		if (pcs[mid] < lo)
			l = mid + 1;
		else
			h = mid;
	}
	return l < n && pcs[l] < hi;
}

/* Append a line and its newline at out + n; returns the new length. */
static size_t
put_line(char *out, size_t n, const char *line, size_t len)
{
	memcpy(out + n, line, len);
	out[n + len] = '\n';
	return n + len + 1;
}

/*
 * Keep, of each file, one run of lines: the loader maps an object's segments
 * next to each other, one of them executable.  Other mappings of the same
 * file are something else -- libelf's own read/write mmap of it, when the
 * dumping process is a backend that has symbolized before -- and would
 * stretch the module over unrelated memory.  The run with an executable
 * mapping is kept, or else the first.  Of those, only the runs where some
 * of the profile's addresses pcs[0..npcs) lie are kept: the others would
 * name nothing, and libdwfl's module reporting costs time quadratic in the
 * number of modules, so at most HP_MAX_MODULES are kept, else HP_ELIMIT is
 * raised.  Runs are grouped by sorting, so the whole is O(n log n) in the
 * text, and work is counted per line.  Returns the kept text (arena) and
 * its length in *n.
 */
static char *
filter_maps(hp_arena *a, const char *maps, size_t len,
			const uint64_t *pcs, size_t npcs, size_t *n)
{
	hp_env	   *env = a->env;
	const char *p = maps;
	const char *end;
	hp_mapping	m;
	map_run    *runs = NULL;
	map_run   **sorted;
	uint64_t   *used;
	size_t		nruns = 0;
	size_t		cap = 0;
	size_t		nkept = 0;
	char	   *out;

	*n = 0;
	if (len == 0)
		return NULL;			/* no maps (maps may then be NULL) */
	end = maps + len;
	while (hp_maps_next(&p, end, &m))
	{
		map_run    *r = nruns ? &runs[nruns - 1] : NULL;

		hp_work(env, 1 + m.linelen / 64);
		if (m.path == NULL)
			continue;
		/* an image's first segment is its only one at offset 0 */
		if (r && m.offset != 0 && r->pathlen == m.pathlen &&
			memcmp(r->path, m.path, m.pathlen) == 0)
		{
			r->mixed |= m.line != r->end + 1;
			r->end = m.line + m.linelen;
			r->exec |= m.exec;
			if (m.start < r->lo)
				r->lo = m.start;
			if (m.end > r->hi)
				r->hi = m.end;
			continue;
		}
		HP_RESERVE(a, runs, cap, nruns);
		runs[nruns] = (map_run) {m.line, m.line + m.linelen, m.path, m.pathlen,
		m.start, m.end, nruns, m.exec, false, true};
		nruns++;
	}

	/* per file: keep its first executable run, or its first run */
	sorted = hp_alloc(a, (nruns ? nruns : 1) * sizeof(*sorted));
	for (size_t i = 0; i < nruns; i++)
		sorted[i] = &runs[i];
	hp_work(env, nruns);
	qsort(sorted, nruns, sizeof(*sorted), run_cmp);
	for (size_t i = 0, j; i < nruns; i = j)
	{
		map_run    *best = sorted[i];

		for (j = i + 1; j < nruns && sorted[j]->pathlen == best->pathlen &&
			 memcmp(sorted[j]->path, best->path, best->pathlen) == 0; j++)
		{
			if (sorted[j]->exec && !best->exec)
			{
				best->keep = false;
				best = sorted[j];
			}
			else
				sorted[j]->keep = false;
		}
		hp_work(env, j - i);
	}

	/* only the files some address of the profile is in */
	used = hp_alloc(a, (npcs ? npcs : 1) * sizeof(*used));
	memcpy(used, pcs, npcs * sizeof(*used));
	hp_work(env, npcs);
	qsort(used, npcs, sizeof(*used), u64_cmp);
	for (size_t i = 0; i < nruns; i++)
	{
		map_run    *r = &runs[i];

		hp_work(env, 1);
		if (r->keep && !(r->keep = any_in(used, npcs, r->lo, r->hi)))
			continue;
		if (r->keep && ++nkept > HP_MAX_MODULES)
			hp_fail(env, HP_ELIMIT,
					"the stacks of the heap profile lie in more than %d mapped files",
					HP_MAX_MODULES);
	}

	/*
	 * Copy the file lines of the kept runs only: libdwfl ignores anonymous
	 * mappings, and without them the text stays the same while only the
	 * heap changes, so a backend's next report needs no new sync.  libdwfl
	 * stops at the first line it cannot parse, so none is left in.
	 */
	out = hp_alloc(a, len + 1);
	for (size_t i = 0; i < nruns; i++)
	{
		if (!runs[i].keep)
			continue;
		if (!runs[i].mixed)
		{
			*n = put_line(out, *n, runs[i].first, (size_t) (runs[i].end - runs[i].first));
			hp_work(env, 1 + (size_t) (runs[i].end - runs[i].first) / 64);
			continue;
		}
		p = runs[i].first;
		while (hp_maps_next(&p, runs[i].end, &m))
		{
			hp_work(env, 1 + m.linelen / 64);
			if (m.path)
				*n = put_line(out, *n, m.line, m.linelen);
		}
	}
	return out;
}

/*
 * After a failed sync: no modules and no maps, so that no frame can be
 * named from the previous dump's objects, and the next sync reports again.
 */
static hp_status
forget_maps(hp_symbolizer *s)
{
	dwfl_report_begin(s->dwfl);
	dwfl_report_end(s->dwfl, removed_module, s);
	free(s->maps);
	s->maps = NULL;
	s->maps_len = 0;
	sym_identity_maps(&s->id, NULL, 0);
	return HP_ENOMEM;
}

hp_status
hp_symbolizer_sync(hp_symbolizer *s, hp_arena *a, const char *maps, size_t len,
				   const uint64_t *pcs, size_t npcs)
{
	FILE	   *f;
	char	   *kept;
	size_t		nkept;
	int			rc = 0;

	s->gen++;
	/* in the arena: an interrupt or an error here leaks nothing */
	kept = filter_maps(a, maps, len, pcs, npcs, &nkept);
	/* the same objects at the same places: modules and indexes stay */
	if (s->maps && s->maps_len == nkept && (nkept == 0 || memcmp(s->maps, kept, nkept) == 0))
		return HP_OK;

	free(s->maps);
	s->maps_len = 0;
	if ((s->maps = malloc(nkept + 1)) == NULL)
		return forget_maps(s);
	if (nkept > 0)
		memcpy(s->maps, kept, nkept);
	s->maps_len = nkept;

	dwfl_report_begin(s->dwfl);
	if (nkept > 0)
	{
		f = fmemopen(s->maps, nkept, "r");
		if (f == NULL)
			rc = ENOMEM;
		else
		{
			rc = dwfl_linux_proc_maps_report(s->dwfl, f);
			fclose(f);
		}
	}
	/* modules not reported again are freed, with their indexes */
	s->removed = false;
	dwfl_report_end(s->dwfl, removed_module, s);
	if (s->removed)
		dwfl_getmodules(s->dwfl, unshare, NULL, 0);

	/*
	 * ENOMEM: a line could not be read, -1: a module could not be added
	 * (libdwfl's only failure there is memory).  Any other code would be a
	 * line libdwfl could not parse, which filter_maps leaves out.
	 */
	if (rc == ENOMEM || rc == -1 || sym_identity_maps(&s->id, s->maps, nkept) != HP_OK)
		return forget_maps(s);
	return HP_OK;
}

hp_status
hp_symbolizer_expect(hp_symbolizer *s, const hp_build_id *ids, size_t n,
					 uint64_t allocator_base, const uint64_t *calls, size_t ncalls)
{
	s->gen++;
	return sym_identity_expect(&s->id, ids, n, allocator_base, calls, ncalls);
}

typedef struct same_arg
{
	mod_index  *ix;
	mod_index  *found;
	size_t		seen;
} same_arg;

static int
same_cb(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base, void *arg)
{
	same_arg   *f = arg;
	const mod_index *o = *userdata;
	const struct stat *a = &f->ix->st;

	(void) mod, (void) name, (void) base;
	f->seen++;
	if (o == NULL || o == f->ix || !o->ready || o->same || o->elf == NULL || !o->keyed ||
		o->st.st_dev != a->st_dev || o->st.st_ino != a->st_ino ||
		o->st.st_size != a->st_size || o->st.st_mtim.tv_sec != a->st_mtim.tv_sec ||
		o->st.st_mtim.tv_nsec != a->st_mtim.tv_nsec)
		return DWARF_CB_OK;
	f->found = (mod_index *) o;
	return DWARF_CB_ABORT;
}

/* An indexed module of the file at path (ix's), or NULL. */
static mod_index *
same_file(hp_symbolizer *s, mod_index *ix, const char *file, hp_env *env)
{
	same_arg	f = {ix, NULL, 0};

	ix->keyed = file != NULL && stat(file, &ix->st) == 0;
	if (!ix->keyed)
		return NULL;
	dwfl_getmodules(s->dwfl, same_cb, &f, 0);
	hp_work(env, f.seen);
	return f.found;
}

/* The file's GNU build-id (libelf's memory), or 0. */
static size_t
file_build_id(Elf *elf, const uint8_t **id)
{
	const void *bits;
	ssize_t		len = dwelf_elf_gnu_build_id(elf, &bits);

	*id = bits;
	return len > 0 && len <= 64 ? (size_t) len : 0;
}

/*
 * Is the object's debug file where a debug-info package installs it
 * (/usr/lib/debug/.build-id/NN/REST.debug), and that build's?  An index
 * written before it was installed is written again, so that installing it
 * names the code.
 */
static bool
debug_file_installed(const uint8_t *id, size_t idlen)
{
	char		path[64 + 2 * 64 + 8] = "/usr/lib/debug/.build-id/";
	size_t		n = strlen(path);
	hp_want		w = {id, idlen, false, 0};
	struct stat st;
	bool		same;
	int			fd;

	if (idlen < 2)
		return false;
	for (size_t i = 0; i < idlen; i++)
	{
		n += (size_t) snprintf(path + n, sizeof(path) - n, "%02x", id[i]);
		if (i == 0)
			path[n++] = '/';
	}
	snprintf(path + n, sizeof(path) - n, ".debug");
	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0)
		return false;
	same = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && hp_verify_file(NULL, fd, &w) == NULL;
	close(fd);
	return same;
}

/*
 * May the module's DWARF be used?  Not when the dwz file it names is another
 * build: libdwfl gets only a verified one (find_debuginfo), but libdw, when
 * it got none, opens one by its path on its own, unchecked.
 */
static bool
module_dwarf(hp_symbolizer *s, mod_index *ix)
{
	Dwarf_Addr	bias;
	Dwarf	   *dw = dwfl_module_getdwarf(ix->mod, &bias);
	const char *name;
	const void *want;
	const void *have = NULL;
	ssize_t		len;
	ssize_t		altlen = -1;
	Dwarf	   *alt;

	if (dw == NULL)
		return false;
	if ((len = dwelf_dwarf_gnu_debugaltlink(dw, &name, &want)) <= 0 || (alt = dwarf_getalt(dw)) == NULL)
		return true;
	if (dwarf_getelf(alt))
		altlen = dwelf_elf_gnu_build_id(dwarf_getelf(alt), &have);
	if (altlen > 0 && hp_verify_id(have, (size_t) altlen, want, (size_t) len))
		return true;
	note_refusal(s, "dwz file", ix->object, altlen > 0 ? "build-id mismatch" : "no build-id", name);
	return false;
}

/* Map the object's index from the store; false when there is no usable one. */
static bool
map_index(hp_symbolizer *s, mod_index *ix)
{
	const uint8_t *id;
	size_t		idlen = file_build_id(ix->elf, &id);
	bool		refused = false;

	if (s->store.map == NULL || idlen == 0)
		return false;
	ix->map = s->store.map(s->store.arg, id, idlen, &ix->maplen, &refused);
	if (ix->map && hp_symindex_open(&ix->sx, ix->map, ix->maplen, id, idlen) &&
		!((ix->sx.flags & HPX_NO_DEBUG_INFO) && debug_file_installed(id, idlen)))
	{
		counts.hits++;
		return true;
	}
	if (ix->map)
	{
		s->store.unmap(s->store.arg, ix->map, ix->maplen);
		ix->map = NULL;
		refused = true;
	}
	/* a refused file is replaced by the index written next */
	if (refused)
	{
		counts.refused++;
		s->store.discard(s->store.arg, id, idlen);
	}
	counts.misses++;
	return false;
}

/*
 * Write the object's whole index -- symbols, FDEs, every CU's lines and
 * inline ranges -- from the module's own indexes, and give it to the store.
 */
static void
write_index(hp_symbolizer *s, mod_index *ix, hp_arena *a)
{
	const uint8_t *id;
	size_t		idlen = file_build_id(ix->elf, &id);
	hpx_writer	w;
	void	   *buf;
	size_t		len;

	if (s->store.publish == NULL || idlen == 0)
		return;
	hpx_writer_init(&w, a);
	if (ix->syms.defines_mallctl)
		w.flags |= HPX_DEFINES_MALLCTL;
	/* not for DWARF refused (module_dwarf): written again, it would be refused again */
	if (dwfl_module_getdwarf(ix->mod, &(Dwarf_Addr) {0}) == NULL)
		w.flags |= HPX_NO_DEBUG_INFO;
	for (size_t i = 0; i < ix->syms.nsyms; i++)
	{
		const sym_range *r = &ix->syms.syms[i];

		hp_work(a->env, 1);
		hpx_add_sym(&w, false, r->lo - ix->bias, r->hi - ix->bias, r->name, r->rank);
	}
	for (size_t i = 0; i < ix->syms.nlabels; i++)
	{
		const sym_range *r = &ix->syms.labels[i];

		hp_work(a->env, 1);
		hpx_add_sym(&w, true, r->lo - ix->bias, r->hi - ix->bias, r->name, r->rank);
	}
	for (size_t i = 0; i < ix->fdes.n; i++)
	{
		hp_work(a->env, 1);
		hpx_add_fde(&w, ix->fdes.v[i].lo, ix->fdes.v[i].hi);
	}
	if (ix->dwarf)
		sym_dwarf_export(a->env, &ix->cus, ix->mod, ix->bias, &w);
	account(s, ix);
	if ((buf = hpx_finish(&w, id, idlen, &len)) != NULL)
	{
		s->store.publish(s->store.arg, id, idlen, buf, len);
		counts.built++;
	}
}

static mod_index *
module_index(hp_symbolizer *s, Dwfl_Module *mod, hp_arena *a)
{
	hp_env	   *env = a->env;
	void	  **slot;
	Dwarf_Addr	low = 0;
	Dwarf_Addr	high = 0;
	const char *path = dwfl_module_info(mod, &slot, &low, &high, NULL, NULL, NULL, NULL);
	mod_index  *ix = *slot;
	GElf_Addr	bias = 0;
	GElf_Ehdr	eh;
	Elf		   *elf;
	const char *base;

	if (ix && ix->ready)
		return ix;
	if (ix == NULL)
	{
		ix = calloc(1, sizeof(*ix));
		if (ix == NULL)
			return NULL;
		ix->mod = mod;
		ix->path = path ? path : "?";
		base = strrchr(ix->path, '/');
		ix->object = base ? base + 1 : ix->path;
		ix->low = low;
		ix->high = high;
		ix->gen = s->gen - 1;
		ix->s = s;
		*slot = ix;				/* find_elf reads it */
	}
	else
	{
		/* a build cut short, or the module it shared went: from scratch */
		clear_index(ix);
		ix->same = NULL;
	}
	hp_work(env, 1);

	/*
	 * The maps' file indexed already, as a shared object (whose load bias
	 * is its first address less a constant of the file): not opened again.
	 * Not when a fetcher may replace the file by the build the process had.
	 */
	ix->same = s->fetcher.executable ? NULL : same_file(s, ix, ix->path, env);
	if (ix->same && (gelf_getehdr(ix->same->elf, &eh) == NULL || eh.e_type != ET_DYN))
		ix->same = NULL;
	if (ix->same)
	{
		ix->elf = ix->same->elf;
		ix->bias = ix->low + (ix->same->bias - ix->same->low);
	}
	else if ((elf = dwfl_module_getelf(mod, &bias)) != NULL)
	{
		const char *file = NULL;

		ix->bias = bias;
		ix->elf = elf;
		dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, &file, NULL);
		if ((ix->same = same_file(s, ix, file, env)) == NULL && !map_index(s, ix))
		{
			ix->dwarf = module_dwarf(s, ix);
			sym_elf_index(env, mod, &ix->syms);
			sym_ehframe_index(env, elf, &ix->fdes);
			write_index(s, ix, a);
		}
	}
	ix->ready = true;
	account(s, ix);
	return ix;
}

static bool
defines_mallctl(const mod_index *ix)
{
	return ix->map ? (ix->sx.flags & HPX_DEFINES_MALLCTL) != 0 : ix->syms.defines_mallctl;
}

/* Judge the module's file against the profile being analysed (see mod_index). */
static void
judge(hp_symbolizer *s, Dwfl_Module *mod, mod_index *ix)
{
	if (ix->gen == s->gen)
		return;
	ix->gen = s->gen;
	/* a fetched file is the recorded build: find_elf checked it */
	if (ix->fetched)
	{
		ix->mismatch = NULL;
		snprintf(ix->evidence, sizeof(ix->evidence), "fetched by its recorded build-id");
	}
	else
		ix->mismatch = sym_identity_check(&s->id, ix->same ? ix->same->mod : mod, ix->path,
										  ix->low, ix->high, ix->elf, ix->bias,
										  ix->evidence, sizeof(ix->evidence));

	/*
	 * The process said where jemalloc was; else its name says so, or the
	 * symbols of a file that is right.
	 */
	ix->allocator = (s->id.allocator_base != 0 && ix->low == s->id.allocator_base) ||
		strncmp(ix->object, "libjemalloc.so", strlen("libjemalloc.so")) == 0 ||
		(defines_mallctl(ix->same ? ix->same : ix) && ix->mismatch == NULL);
}

typedef struct verdicts_arg
{
	hp_symbolizer *s;
	void		(*each) (void *arg, const char *object, const char *evidence, const char *mismatch);
	void	   *arg;
} verdicts_arg;

static int
module_verdict(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base, void *arg)
{
	verdicts_arg *v = arg;
	mod_index  *ix = *userdata;

	(void) mod, (void) name, (void) base;
	if (ix && ix->gen == v->s->gen)
		v->each(v->arg, ix->path, ix->evidence, ix->mismatch);
	return DWARF_CB_OK;
}

void
hp_symbolizer_verdicts(hp_symbolizer *s,
					   void (*each) (void *arg, const char *object,
									 const char *evidence, const char *mismatch),
					   void *arg)
{
	verdicts_arg v = {s, each, arg};

	dwfl_getmodules(s->dwfl, module_verdict, &v, 0);
}

/*
 * pc's line when libdwfl found none: its CU through sym_dwarf_cu (which
 * does not need .debug_aranges), then the CU's own line table.
 */
static void
dwarf_line(hp_env *env, mod_index *ix, uint64_t pc, hp_arena *a, hp_symbol *out)
{
	Dwarf_Addr	bias;
	Dwarf_Die	cudie;
	Dwarf_Line *l;
	const char *file;

	if (sym_dwarf_cu(env, &ix->cus, ix->mod, pc, &bias, &cudie) == NULL ||
		(l = dwarf_getsrc_die(&cudie, pc - bias)) == NULL ||
		(file = dwarf_linesrc(l, NULL, NULL)) == NULL)
		return;
	out->file = hp_strdup(a, file);
	dwarf_lineno(l, &out->line);
}

/*
 * out's name and inline chain from lv[0..k): lv[0] is the real function,
 * lv[k - 1] the innermost inlined one.  Names and files are copied into a.
 */
static void
put_chain(hp_symbolizer *s, hp_arena *a, const sym_level *lv, int k, hp_symbol *out)
{
	size_t		n = (size_t) (k - 1);

	out->name = sym_display_name(&s->names, a, lv[0].name);
	if (k < 2)
		return;
	out->inlines = hp_alloc(a, n * sizeof(char *));
	out->call_files = hp_alloc(a, n * sizeof(char *));
	out->call_lines = hp_alloc(a, n * sizeof(int));
	for (size_t i = 0; i < n; i++)
	{
		const sym_level *l = &lv[n - i];

		out->inlines[i] = sym_display_name(&s->names, a, l->name ? l->name : "??");
		out->call_files[i] = l->call_file ? hp_strdup(a, l->call_file) : NULL;
		out->call_lines[i] = l->call_line;
	}
	out->ninlines = (uint32_t) n;
}

/* The function and its inline chain at pc from DWARF; false when DWARF does not cover pc. */
static bool
dwarf_frames(hp_symbolizer *s, mod_index *ix, uint64_t pc, hp_arena *a, hp_symbol *out)
{
	sym_level	lv[SYM_MAX_INLINE_DEPTH];
	int			k = sym_dwarf_chain(a->env, &ix->cus, ix->mod, pc, lv);

	account(s, ix);
	if (k == 0 || lv[0].name == NULL)
		return false;
	put_chain(s, a, lv, k, out);
	return true;
}

/* hp_symbolize's naming from the object's shared index; addr from ix's load bias. */
static void
indexed_symbol(hp_symbolizer *s, const hp_symindex *sx, uint64_t addr, mod_index *ix,
			   hp_arena *a, hp_symbol *out)
{
	const hpx_line *line = hp_symindex_line(sx, addr);
	const hpx_sym *sym = hp_symindex_sym(sx, addr);
	const hpx_fde *fde = hp_symindex_fde(sx, addr);
	const hpx_inline *lv[HPX_DEPTHS];
	const char *name;
	char		label[512];
	int			k;

	if (line)
	{
		const char *file = hp_symindex_str(sx, line->file);

		out->line = line->line;
		if (file)
			out->file = hp_strdup(a, file);
	}
	if (sym == NULL)
		sym = hp_symindex_label(sx, addr, fde ? fde->lo : UINT64_MAX);
	if (sym && hp_symindex_str(sx, sym->name) == NULL)
		sym = NULL;
	out->start = sym ? sym->lo + ix->bias : fde ? fde->lo + ix->bias : 0;
	if (line && (k = hp_symindex_chain(sx, addr, lv)) > 0 &&
		(name = hp_symindex_str(sx, lv[0]->name)) != NULL)
	{
		sym_level	chain[HPX_DEPTHS];

		for (int d = 0; d < k; d++)
			chain[d] = (sym_level) {hp_symindex_str(sx, lv[d]->name),
				hp_symindex_str(sx, lv[d]->call_file), lv[d]->call_line};
		put_chain(s, a, chain, k, out);
		return;
	}
	if (sym)
	{
		out->name = sym_display_name(&s->names, a, hp_symindex_str(sx, sym->name));
		return;
	}
	if (fde)
		snprintf(label, sizeof(label), "%s+0x%llx", ix->object, (unsigned long long) fde->lo);
	else
		snprintf(label, sizeof(label), "%s+0x%llx", ix->object, (unsigned long long) addr);
	out->name = hp_strdup(a, label);
}

void
hp_symbolize(hp_symbolizer *s, uint64_t pc, hp_arena *a, hp_symbol *out)
{
	Dwfl_Module *mod = dwfl_addrmodule(s->dwfl, pc);
	mod_index  *ix;
	mod_index  *fx;				/* whose indexes name the file's code */
	uint64_t	fpc;			/* pc in fx's module */
	const sym_range *sym;
	const sym_fde *fde;
	Dwfl_Line  *line;
	char		label[512];

	memset(out, 0, sizeof(*out));
	ix = mod ? module_index(s, mod, a) : NULL;
	if (ix == NULL)
	{
		/*
		 * Anonymous memory (JIT code), the vDSO, or outside every mapping:
		 * never the address, which would give the process's layout away
		 * (ASLR); the caller may name it by its place in its mapping.
		 */
		out->name = hp_strdup(a, "[unmapped]");
		return;
	}
	judge(s, mod, ix);
	out->object = hp_strdup(a, ix->object);
	out->allocator = ix->allocator;
	out->offset = pc - (ix->elf == NULL || ix->mismatch ? ix->low : ix->bias);
	if (ix->elf == NULL || ix->mismatch)
	{
		/* no trustworthy file: an offset in the object, and why */
		snprintf(label, sizeof(label), "%.*s+0x%llx%s%s%s",
				 (int) sym_identity_name_len(ix->object), ix->object,
				 (unsigned long long) out->offset, ix->mismatch ? " [" : "",
				 ix->mismatch ? ix->mismatch : "", ix->mismatch ? "]" : "");
		out->name = hp_strdup(a, label);
		return;
	}

	/* the same file at fx's place: the same offset from its load bias */
	fx = ix->same ? ix->same : ix;
	if (fx->map)
	{
		indexed_symbol(s, &fx->sx, pc - ix->bias, ix, a, out);
		return;
	}
	fpc = pc - ix->bias + fx->bias;
	line = fx->dwarf ? dwfl_module_getsrc(fx->mod, fpc) : NULL;
	if (line)
	{
		const char *file = dwfl_lineinfo(line, NULL, &out->line, NULL, NULL, NULL);

		if (file)
			out->file = hp_strdup(a, file);
	}
	else if (fx->dwarf)
		dwarf_line(a->env, fx, fpc, a, out);

	sym = sym_elf_find(&fx->syms, fpc);
	fde = sym_ehframe_find(&fx->fdes, pc - ix->bias);
	if (sym == NULL)
		sym = sym_elf_label(&fx->syms, fpc, fde ? fde->lo + fx->bias : UINT64_MAX);
	out->start = sym ? sym->lo - fx->bias + ix->bias : fde ? fde->lo + ix->bias : 0;
	if (out->file && dwarf_frames(s, fx, fpc, a, out))
		return;
	if (sym)
	{
		out->name = sym_display_name(&s->names, a, sym->name);
		return;
	}
	if (fde)
		snprintf(label, sizeof(label), "%s+0x%llx", ix->object, (unsigned long long) fde->lo);
	else
		snprintf(label, sizeof(label), "%s+0x%llx", ix->object, (unsigned long long) (pc - ix->bias));
	out->name = hp_strdup(a, label);
}

void
hp_symbolizer_fetch(hp_symbolizer *s, const hp_fetcher *f)
{
	s->fetcher = *f;
}

void
hp_symbolizer_store(hp_symbolizer *s, const hp_index_store *st)
{
	s->store = *st;
}

void
hp_symbolizer_refusals(const hp_symbolizer *s, void (*each) (void *arg, const char *refusal), void *arg)
{
	for (size_t i = 0; i < s->nrefused; i++)
		each(arg, s->refused[i]);
}

void
hp_symbolizer_counts(hp_index_counts *c)
{
	*c = counts;
}
