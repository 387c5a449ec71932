/*
 * sink.c -- one function per output sink (see sink.h): hp_sink_char maps
 * one character, and every writer of the engine and of the clients goes
 * through it, so that a sink's rule exists once.
 */
#include "sink.h"

#include <stdio.h>
#include <string.h>

/*
 * Length of the UTF-8 character at s[0, len) and its code point in *cp, or 0
 * when it is not one: overlong, a surrogate, beyond U+10FFFF, cut, or
 * U+FFFE/U+FFFF (which XML forbids, and no name needs).
 */
static size_t
utf8_char(const unsigned char *s, size_t len, uint32_t *cp)
{
	uint32_t	c;
	size_t		n;

	if (s[0] < 0x80)
		n = 1, c = s[0];
	else if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, c = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, c = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, c = s[0] & 0x07;
	else
		return 0;
	if (n > len)
		return 0;
	for (size_t k = 1; k < n; k++)
	{
		if ((s[k] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[k] & 0x3f);
	}
	if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) ||
		(c >= 0xd800 && c <= 0xdfff) || c == 0xfffe || c == 0xffff)
		return 0;
	*cp = c;
	return n;
}

static size_t
put(char *out, const char *s)
{
	size_t		n = strlen(s);

	memcpy(out, s, n);
	return n;
}

/* The sinks that show what they escape as psql does. */
static bool
terminal(hp_sink k)
{
	return k == HP_SINK_TERM || k == HP_SINK_LINES || k == HP_SINK_FRAME;
}

size_t
hp_sink_char(hp_sink k, const char *s, size_t len, char *out, size_t *outlen)
{
	uint32_t	c = 0;
	size_t		n = utf8_char((const unsigned char *) s, len, &c);
	unsigned char b = (unsigned char) s[0];
	char		e[HP_SINK_MAX + 1];

	*outlen = 0;
	if (n == 0)
	{
		/* not UTF-8: one byte, shown where the sink can show it */
		if (terminal(k))
			*outlen = (size_t) snprintf(out, HP_SINK_MAX, "\\x%02X", b);
		else if (k == HP_SINK_DOT)
			*outlen = (size_t) snprintf(out, HP_SINK_MAX, "\\\\x%02X", b);
		else
			*outlen = put(out, "?");
		return 1;
	}
	if (c < 0x20 || c == 0x7f)
	{
		if (k == HP_SINK_LINES && (c == '\n' || c == '\t'))
			*outlen = put(out, c == '\n' ? "\n" : "\t");
		else if (terminal(k))
			*outlen = (size_t) snprintf(out, HP_SINK_MAX, "\\x%02X", c);
		else if (k == HP_SINK_DOT)
			*outlen = (size_t) snprintf(out, HP_SINK_MAX, "\\\\x%02X", c);
		else if (c == 0x7f)
			*outlen = put(out, "?");
		return 1;
	}
	if (c >= 0x80 && c <= 0x9f)
	{
		/* C1 controls: shown as psql shows them, left out of documents as C0 ones are */
		if (terminal(k) || k == HP_SINK_DOT)
			*outlen = (size_t) snprintf(out, HP_SINK_MAX, k == HP_SINK_DOT ? "\\\\u%04X" : "\\u%04X", c);
		return n;
	}
	e[0] = '\0';
	if (k == HP_SINK_XML)
		snprintf(e, sizeof(e), "%s", c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" :
				 c == '"' ? "&quot;" : c == '\'' ? "&apos;" : "");
	else if (k == HP_SINK_JS)
	{
		if (c == '"' || c == '\\')
			snprintf(e, sizeof(e), "\\%c", (char) c);
		else if (c == '&' || c == '<' || c == '>' || c == '\'' || c == 0x2028 || c == 0x2029)
			snprintf(e, sizeof(e), "\\u%04x", c & 0xffff);
	}
	else if (k == HP_SINK_DOT)
		snprintf(e, sizeof(e), "%s", c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '&' ? "&amp;" : "");
	else if (k == HP_SINK_FRAME && c == ';')
		snprintf(e, sizeof(e), "\\x3B");
	if (e[0])
		*outlen = put(out, e);
	else
	{
		memcpy(out, s, n);
		*outlen = n;
	}
	return n;
}

void
hp_sink_buf(hp_buf *out, hp_sink k, const char *s, size_t max)
{
	size_t		len = strnlen(s, max);

	for (size_t i = 0; i < len;)
	{
		char		e[HP_SINK_MAX];
		size_t		n;
		/* a character the limit cuts is left out, not shown as bytes that are not UTF-8 */
		size_t		took = hp_sink_char(k, s + i, strnlen(s + i, 4), e, &n);

		if (i + took > len)
			break;
		i += took;
		hp_buf_append(out, e, n);
	}
}

char *
hp_sink_str(hp_sink k, const char *s, size_t len, char *dst, size_t size)
{
	size_t		used = 0;

	for (size_t i = 0; i < len;)
	{
		char		e[HP_SINK_MAX];
		size_t		n;

		i += hp_sink_char(k, s + i, len - i, e, &n);
		if (used + n >= size)
			break;
		memcpy(dst + used, e, n);
		used += n;
	}
	if (size > 0)
		dst[used] = '\0';
	return dst;
}

size_t
hp_sink_len(hp_sink k, const char *s, size_t len)
{
	size_t		total = 0;

	for (size_t i = 0; i < len;)
	{
		char		e[HP_SINK_MAX];
		size_t		n;

		i += hp_sink_char(k, s + i, len - i, e, &n);
		total += n;
	}
	return total;
}
