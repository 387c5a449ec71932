/*
 * test_flame.c -- the flame graph is well-formed XML and valid UTF-8 whatever
 * the names hold: markup characters are escaped, bytes that are not UTF-8
 * become '?', a long name is not cut inside a character.
 *
 * Its search counts from the table it embeds (var N, F, V, S): for every
 * function, the table's count of the stacks through it is heapprof_top's
 * cum, also for a recursive function and a union of functions, when most
 * frames are narrower than a pixel.  A huge profile (a node with 200000
 * children, long names) still gives an SVG of a few MB, whose table adds up
 * to the total and brackets every function's cum (a long case: make
 * check-bounded).
 */
#include "test.h"

#include <math.h>

static char long_name[1100];

static const t_name names[] = {
	{0x3100, "ma\nin\r", NULL},
	{0x2100, "operator<<(std::ostream&, \"x\")", "a<b>'c'"},
	{0x1100, "bad\xff\xfe name \xc3\x28 \xed\xa0\x80 \xf4\x90\x80\x80 \xc0\xaf end", NULL},
	{0x1200, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5 \x01\x1f ok", NULL},
	{0x1300, long_name, NULL},
};

static const char profile[] =
	"heap_v2/1\n"
	"@ 0x1100 0x2101 0x3101\n"
	"t*: 1: 100 [0: 0]\n"
	"@ 0x1200 0x2101 0x3101\n"
	"t*: 1: 200 [0: 0]\n"
	"@ 0x1300 0x3101\n"
	"t*: 1: 300 [0: 0]\n";

static bool
valid_utf8(const unsigned char *s, size_t len)
{
	for (size_t i = 0; i < len;)
	{
		size_t		n = s[i] < 0x80 ? 1 : (s[i] & 0xe0) == 0xc0 ? 2 : (s[i] & 0xf0) == 0xe0 ? 3 :
			(s[i] & 0xf8) == 0xf0 ? 4 : 0;
		uint32_t	c = n == 1 ? s[i] : n == 2 ? s[i] & 0x1f : n == 3 ? s[i] & 0x0f : s[i] & 0x07;

		if (n == 0 || i + n > len)
			return false;
		for (size_t k = 1; k < n; k++)
		{
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			c = (c << 6) | (s[i + k] & 0x3f);
		}
		if ((n == 2 && c < 0x80) || (n == 3 && c < 0x800) || (n == 4 && c < 0x10000) ||
			c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff) || (c < 0x20 && c != '\n' && c != '\t' && c != '\r'))
			return false;
		i += n;
	}
	return true;
}

static bool
entity(const char **p)
{
	static const char *const known[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strncmp(*p, known[i], strlen(known[i])) == 0)
		{
			*p += strlen(known[i]);
			return true;
		}
	return false;
}

static size_t
xml_name(const char *p)
{
	size_t		n = 0;

	while (p[n] && (strchr("_:-.", p[n]) || (p[n] >= 'a' && p[n] <= 'z') ||
					(p[n] >= 'A' && p[n] <= 'Z') || (p[n] >= '0' && p[n] <= '9')))
		n++;
	return n;
}

