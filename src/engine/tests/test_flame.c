/*
 * test_flame.c -- the flame graph is well-formed XML and valid UTF-8 whatever
 * the names hold: markup characters are escaped, bytes that are not UTF-8
 * become '?', a long name is not cut inside a character.
 */
#include "test.h"

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
			strstr(out.data, "a&lt;b&gt;'c' (inline)"), "escaping");
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
		T_CHECK("collapsed keeps one line per stack", lines == 3 && strstr(out.data, "ma?in?;") != NULL,
				"%zu lines: %s", lines, out.data);
	}
	hp_arena_free(&a);
	return t_exit();
}
