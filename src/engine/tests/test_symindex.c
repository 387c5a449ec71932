/*
 * test_symindex.c -- the shared symbol index: written, read back, refused
 * when corrupt, and naming a real process's code exactly as the object's
 * own files do.
 */
#include "test.h"

#include "engine/symindex.h"
#include "engine/symbolize.h"

#include <stdint.h>

static const uint8_t id[20] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20};

/* A small index of every kind of record, in an exact-size block. */
static char *
small_index(hp_arena *a, size_t *len)
{
	hpx_writer	w;
	void	   *buf;

	hpx_writer_init(&w, a);
	w.flags = HPX_DEFINES_MALLCTL;
	hpx_add_sym(&w, false, 0x1000, 0x1100, "alpha", 0);
	hpx_add_sym(&w, false, 0x1100, 0x1180, "beta", 0);
	hpx_add_sym(&w, true, 0x2000, 0x3000, "asm_entry", 0);
	hpx_add_fde(&w, 0x1000, 0x1100);
	hpx_add_fde(&w, 0x2400, 0x2500);
	/* rows out of order; an end of sequence at 0x1180 */
	hpx_add_line(&w, 0x1100, false, "b.c", 7, 3);
	hpx_add_line(&w, 0x1000, false, "a.c", 1, 1);
	hpx_add_line(&w, 0x1040, false, "a.c", 2, 2);
	hpx_add_line(&w, 0x1180, true, NULL, 0, 4);
	hpx_add_inline(&w, 0, 0x1000, 0x1100, 10, "alpha", NULL, 0);
	hpx_add_inline(&w, 1, 0x1040, 0x1060, 11, "inner", "a.c", 5);
	hpx_add_inline(&w, 0, 0x1100, 0x1180, 12, "beta", NULL, 0);
	buf = hpx_finish(&w, id, sizeof(id), len);
	return buf ? t_exact(buf, *len) : NULL;
}

static void
test_roundtrip(void)
{
	t_env		t;
	hp_arena	a;
	size_t		len;
	char	   *buf;
	hp_symindex ix;
	const hpx_inline *lv[HPX_DEPTHS];
	const hpx_line *l;
	int			k;

	t_env_init(&t);
	hp_arena_init(&a, &t.env);
	buf = small_index(&a, &len);
	T_CHECK("symindex_written", buf != NULL && len > sizeof(hpx_header), "no index");
	T_CHECK("symindex_opens", hp_symindex_open(&ix, buf, len, id, sizeof(id)), "refused a good index");
	T_CHECK("symindex_flags", ix.flags == HPX_DEFINES_MALLCTL, "flags %u", ix.flags);
	T_CHECK("symindex_sym", hp_symindex_sym(&ix, 0x1050) &&
			strcmp(hp_symindex_str(&ix, hp_symindex_sym(&ix, 0x1050)->name), "alpha") == 0 &&
			hp_symindex_sym(&ix, 0x1180) == NULL, "symbol lookup");
	T_CHECK("symindex_label", hp_symindex_label(&ix, 0x2100, UINT64_MAX) != NULL &&
			hp_symindex_label(&ix, 0x2450, 0x2400) == NULL, "label rule");
	T_CHECK("symindex_fde", hp_symindex_fde(&ix, 0x24ff) && hp_symindex_fde(&ix, 0x2500) == NULL,
			"fde lookup");
	l = hp_symindex_line(&ix, 0x1045);
	T_CHECK("symindex_line", l && l->line == 2 && strcmp(hp_symindex_str(&ix, l->file), "a.c") == 0,
			"line of 0x1045");
	T_CHECK("symindex_line_end", hp_symindex_line(&ix, 0x1190) == NULL &&
			hp_symindex_line(&ix, 0x0fff) == NULL, "no line past a sequence's end or before the first");
	k = hp_symindex_chain(&ix, 0x1050, lv);
	T_CHECK("symindex_chain", k == 2 && strcmp(hp_symindex_str(&ix, lv[1]->name), "inner") == 0 &&
			lv[1]->call_line == 5 && strcmp(hp_symindex_str(&ix, lv[0]->name), "alpha") == 0,
			"chain at 0x1050: %d levels", k);
	k = hp_symindex_chain(&ix, 0x1120, lv);
	T_CHECK("symindex_chain_flat", k == 1 && strcmp(hp_symindex_str(&ix, lv[0]->name), "beta") == 0,
			"chain at 0x1120: %d levels", k);
	hp_arena_free(&a);
}

