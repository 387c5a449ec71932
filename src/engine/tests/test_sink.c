/*
 * test_sink.c -- the output sinks (sink.h) and every renderer that uses
 * them, against every byte 0x00-0xFF and a set of hostile names: markup,
 * quotes, entities, the ends of a CDATA section and of a script, terminal
 * escape sequences (OSC 52, a window title, CSI 2K, CR, C1 as UTF-8),
 * bytes that are not UTF-8, Graphviz escapes, a 70 kB name.  Each output
 * is checked by its sink's rule: a terminal's text holds no control, XML no
 * raw markup nor an unknown entity, a JavaScript string no way out, a dot
 * label no unescaped quote and no byte Graphviz would copy raw into SVG;
 * and none holds a control but newline and tab.
 *
 * The renderers also get stacks of extreme size -- 0, negative, 1e154,
 * 1e300, DBL_MAX, inf, NaN, the smallest double -- alone and mixed: each
 * must finish (an alarm ends the program otherwise; the flame graph's cut
 * search once looped for ever above 1e154) and keep its sink's rule.
 */
#include "test.h"

#include "engine/render.h"
#include "engine/sink.h"

#include <float.h>
#include <math.h>
#include <unistd.h>

static char every_byte[256];
static char c1_chars[2 * 32 + 1];
static char long_name[70000];

static const char *hostile[] = {
	every_byte,
	c1_chars,
	"\x1b]52;c;cm0gLXJmIH4K\x07clipboard",
	"\x1b]0;title\x07\x1b[2K\rfake line",
	"\xc2\x9b" "31mC1 CSI\xc2\x9d" "0;t\xc2\x9c",
	"<script>alert(1)</script>",
	"]]><x/><![CDATA[",
	"</script><script>",
	"\"'&amp;&#7;&#x1b;&foo;&",
	"bad\xff\xfe \xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80 \xe2\x82 cut",
	"\xef\xbf\xbe\xef\xbf\xbf nonchars",
	"line\xe2\x80\xa8sep\xe2\x80\xa9js",
	"back\\slash\\\" \\N \\G \\L \\E \\n",
	"{a|b}<c> ::x y\tz\nw\f\v",
	long_name,
};