/* A small well-formedness check: nesting, quoted attributes, entities, no stray '<'. */
static const char *
well_formed(const char *p)
{
	const char *stack[64];
	size_t		lens[64];
	int			depth = 0;

	while (*p)
	{
		if (*p == '&')
		{
			if (!entity(&p))
				return "bad entity in text";
			continue;
		}
		if (*p != '<')
		{
			if (*p == '>' && depth == 0)
				return "'>' outside the root";
			p++;
			continue;
		}
		if (strncmp(p, "<?", 2) == 0 || strncmp(p, "<![CDATA[", 9) == 0)
		{
			const char *close = strstr(p, p[1] == '?' ? "?>" : "]]>");

			if (close == NULL)
				return "unterminated prolog or CDATA";
			p = close + (p[1] == '?' ? 2 : 3);
			continue;
		}
		if (p[1] == '/')
		{
			size_t		n = xml_name(p + 2);

			if (depth == 0 || n != lens[depth - 1] || strncmp(p + 2, stack[depth - 1], n) != 0 || p[2 + n] != '>')
				return "mismatched end tag";
			depth--;
			p += n + 3;
			continue;
		}
		{
			size_t		n = xml_name(p + 1);

			if (n == 0 || depth == 64)
				return "bad tag";
			stack[depth] = p + 1;
			lens[depth] = n;
			p += n + 1;
			for (;;)
			{
				char		q;

				while (*p == ' ' || *p == '\n')
					p++;
				if (p[0] == '/' && p[1] == '>')
				{
					p += 2;
					break;
				}
				if (*p == '>')
				{
					depth++;
					p++;
					break;
				}
				n = xml_name(p);
				if (n == 0 || p[n] != '=' || (p[n + 1] != '"' && p[n + 1] != '\''))
					return "bad attribute";
				q = p[n + 1];
				p += n + 2;
				while (*p && *p != q)
				{
					if (*p == '<')
						return "'<' in an attribute";
					if (*p == '&' && !entity(&p))
						return "bad entity in an attribute";
					else if (*p != '&')
						p++;
				}
				if (*p != q)
					return "unterminated attribute";
				p++;
			}
		}
	}
	return depth == 0 ? NULL : "unclosed element";
}

/* The search table of an SVG, parsed. */
typedef struct table
{
	char	  **names;
	double	   *cum;
	size_t		nnames;
	long	   *f;
	double	   *v;
	long	   *s;
	size_t		n;
} table;

/* The numbers of "var X = [...]" into a malloc'ed array; their count. */
static size_t
numbers(const char *svg, const char *var, double **out)
{
	const char *p = strstr(svg, var);
	size_t		n = 0, cap = 1024;

	*out = malloc(cap * sizeof(double));
	if (p == NULL)
		return 0;
	p += strlen(var);
	while (*p != ']')
	{
		char	   *end;

		if (n == cap)
			*out = realloc(*out, (cap *= 2) * sizeof(double));
		(*out)[n++] = strtod(p, &end);
		p = *end == ',' ? end + 1 : end;
		if (end == p && *p != ']')
			break;
	}
	return n;
}

static bool
parse_table(const char *svg, table *t)
{
	const char *p = strstr(svg, "var N = [");
	double	   *d;
	size_t		cap = 1024;

	memset(t, 0, sizeof(*t));
	t->names = malloc(cap * sizeof(char *));
	if (p == NULL)
		return false;
	for (p += 9; *p == '"';)
	{
		char	   *name = malloc(strlen(p));
		size_t		k = 0;

		for (p++; *p != '"'; p++)
		{
			if (*p == '\\' && p[1] == 'u')
			{
				name[k++] = (char) strtol((char[]) {p[2], p[3], p[4], p[5], 0}, NULL, 16);
				p += 5;
			}
			else
				name[k++] = *p == '\\' ? *++p : *p;
		}
		name[k] = '\0';
		if (t->nnames == cap)
			t->names = realloc(t->names, (cap *= 2) * sizeof(char *));
		t->names[t->nnames++] = name;
		p += p[1] == ',' ? 2 : 1;
	}
	if (numbers(svg, "var C = [", &t->cum) != t->nnames)
		return false;
	t->n = numbers(svg, "var F = [", &d);
	t->f = malloc((t->n + 1) * sizeof(long));
	for (size_t i = 0; i < t->n; i++)
		t->f[i] = (long) d[i];
	free(d);
	if (numbers(svg, "var V = [", &t->v) != t->n || numbers(svg, "var S = [", &d) != t->n)
		return false;
	t->s = malloc((t->n + 1) * sizeof(long));
	for (size_t i = 0; i < t->n; i++)
		t->s[i] = (long) d[i];
	free(d);
	return true;
}