/* Each corruption of a good index is refused. */
static void
test_refused(void)
{
	t_env		t;
	hp_arena	a;
	size_t		len;
	char	   *good;
	char	   *bad;
	hp_symindex ix;
	hpx_header *h;
	uint8_t		other[20];
	int			refused = 0;
	int			cases = 0;

	t_env_init(&t);
	hp_arena_init(&a, &t.env);
	good = small_index(&a, &len);
	bad = malloc(len);
	memcpy(other, id, sizeof(id));
	other[19] ^= 1;

#define CORRUPT(stmt) \
	do { memcpy(bad, good, len); h = (hpx_header *) bad; stmt; cases++; \
		 if (!hp_symindex_open(&ix, bad, len, id, sizeof(id))) refused++; \
		 else printf("# accepted: %s\n", #stmt); } while (0)

	CORRUPT(h->magic[0] = 'X');
	CORRUPT(h->version++);
	CORRUPT(h->size--);
	CORRUPT(h->idlen = 19);
	CORRUPT(h->id[0] ^= 0xff);
	CORRUPT(h->t[HPX_LINES].n = UINT64_MAX / 2);
	CORRUPT(h->t[HPX_SYMS].off = len);
	CORRUPT(h->t[HPX_SYMS].n = 1; h->t[HPX_SYMS].off = len - 8);
	CORRUPT(h->t[HPX_FDES].off += 4);
	CORRUPT(h->t[HPX_INLINES].off = 8);
	CORRUPT(bad[h->t[HPX_STRINGS].off + h->t[HPX_STRINGS].n - 1] = 'x');
	CORRUPT(h->t[HPX_STRINGS].n = 0);
	CORRUPT(h->depth[1] = h->depth[2] + 1);
	CORRUPT(h->depth[HPX_DEPTHS] = 0);
	CORRUPT(h->depth[0] = 1);
	T_CHECK("symindex_corrupt_refused", refused == cases, "%d of %d corruptions refused", refused, cases);

	T_CHECK("symindex_wrong_build_id", !hp_symindex_open(&ix, good, len, other, sizeof(other)) &&
			!hp_symindex_open(&ix, good, len, id, 10), "another object's index accepted");
	T_CHECK("symindex_truncated", !hp_symindex_open(&ix, good, len - 8, id, sizeof(id)) &&
			!hp_symindex_open(&ix, good, sizeof(hpx_header) - 1, id, sizeof(id)) &&
			!hp_symindex_open(&ix, good, 0, id, sizeof(id)) &&
			!hp_symindex_open(&ix, NULL, len, id, sizeof(id)), "a truncated index accepted");
	T_CHECK("symindex_misaligned", !hp_symindex_open(&ix, good + 1, len - 1, id, sizeof(id)),
			"a misaligned mapping accepted");
	free(bad);
	hp_arena_free(&a);
}

/*
 * Random corruption of a good index: whatever opens, every lookup stays in
 * its bytes (ASan checks) and every string it names ends inside them.
 */
static void
test_mutations(void)
{
	t_env		t;
	hp_arena	a;
	size_t		len;
	char	   *good;
	unsigned	seed = 12345;
	long		opened = 0;

	t_env_init(&t);
	hp_arena_init(&a, &t.env);
	good = small_index(&a, &len);
	for (int round = 0; round < 20000; round++)
	{
		size_t		n = len - (round % 7 == 0 ? (size_t) (rand_r(&seed) % 64) : 0);
		char	   *bad = malloc(n ? n : 1);
		hp_symindex ix;

		memcpy(bad, good, n);
		for (int f = 0; f < 1 + round % 4; f++)
		{
			size_t		at = (size_t) rand_r(&seed) % n;

			bad[at] = (char) (rand_r(&seed) % 2 ? bad[at] ^ (1 << (rand_r(&seed) % 8)) : rand_r(&seed));
		}
		if (hp_symindex_open(&ix, bad, n, id, sizeof(id)))
		{
			opened++;
			for (uint64_t addr = 0xf00; addr < 0x3100; addr += 0x30)
			{
				const hpx_inline *lv[HPX_DEPTHS];
				const hpx_sym *s = hp_symindex_sym(&ix, addr);
				const hpx_line *l = hp_symindex_line(&ix, addr);
				int			k = hp_symindex_chain(&ix, addr, lv);
				const char *str;

				if (s && (str = hp_symindex_str(&ix, s->name)))
					(void) strlen(str);
				if ((s = hp_symindex_label(&ix, addr, UINT64_MAX)) && (str = hp_symindex_str(&ix, s->name)))
					(void) strlen(str);
				if (l && (str = hp_symindex_str(&ix, l->file)))
					(void) strlen(str);
				for (int i = 0; i < k; i++)
					if ((str = hp_symindex_str(&ix, lv[i]->call_file)))
						(void) strlen(str);
				(void) hp_symindex_fde(&ix, addr);
			}
		}
		free(bad);
	}
	T_CHECK("symindex_mutations", opened > 0, "no mutation opened (the lookups were never run)");
	hp_arena_free(&a);
}

/* ---- a real process: names from the index equal the files' own ---- */

typedef struct mem_store
{
	uint8_t		id[8][64];
	size_t		idlen[8];
	char	   *bytes[8];
	size_t		len[8];
	int			n;
	int			maps;
	int			published;
} mem_store;

static const void *
mem_map(void *arg, const uint8_t *bid, size_t idlen, size_t *len, bool *refused)
{
	mem_store  *m = arg;

	for (int i = 0; i < m->n; i++)
		if (m->idlen[i] == idlen && memcmp(m->id[i], bid, idlen) == 0)
		{
			/* an exact-size copy: a read past it is an ASan error */
			char	   *p = malloc(m->len[i]);

			memcpy(p, m->bytes[i], m->len[i]);
			*len = m->len[i];
			m->maps++;
			return p;
		}
	return NULL;
}

static void
mem_unmap(void *arg, const void *p, size_t len)
{
	free((void *) p);
}

static void
mem_discard(void *arg, const uint8_t *bid, size_t idlen)
{
}

static void
mem_publish(void *arg, const uint8_t *bid, size_t idlen, const void *buf, size_t len)
{
	mem_store  *m = arg;

	if (m->n == 8)
		return;
	memcpy(m->id[m->n], bid, idlen);
	m->idlen[m->n] = idlen;
	m->bytes[m->n] = malloc(len);
	memcpy(m->bytes[m->n], buf, len);
	m->len[m->n++] = len;
	m->published++;
}

typedef struct run_arg
{
	hp_symbolizer *s;
	hp_arena   *a;
	const char *maps;
	size_t		mapslen;
	const uint64_t *pcs;
	size_t		npcs;
	hp_symbol  *out;
} run_arg;

static void
run_symbolize(void *p)
{
	run_arg    *r = p;

	hp_symbolizer_sync(r->s, r->a, r->maps, r->mapslen, r->pcs, r->npcs);
	for (size_t i = 0; i < r->npcs; i++)
		hp_symbolize(r->s, r->pcs[i], r->a, &r->out[i]);
}

static bool
same_str(const char *x, const char *y)
{
	return x == y || (x && y && strcmp(x, y) == 0);
}

/* Index of the first field where two symbols differ, or NULL. */
static const char *
differs(const hp_symbol *x, const hp_symbol *y)
{
	if (!same_str(x->name, y->name))
		return "name";
	if (!same_str(x->file, y->file) || x->line != y->line)
		return "file:line";
	if (!same_str(x->object, y->object) || x->offset != y->offset || x->start != y->start ||
		x->allocator != y->allocator)
		return "object, offset or start";
	if (x->ninlines != y->ninlines)
		return "inline depth";
	for (uint32_t k = 0; k < x->ninlines; k++)
		if (!same_str(x->inlines[k], y->inlines[k]) || !same_str(x->call_files[k], y->call_files[k]) ||
			x->call_lines[k] != y->call_lines[k])
			return "inline chain";
	return NULL;
}

/* Every 61st byte of this program's and libc's code: addresses all over both. */
static size_t
code_addresses(const char *maps, uint64_t *pcs, size_t max)
{
	const char *p = maps;
	size_t		n = 0;

	while (*p && n < max)
	{
		unsigned long long lo;
		unsigned long long hi;
		char		perms[8];
		char		path[512] = "";

		if (sscanf(p, "%llx-%llx %7s %*s %*s %*s %511s", &lo, &hi, perms, path) >= 3 &&
			perms[2] == 'x' && (strstr(path, "test_symindex") || strstr(path, "libc.so")))
			for (uint64_t pc = lo + 16; pc < hi && n < max; pc += 61 * 17)
				pcs[n++] = pc;
		p = strchr(p, '\n');
		if (p == NULL)
			break;
		p++;
	}
	return n;
}

static void
test_real_process(void)
{
	t_env		t;
	hp_arena	a;
	char	   *maps = malloc(1 << 20);
	size_t		mapslen;
	FILE	   *f = fopen("/proc/self/maps", "r");
	uint64_t	pcs[2000];
	size_t		npcs;
	hp_symbol  *plain;
	hp_symbol  *built;
	hp_symbol  *shared;
	mem_store	m = {0};
	hp_index_store st = {mem_map, mem_unmap, mem_discard, mem_publish, &m};
	hp_index_counts before;
	hp_index_counts after;
	hp_symbolizer *s0 = hp_symbolizer_new();
	hp_symbolizer *s1 = hp_symbolizer_new();
	hp_symbolizer *s2 = hp_symbolizer_new();
	run_arg		r;
	const char *why = NULL;
	size_t		bad = 0;
	size_t		named = 0;
	long		interrupts_to_build;

	mapslen = fread(maps, 1, (1 << 20) - 1, f);
	fclose(f);
	maps[mapslen] = '\0';
	npcs = code_addresses(maps, pcs, 2000);
	t_env_init(&t);
	hp_arena_init(&a, &t.env);
	plain = hp_alloc(&a, npcs * sizeof(hp_symbol));
	built = hp_alloc(&a, npcs * sizeof(hp_symbol));
	shared = hp_alloc(&a, npcs * sizeof(hp_symbol));
	hp_symbolizer_store(s1, &st);
	hp_symbolizer_store(s2, &st);

	r = (run_arg) {s0, &a, maps, mapslen, pcs, npcs, plain};
	T_CHECK("symindex_plain_run", t_run(&t, run_symbolize, &r) == 0, "%s", t.message);
	hp_symbolizer_counts(&before);
	r.s = s1;
	r.out = built;
	t.interrupts = 0;
	T_CHECK("symindex_build_run", t_run(&t, run_symbolize, &r) == 0, "%s", t.message);
	interrupts_to_build = t.interrupts;
	T_CHECK("symindex_published", m.published >= 2, "%d indexes published", m.published);
	r.s = s2;
	r.out = shared;
	T_CHECK("symindex_shared_run", t_run(&t, run_symbolize, &r) == 0, "%s", t.message);
	hp_symbolizer_counts(&after);
	T_CHECK("symindex_hits", after.hits - before.hits >= 2 && m.maps >= 2 &&
			after.misses - before.misses == (uint64_t) m.published,
			"hits %llu, misses %llu, maps %d",
			(unsigned long long) (after.hits - before.hits),
			(unsigned long long) (after.misses - before.misses), m.maps);
	T_CHECK("symindex_small_private", hp_symbolizer_memory(s2) * 10 < hp_symbolizer_memory(s0),
			"private indexes %zu bytes with shared ones, %zu without",
			hp_symbolizer_memory(s2), hp_symbolizer_memory(s0));
	for (size_t i = 0; i < npcs; i++)
	{
		const char *w = differs(&plain[i], &built[i]);

		if (w == NULL)
			w = differs(&plain[i], &shared[i]);
		if (w)
		{
			if (bad++ < 5)
				printf("# %#llx: %s: %s | %s\n", (unsigned long long) pcs[i], w,
					   plain[i].name, shared[i].name);
			why = w;
		}
		named += plain[i].file != NULL && plain[i].ninlines > 0;
	}
	T_CHECK("symindex_same_names", bad == 0 && npcs > 500,
			"%zu of %zu addresses differ (last: %s)", bad, npcs, why);
	T_CHECK("symindex_lines_and_inlines", named > 10, "only %zu addresses with lines and inlines", named);

	/* a build cut short by an interrupt leaks nothing and is done again */
	{
		mem_store	m3 = {0};
		hp_index_store st3 = {mem_map, mem_unmap, mem_discard, mem_publish, &m3};
		hp_symbolizer *s3 = hp_symbolizer_new();
		int			rc;

		hp_symbolizer_store(s3, &st3);
		r.s = s3;
		r.out = shared;
		/* the first index is written once every object's lookups began: jump in its middle */
		t.interrupts = 0;
		t.jump_at_interrupt = interrupts_to_build / 2;
		rc = t_run(&t, run_symbolize, &r);
		t.jump_at_interrupt = 0;
		T_CHECK("symindex_interrupted", rc == 2 && m3.published < 2, "rc %d, %d published", rc, m3.published);
		rc = t_run(&t, run_symbolize, &r);
		bad = 0;
		for (size_t i = 0; i < npcs; i++)
			bad += differs(&plain[i], &shared[i]) != NULL;
		T_CHECK("symindex_after_interrupt", rc == 0 && m3.published >= 2 && bad == 0,
				"rc %d, %d published, %zu differ", rc, m3.published, bad);
		hp_symbolizer_free(s3);
		for (int i = 0; i < m3.n; i++)
			free(m3.bytes[i]);
	}

	hp_symbolizer_free(s0);
	hp_symbolizer_free(s1);
	hp_symbolizer_free(s2);
	for (int i = 0; i < m.n; i++)
		free(m.bytes[i]);
	hp_arena_free(&a);
	free(maps);
}

int
main(void)
{
	test_roundtrip();
	test_refused();
	test_mutations();
	test_real_process();
	return t_exit();
}
