/*
 * sym_names.c -- symbol names as reports show them.
 *
 * A C++ symbol is shown as jeprof's ShortFunctionName shows it: demangled,
 * without argument lists, template arguments or return type
 * ("ns::Class::method"), so the two tools' reports can be compared line by
 * line.  Other names are copied unchanged.
 */
#include "sym_internal.h"

#include <ctype.h>
#include <dlfcn.h>
#include <string.h>

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

/*
 * Remove every open..close group, nested ones with their group (and a
 * following " const" after ")"), in one pass: the same as removing innermost
 * groups until none is left, in time linear in the name.  stack holds the
 * output places of the open brackets not yet closed (at most strlen(s)).
 */
static void
drop_groups(char *s, size_t *stack, char open, char close)
{
	size_t		depth = 0;
	size_t		w = 0;

	for (size_t r = 0; s[r]; r++)
	{
		if (s[r] == close && depth > 0)
		{
			w = stack[--depth];
			if (open == '(')
			{
				size_t		q = r + 1;

				while (isspace((unsigned char) s[q]))
					q++;
				if (strncmp(s + q, "const", 5) == 0)
					r = q + 4;
			}
			continue;
		}
		if (s[r] == open)
			stack[depth++] = w;
		s[w++] = s[r];
	}
	s[w] = '\0';
}

/*
 * The demangler's buffer belongs to the symbolizer, so running out of arena
 * memory here leaks nothing.
 */
const char *
sym_display_name(sym_names *n, hp_arena *a, const char *name)
{
	demangle_fn fn = name[0] == '_' && name[1] == 'Z' ? demangler() : NULL;
	char	   *out;
	char	   *s;
	int			status = -1;
	size_t		cut = 0;
	size_t		len;

	if (fn == NULL)
		return hp_strdup(a, name);
	out = fn(name, n->buf, &n->len, &status);
	if (out == NULL || status != 0)
		return hp_strdup(a, name);
	n->buf = out;
	s = hp_strdup(a, out);
	len = strlen(s);
	if (len + 1 > n->stack_cap)
	{
		size_t	   *v = realloc(n->stack, (len + 1) * sizeof(size_t));

		if (v == NULL)
			return s;			/* unshortened: memory ran out */
		n->stack = v;
		n->stack_cap = len + 1;
	}
	drop_groups(s, n->stack, '(', ')');
	drop_groups(s, n->stack, '<', '>');
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

void
sym_names_free(sym_names *n)
{
	free(n->buf);
	free(n->stack);
}