static void
free_table(table *t)
{
	for (size_t i = 0; i < t->nnames; i++)
		free(t->names[i]);
	free(t->names);
	free(t->cum);
	free(t->f);
	free(t->v);
	free(t->s);
}

/*
 * What the flame graph's find() counts for the names matching one of want
 * (NULL-terminated): one name's cum, or the widths of matching entries
 * without a matching ancestor (always with walk); in *out what the table
 * leaves out and a match may hold.
 */
static double
search(const table *t, const char *const *want, double *out, bool walk)
{
	double		hit = 0;
	size_t		matched = 0, one = 0;

	*out = 0;
	for (size_t k = 0; k < t->nnames; k++)
		for (const char *const *w = want; *w; w++)
			if (strcmp(t->names[k], *w) == 0)
				matched++, one = k;
	if (matched == 1 && !walk)
		return t->cum[one];
	for (size_t i = 0; i < t->n;)
	{
		bool		on = false;

		for (const char *const *w = want; *w && t->f[i] >= 0; w++)
			on |= strcmp(t->names[t->f[i]], *w) == 0;
		if (on)
		{
			hit += t->v[i];
			i += t->s[i] > 0 ? (size_t) t->s[i] : 1;
		}
		else
		{
			if (t->f[i] < 0)
				*out += t->v[i];
			i++;
		}
	}
	return hit;
}

static double
func_cum(const hp_graph *g, const char *name)
{
	for (size_t k = 0; k < g->nfuncs; k++)
		if (strcmp(g->funcs[k].name, name) == 0)
			return g->funcs[k].cum;
	return -1;
}

/* The sum of the table's top-level entries: the whole width. */
static double
table_total(const table *t)
{
	double		sum = 0;

	for (size_t i = 0; i < t->n; i += t->s[i] > 0 ? (size_t) t->s[i] : 1)
		sum += t->v[i];
	return sum;
}

static size_t
count(const char *s, const char *what)
{
	size_t		n = 0;

	while ((s = strstr(s, what)) != NULL)
		n++, s++;
	return n;
}

static bool
near(double a, double b)
{
	return fabs(a - b) <= 1e-3 + 1e-9 * fabs(b);
}