/* The code point of the UTF-8 character at s (n bytes left), its length in *len; -1: not UTF-8. */
static long
decode(const unsigned char *s, size_t n, size_t *len)
{
	size_t		k = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3 :
		(s[0] & 0xf8) == 0xf0 ? 4 : 0;
	long		c = k == 1 ? s[0] : k == 2 ? s[0] & 0x1f : k == 3 ? s[0] & 0x0f : s[0] & 0x07;

	if (k == 0 || k > n)
		return -1;
	for (size_t i = 1; i < k; i++)
	{
		if ((s[i] & 0xc0) != 0x80)
			return -1;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if ((k == 2 && c < 0x80) || (k == 3 && c < 0x800) || (k == 4 && c < 0x10000) || c > 0x10ffff ||
		(c >= 0xd800 && c <= 0xdfff))
		return -1;
	*len = k;
	return c;
}

/*
 * Why s[0, n) breaks the terminal rule, or NULL: UTF-8 without C0, DEL or
 * C1 controls; with lines, newline and tab allowed.
 */
static const char *
term_why(const char *s, size_t n, bool lines)
{
	for (size_t i = 0, k; i < n; i += k)
	{
		long		c = decode((const unsigned char *) s + i, n - i, &k);

		if (c < 0)
			return "not UTF-8";
		if ((c < 0x20 && !(lines && (c == '\n' || c == '\t'))) || c == 0x7f)
			return "a C0 control or DEL";
		if (c >= 0x80 && c <= 0x9f)
			return "a C1 control";
	}
	return NULL;
}

/* An XML reference at s: one of the five named, or a character reference to a Char XML allows. */
static size_t
reference(const char *s)
{
	static const char *const named[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
	char	   *end;
	long		c;

	for (size_t i = 0; i < lengthof(named); i++)
		if (strncmp(s, named[i], strlen(named[i])) == 0)
			return strlen(named[i]);
	if (s[1] != '#')
		return 0;
	c = s[2] == 'x' ? strtol(s + 3, &end, 16) : strtol(s + 2, &end, 10);
	if (*end != ';' || !(c == 9 || c == 10 || c == 13 || (c >= 0x20 && c <= 0xd7ff) ||
						 (c >= 0xe000 && c <= 0xfffd) || (c >= 0x10000 && c <= 0x10ffff)))
		return 0;
	return (size_t) (end + 1 - s);
}

/*
 * Why s[0, n) is not XML character data (markup: with tags allowed), or
 * NULL: UTF-8 of characters XML allows, '&' only as a reference, and
 * without tags no '<', '>' or quote.
 */
static const char *
xml_why(const char *s, size_t n, bool tags)
{
	for (size_t i = 0, k; i < n; i += k)
	{
		long		c = decode((const unsigned char *) s + i, n - i, &k);

		if (c < 0)
			return "not UTF-8";
		if ((c < 0x20 && c != '\n' && c != '\t' && c != '\r') || c == 0xfffe || c == 0xffff)
			return "a character XML forbids";
		if (c == '&' && (k = reference(s + i)) == 0)
			return "'&' that is no reference";
		if (!tags && (c == '<' || c == '>' || c == '"' || c == '\''))
			return "raw markup";
	}
	return NULL;
}

/* Why s[0, n) cannot be the inside of a JavaScript string in CDATA, or NULL. */
static const char *
js_why(const char *s, size_t n)
{
	for (size_t i = 0, k; i < n; i += k)
	{
		long		c = decode((const unsigned char *) s + i, n - i, &k);

		if (c < 0)
			return "not UTF-8";
		if (c < 0x20 || c == 0x2028 || c == 0x2029)
			return "a line terminator or control";
		if (c == '"' || c == '<' || c == '>' || c == '&' || c == '\'')
			return "raw quote or markup";
		if (c == '\\' && !(i + 1 < n && (s[i + 1] == '\\' || s[i + 1] == '"' || s[i + 1] == 'u')))
			return "a stray backslash";
		if (c == '\\')
			k = 2;
	}
	return NULL;
}

/*
 * Why s[0, n) cannot be the inside of a Graphviz quoted label whose SVG is
 * XML, or NULL: no raw quote, backslashes in pairs or before a quote or a
 * label escape, '&' only as &amp;, and characters XML allows.
 */
static const char *
dot_why(const char *s, size_t n)
{
	for (size_t i = 0, k; i < n; i += k)
	{
		long		c = decode((const unsigned char *) s + i, n - i, &k);

		if (c < 0)
			return "not UTF-8";
		if (c < 0x20 || c == 0x7f || c == 0xfffe || c == 0xffff)
			return "a control or a character XML forbids";
		if (c == '"')
			return "a raw quote";
		if (c == '&' && strncmp(s + i, "&amp;", 5) != 0)
			return "'&' that is not &amp;";
		if (c == '\\')
		{
			if (i + 1 >= n || !strchr("\\\"nlr", s[i + 1]))
				return "a stray backslash";
			k = 2;
		}
	}
	return NULL;
}

/* Why sink k's text of s breaks k's rule, or NULL; no sink lets a control through but newline and tab. */
static const char *
sink_why(hp_sink k, const char *s, size_t n)
{
	if (term_why(s, n, k == HP_SINK_LINES) != NULL)
		return term_why(s, n, k == HP_SINK_LINES);
	switch (k)
	{
		case HP_SINK_TERM:
			return term_why(s, n, false);
		case HP_SINK_LINES:
			return term_why(s, n, true);
		case HP_SINK_FRAME:
			return memchr(s, ';', n) ? "a ';' splits the frame" : term_why(s, n, false);
		case HP_SINK_XML:
			return xml_why(s, n, false);
		case HP_SINK_JS:
			return js_why(s, n);
		case HP_SINK_DOT:
			return dot_why(s, n);
	}
	return "no such sink";
}

static const char *const sink_names[] = {"term", "lines", "frame", "xml", "js", "dot"};

_Static_assert(lengthof(sink_names) == HP_SINK_DOT + 1, "a name per sink");

/* Every byte alone, every C1 character, every hostile string, through every sink. */
static void
sinks(void)
{
	char		out[HP_SINK_MAX];
	size_t		n;
	static char big[6 * sizeof(long_name) + 1];

	for (int k = HP_SINK_TERM; k <= HP_SINK_DOT; k++)
	{
		char		name[64];
		size_t		bad = 0;
		const char *why = NULL;

		for (int b = 0; b < 256; b++)
		{
			char		s[1] = {(char) b};
			size_t		took = hp_sink_char((hp_sink) k, s, 1, out, &n);

			if (took != 1 || n > HP_SINK_MAX || (why = sink_why((hp_sink) k, out, n)) != NULL)
			{
				if (bad++ == 0)
					printf("# %s: byte 0x%02x: %s\n", sink_names[k], b, why ? why : "length");
			}
		}
		snprintf(name, sizeof(name), "%s sink: every byte", sink_names[k]);
		T_CHECK(name, bad == 0, "%zu bytes break the rule", bad);
		for (size_t h = 0; h < lengthof(hostile); h++)
		{
			size_t		len = strlen(hostile[h]);

			hp_sink_str((hp_sink) k, hostile[h], len, big, sizeof(big));
			if ((why = sink_why((hp_sink) k, big, strlen(big))) != NULL && bad++ == 0)
				printf("# %s: hostile string %zu: %s\n", sink_names[k], h, why);
			if (strlen(big) != hp_sink_len((hp_sink) k, hostile[h], len) && bad++ == 0)
				printf("# %s: hostile string %zu: hp_sink_len differs\n", sink_names[k], h);
		}
		snprintf(name, sizeof(name), "%s sink: hostile strings", sink_names[k]);
		T_CHECK(name, bad == 0, "%zu strings break the rule", bad);
	}

	/* psql's spelling on a terminal */
	hp_sink_str(HP_SINK_TERM, "\x1b]52;c;x\x07\r\xc2\x85\xff\n", 14, big, sizeof(big));
	T_CHECK("term sink spells controls as psql", strcmp(big, "\\x1B]52;c;x\\x07\\x0D\\u0085\\xFF\\x0A") == 0,
			"%s", big);
	hp_sink_str(HP_SINK_FRAME, "std::a;b\x1b", 9, big, sizeof(big));
	T_CHECK("frame sink escapes the frame separator", strcmp(big, "std::a\\x3Bb\\x1B") == 0, "%s", big);
	hp_sink_str(HP_SINK_LINES, "a\tb\nc\x1b", 6, big, sizeof(big));
	T_CHECK("lines sink keeps newlines and tabs", strcmp(big, "a\tb\nc\\x1B") == 0, "%s", big);
	/* a cut never splits an escape nor a character */
	hp_sink_str(HP_SINK_TERM, "ab\x1b", 3, big, 5);
	T_CHECK("term sink cuts before an escape", strcmp(big, "ab") == 0, "%s", big);
	hp_sink_str(HP_SINK_XML, "a\xe2\x82\xac", 4, big, 3);
	T_CHECK("xml sink cuts before a character", strcmp(big, "a") == 0, "%s", big);
}

/* Why a rendered report breaks its sink's rule, or NULL. */
static const char *
report_why(const char *kind, const hp_buf *out)
{
	const char *s = out->data ? out->data : "";
	size_t		n = out->len;

	if (strcmp(kind, "text") == 0 || strcmp(kind, "collapsed") == 0)
		return term_why(s, n, true);
	if (strcmp(kind, "dot") == 0)
	{
		/* every quoted string a label of the dot sink's rule; nothing else holds a control */
		for (size_t i = 0; i < n; i++)
		{
			if (s[i] == '"')
			{
				size_t		j = i + 1;
				const char *why;

				while (j < n && s[j] != '"')
					j += s[j] == '\\' ? 2 : 1;
				if (j >= n)
					return "an unterminated string";
				/* a whole label of the renderer: line breaks \n, \l, \r are its own */
				if ((why = dot_why(s + i + 1, j - i - 1)) != NULL)
					return why;
				i = j;
			}
			else if ((unsigned char) s[i] < 0x20 && s[i] != '\n')
				return "a control outside a string";
		}
		return NULL;
	}
	/* the flame graph: XML outside its CDATA sections (scripts), one CDATA end per start */
	{
		const char *why;
		size_t		starts = 0, ends = 0;

		for (const char *p = s, *cdata; p < s + n; p = cdata ? strstr(cdata, "]]>") + 3 : s + n)
		{
			cdata = strstr(p, "<![CDATA[");
			if (cdata && strstr(cdata, "]]>") == NULL)
				return "an unterminated CDATA section";
			if ((why = xml_why(p, cdata ? (size_t) (cdata - p) : n - (size_t) (p - s), true)) != NULL)
				return why;
		}
		for (const char *p = s; (p = strstr(p, "<![CDATA[")) != NULL; p++)
			starts++;
		for (const char *p = s; (p = strstr(p, "]]>")) != NULL; p++)
			ends++;
		if (starts != ends)
			return "a CDATA section ended early";
		if ((why = term_why(s, n, true)) != NULL)
			return why;
		starts = ends = 0;
		for (const char *p = s; (p = strstr(p, "<script")) != NULL; p++)
			starts++;
		for (const char *p = s; (p = strstr(p, "</script")) != NULL; p++)
			ends++;
		return starts == ends ? NULL : "a script ended early";
	}
}

typedef struct run
{
	hp_arena   *a;
	const hp_named_stack *st;
	size_t		n;
	bool		diff;
	const char *why;
	const char *kind;
} run;

/* Every renderer of the stacks; the first report that breaks its sink's rule. */
static void
render_all(void *arg)
{
	run		   *r = arg;
	hp_options	o = HP_OPTIONS_DEFAULT;
	hp_graph	g;
	hp_profile	p = {0};
	hp_located	l = {0};
	hp_row	   *rows;
	static const char *const kinds[] = {"text", "dot", "collapsed", "flamegraph"};

	o.program = hostile[0];
	hp_graph_from_stacks(r->a, r->st, r->n, &o, &g);
	for (size_t k = 0; k < lengthof(kinds) && r->why == NULL; k++)
	{
		hp_buf		out;

		hp_buf_init(&out, r->a);
		if (k == 0)
			hp_render_text(r->a, &g, &o, SIZE_MAX, &out);
		else if (k == 1)
			hp_render_dot(r->a, &g, &o, &out);
		else if (k == 2)
			hp_render_collapsed(r->a, &g, &out);
		else
			hp_render_flamegraph(r->a, &g, &o, hostile[3], r->diff, &out);
		r->kind = kinds[k];
		r->why = report_why(kinds[k], &out);
	}
	hp_top(r->a, &g, 30, true, &rows);
	{
		hp_buf		out;

		hp_buf_init(&out, r->a);
		hp_render_pprof(r->a, &p, &l, &g, &o, &out);
	}
}

/* Hostile names in stacks of ordinary and extreme sizes, through every renderer. */
static void
renderers(t_env *env)
{
	static const double sizes[] = {0, -1, 1, 1e154, 1e155, 1e300, -1e300, DBL_MAX, -DBL_MAX,
	INFINITY, -INFINITY, NAN, 5e-324, 4096};
	enum
	{
		NS = lengthof(sizes)
	};
	const char *frames[lengthof(hostile) + 1];
	hp_named_stack st[NS + lengthof(hostile)];
	size_t		failures = 0;
	char		name[96];

	for (size_t h = 0; h < lengthof(hostile); h++)
		frames[h] = hostile[h];
	frames[lengthof(hostile)] = "main";
	/* a stack per hostile name (leaf first, then the rest up to main), 4096 bytes each */
	for (size_t h = 0; h < lengthof(hostile); h++)
		st[h] = (hp_named_stack) {frames + h, (uint32_t) (lengthof(hostile) + 1 - h), false, 4096, 1};
	for (int diff = 0; diff < 2; diff++)
	{
		hp_arena	a;
		run			r = {&a, st, lengthof(hostile), diff, NULL, NULL};

		hp_arena_init(&a, &env->env);
		if (t_run(env, render_all, &r) != 0)
			r.why = env->message;
		snprintf(name, sizeof(name), "every renderer keeps its sink's rule%s", diff ? " (diff)" : "");
		T_CHECK(name, r.why == NULL, "%s: %s", r.kind, r.why);
		hp_arena_free(&a);
	}

	/* each extreme size alone, with a base of the next, and all of them at once */
	alarm(60);
	for (size_t i = 0; i <= NS; i++)
	{
		hp_arena	a;
		size_t		n = 0;
		run			r;

		for (size_t h = 0; h < lengthof(hostile); h++)
		{
			st[n] = (hp_named_stack) {frames + h, (uint32_t) (lengthof(hostile) + 1 - h), false,
				i < NS ? sizes[i] : 1, 1};
			n++;
		}
		for (size_t j = 0; j < NS; j++)
			if (i == NS || j == (i + 1) % NS)
				st[n++] = (hp_named_stack) {frames + j % lengthof(hostile), 2, i < NS, sizes[j], sizes[j]};
		r = (run) {&a, st, n, i % 2 == 1, NULL, NULL};
		hp_arena_init(&a, &env->env);
		if (t_run(env, render_all, &r) != 0)
			r.why = env->message;
		if (r.why != NULL && failures++ == 0)
			printf("# bytes %g: %s: %s\n", i < NS ? sizes[i] : 0.0, r.kind, r.why);
		hp_arena_free(&a);
	}
	/*
	 * More frames than the flame graph draws (MAX_FRAMES), so that it
	 * searches a cut: 5000 stacks under one root (odd i), or one 5000
	 * frames deep, each as wide as the total (even i); without t_long(),
	 * only the deep stack of 1e300, where the old cut search looped
	 */
	for (size_t i = 0; i < 2 * NS; i++)
	{
		enum
		{
			MANY = 5000
		};
		hp_arena	a;
		hp_named_stack *st_many;
		const char **deep;
		run			r;

		if (!t_long() && !(i % 2 == 0 && sizes[i / 2] == 1e300))
			continue;
		hp_arena_init(&a, &env->env);
		st_many = hp_alloc(&a, MANY * sizeof(*st_many));
		deep = hp_alloc(&a, MANY * sizeof(char *));
		for (size_t j = 0; j < MANY; j++)
		{
			const char **fr = hp_alloc(&a, 2 * sizeof(char *));
			char	   *leaf = hp_alloc(&a, 32);

			snprintf(leaf, 32, "leaf\x1b%zu", j);
			fr[0] = deep[j] = leaf;
			fr[1] = "main";
			st_many[j] = (hp_named_stack) {fr, 2, false, sizes[i / 2], 1};
		}
		if (i % 2 == 0)
			st_many[0] = (hp_named_stack) {deep, MANY, false, sizes[i / 2], 1};
		r = (run) {&a, st_many, i % 2 ? MANY : 1, false, NULL, NULL};
		if (t_run(env, render_all, &r) != 0)
			r.why = env->message;
		if (r.why != NULL && failures++ == 0)
			printf("# %s stacks of bytes %g: %s: %s\n", i % 2 ? "5000" : "a deep", sizes[i / 2], r.kind, r.why);
		hp_arena_free(&a);
	}
	alarm(0);
	T_CHECK("every renderer finishes on extreme bytes (0, negative, 1e154, 1e300, inf, NaN)", failures == 0,
			"%zu sizes failed", failures);
}

int
main(void)
{
	t_env		env;

	for (int b = 1; b < 256; b++)
		every_byte[b - 1] = (char) b;
	for (int c = 0; c < 32; c++)
	{
		c1_chars[2 * c] = (char) 0xc2;
		c1_chars[2 * c + 1] = (char) (0x80 + c);
	}
	for (size_t i = 0; i + 1 < sizeof(long_name); i++)
		long_name[i] = "<&\x1b\"x\xff"[i % 6];
	t_env_init(&env);
	sinks();
	renderers(&env);
	return t_exit();
}