/* Stacks from a few wide paths and thousands of narrow ones, some recursive. */
static void
narrow_frames(hp_arena *a)
{
	enum
	{
		N = 3000
	};
	hp_named_stack *st = hp_alloc(a, (N + 3) * sizeof(hp_named_stack));
	hp_options	o = HP_OPTIONS_DEFAULT;
	hp_graph	g;
	hp_buf		out;
	table		t;
	size_t		bad = 0;
	double		lost;
	static const char *const big[] = {"leaf_big", "mid_0", "main"};
	static const char *const rec[] = {"leaf_rec", "rec", "rec", "mid_1", "main"};
	static const char *const self[] = {"main"};
	static const char *const any[] = {"mid_0", "rec", "leaf_7", NULL};

	for (size_t i = 0; i < N; i++)
	{
		const char **fr = hp_alloc(a, 4 * sizeof(char *));
		char	   *leaf = hp_alloc(a, 32);
		char	   *mid = hp_alloc(a, 32);

		snprintf(leaf, 32, "leaf_%zu", i % 1000);
		snprintf(mid, 32, i % 3 ? "mid_%zu" : "rec", i % 7);
		fr[0] = leaf;
		fr[1] = mid;
		fr[2] = i % 2 ? "rec" : mid;
		fr[3] = "main";
		st[i] = (hp_named_stack) {fr, 4, false, 10 + i % 13, 1};
	}
	st[N] = (hp_named_stack) {big, 3, false, 2000000, 1};
	st[N + 1] = (hp_named_stack) {rec, 5, false, 300000, 1};
	st[N + 2] = (hp_named_stack) {self, 1, false, 5000, 1};
	hp_graph_from_stacks(a, st, N + 3, &o, &g);
	hp_buf_init(&out, a);
	hp_render_flamegraph(a, &g, &o, "narrow", false, &out);
	T_CHECK("flame merges frames under a pixel", count(out.data, "narrower frames") > 0 &&
			count(out.data, "<g class=") < 100, "%zu frames drawn", count(out.data, "<g class="));
	if (!parse_table(out.data, &t))
	{
		t_fail("flame search table parses", "no table");
		free_table(&t);
		return;
	}
	for (size_t k = 0; k < g.nfuncs; k++)
	{
		const char *want[] = {g.funcs[k].name, NULL};

		double		walked = search(&t, want, &lost, true);

		if (!near(walked, g.funcs[k].cum) || lost != 0 || !near(search(&t, want, &lost, false), walked))
		{
			if (bad++ == 0)
				printf("# %s: table %.3f, cum %.3f\n", g.funcs[k].name, walked, g.funcs[k].cum);
		}
	}
	T_CHECK("flame search counts every function's cum from the table", bad == 0 && g.nfuncs > 1000,
			"%zu of %zu functions differ", bad, g.nfuncs);
	{
		double		want = 0;

		/* a union counts each stack once, as the stacks through any of them */
		for (size_t i = 0; i < g.npaths; i++)
		{
			bool		on = false;

			for (uint32_t j = 0; j < g.paths[i].nframes; j++)
				for (const char *const *w = any; *w; w++)
					on |= strcmp(g.funcs[g.paths[i].frames[j]].name, *w) == 0;
			want += on ? g.paths[i].value : 0;
		}
		T_CHECK("flame search of a union counts each stack once", near(search(&t, any, &lost, false), want),
				"table %.3f, stacks %.3f", search(&t, any, &lost, false), want);
	}
	T_CHECK("flame search table adds up to the total", near(table_total(&t), g.local_total),
			"table %.3f, total %.3f", table_total(&t), g.local_total);
	free_table(&t);
}

/* A node with 200000 children of long names, under 40 frames. */
static void
huge(hp_arena *a)
{
	enum
	{
		N = 200000, DEPTH = 40
	};
	hp_named_stack *st = hp_alloc(a, N * sizeof(hp_named_stack));
	const char *spine[DEPTH];
	hp_options	o = HP_OPTIONS_DEFAULT;
	hp_graph	g;
	hp_buf		out;
	table		t;
	size_t		bad = 0;

	for (size_t k = 0; k < DEPTH; k++)
	{
		char	   *s = hp_alloc(a, 32);

		snprintf(s, 32, "spine_%zu", k);
		spine[k] = s;
	}
	for (size_t i = 0; i < N; i++)
	{
		const char **fr = hp_alloc(a, (DEPTH + 1) * sizeof(char *));
		char	   *leaf = hp_alloc(a, 160);

		snprintf(leaf, 160, "std::vector<std::pair<std::string, int>>::emplace_back_%zu"
				 "<std::piecewise_construct_t const&, std::tuple<>>", i);
		fr[0] = leaf;
		/* a few branches: the spine forks near the leaves */
		memcpy(fr + 1, spine, DEPTH * sizeof(char *));
		fr[1] = spine[i % 5];
		st[i] = (hp_named_stack) {fr, DEPTH + 1, false, 64 + i % 1000, 1};
	}
	hp_graph_from_stacks(a, st, N, &o, &g);
	hp_buf_init(&out, a);
	hp_render_flamegraph(a, &g, &o, "huge", false, &out);
	printf("# huge: %zu bytes, %zu frames drawn\n", out.len, count(out.data, "<g class="));
	T_CHECK("flame of a huge profile is a few MB", out.len < 8 * 1024 * 1024, "%zu bytes", out.len);
	T_CHECK("flame of a huge profile is well-formed XML", well_formed(out.data) == NULL, "%s",
			well_formed(out.data));
	if (!parse_table(out.data, &t))
	{
		t_fail("flame huge search table parses", "no table");
		free_table(&t);
		return;
	}
	T_CHECK("flame huge search table adds up to the total", near(table_total(&t), g.local_total),
			"table %.3f, total %.3f", table_total(&t), g.local_total);
	for (size_t k = 0; k < g.nfuncs; k += 997)
	{
		const char *want[] = {g.funcs[k].name, NULL};
		double		lost;
		double		hit = search(&t, want, &lost, true);

		bad += hit > g.funcs[k].cum + 1e-3 || hit + lost < g.funcs[k].cum - 1e-3;
	}
	T_CHECK("flame huge search brackets every cum", bad == 0, "%zu functions outside", bad);
	bad = 0;
	for (size_t k = 0; k < t.nnames; k += 97)
	{
		const char *want[] = {t.names[k], NULL};
		double		lost;

		bad += !near(search(&t, want, &lost, false), func_cum(&g, t.names[k]));
	}
	T_CHECK("flame huge search of one function is its cum", bad == 0 && t.nnames > 100,
			"%zu of %zu names differ", bad, t.nnames);
	free_table(&t);
}

int
main(void)
{
	t_env		env;
	hp_arena	a;
	hp_profile	p;
	hp_located	pl;
	hp_graph	g;
	hp_buf		out;
	hp_options	o = HP_OPTIONS_DEFAULT;
	char		err[256];
	const char *why;

	/* 999 ASCII bytes, then a 3-byte character across the 1000-byte cut */
	memset(long_name, 'x', 999);
	memcpy(long_name + 999, "\xe2\x82\xac tail", 9);
	t_env_init(&env);
	hp_arena_init(&a, &env.env);
	t_parse(&a, profile, &p, err, sizeof(err));
	t_locate(&a, &p, names, sizeof(names) / sizeof(names[0]), &pl);
	hp_build_graph(&a, &p, &pl, NULL, NULL, &o, &g);
	hp_buf_init(&out, &a);
	o.program = "title <&> \"\xff\"";
	hp_render_flamegraph(&a, &g, &o, o.program, false, &out);

	T_CHECK("flame output is valid UTF-8", valid_utf8((const unsigned char *) out.data, out.len),
			"invalid UTF-8");
	why = well_formed(out.data);
	T_CHECK("flame output is well-formed XML", why == NULL, "%s", why);
	T_CHECK("flame escapes names", strstr(out.data, "operator&lt;&lt;(std::ostream&amp;, &quot;x&quot;)") &&
			strstr(out.data, "a&lt;b&gt;&apos;c&apos; (inline)"), "escaping");
	T_CHECK("flame replaces invalid bytes", strstr(out.data, "bad?? name ?( ??? ???? ?? end") != NULL,
			"no replacement");
	T_CHECK("flame keeps valid characters", strstr(out.data, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5  ok") != NULL,
			"multibyte lost");
	T_CHECK("flame cuts long names between characters", strstr(out.data, "xxx\xe2") == NULL &&
			strstr(out.data, "xxxxx (300 bytes") != NULL, "cut inside a character");
	T_CHECK("flame escapes the title", strstr(out.data, "title &lt;&amp;&gt; &quot;?&quot;") != NULL, "title");

	/* one line per stack in collapsed output, whatever the names hold */
	{
		size_t		lines = 0;

		hp_buf_init(&out, &a);
		hp_render_collapsed(&a, &g, &out);
		for (size_t i = 0; i < out.len; i++)
			lines += out.data[i] == '\n';
		T_CHECK("collapsed keeps one line per stack", lines == 3 && strstr(out.data, "ma\\x0Ain\\x0D;") != NULL,
				"%zu lines: %s", lines, out.data);
	}
	narrow_frames(&a);
	if (t_long())
		huge(&a);
	hp_arena_free(&a);
	return t_exit();
}
