/*
 * sink.h -- the one owner of each output sink.  Text from outside (a
 * profile's names, a server's rows and messages, another role's queries)
 * leaves heapprof only through these functions, one per kind of sink, so
 * that no byte of it can end a string, open markup, or reach a terminal as
 * a control:
 *
 *   HP_SINK_TERM   one field on a terminal line: C0 controls and DEL as
 *                  \xHH, C1 controls (U+0080..U+009F) as \u00HH, as psql's
 *                  aligned output prints them; bytes that are not UTF-8 as
 *                  \xHH.  The result is printable UTF-8.
 *   HP_SINK_LINES  the same for text of several lines: newline and tab kept.
 *   HP_SINK_FRAME  a frame of a collapsed line (flamegraph.pl's format): as
 *                  HP_SINK_TERM, and ';', which separates frames, as \x3B.
 *   HP_SINK_XML    XML character data or an attribute value: & < > " '
 *                  as references, C0 and C1 controls dropped, DEL and bytes
 *                  that are not UTF-8 (or characters XML forbids) as '?'.
 *   HP_SINK_JS     the inside of a JavaScript string in a CDATA section:
 *                  & < > ' as \u escapes (so neither "]]>" nor "</script>"
 *                  can occur), " and \ escaped, U+2028/U+2029 as \u
 *                  escapes, C0 and C1 controls dropped, DEL and bytes that
 *                  are not UTF-8 '?'.
 *   HP_SINK_DOT    the inside of a Graphviz quoted label: " and \ escaped,
 *                  & as &amp; (Graphviz decodes entities, whose result would
 *                  reach its SVG raw), C0 controls, DEL and bytes that are
 *                  not UTF-8 as the text \xHH, C1 controls as \u00HH:
 *                  whatever Graphviz draws is well-formed, and the file
 *                  passes the terminal check.
 *
 * A character is never cut: a limit stops before the character that does
 * not fit.
 */
#ifndef HEAPPROF_SINK_H
#define HEAPPROF_SINK_H

#include "arena.h"

typedef enum hp_sink
{
	HP_SINK_TERM,
	HP_SINK_LINES,
	HP_SINK_FRAME,
	HP_SINK_XML,
	HP_SINK_JS,
	HP_SINK_DOT
} hp_sink;

#define HP_SINK_MAX 8			/* bytes one character becomes at most */

/*
 * The first character of s[0, len), len > 0, for sink k: its bytes in out
 * (at most HP_SINK_MAX, no NUL), their number in *outlen.  Returns the
 * input bytes it took, at least 1.
 */
extern size_t hp_sink_char(hp_sink k, const char *s, size_t len, char *out, size_t *outlen);

/* At most max bytes of the string s for sink k, appended to out. */
extern void hp_sink_buf(hp_buf *out, hp_sink k, const char *s, size_t max);

/* s[0, len) for sink k into dst of size bytes (cut to fit, NUL-terminated); dst. */
extern char *hp_sink_str(hp_sink k, const char *s, size_t len, char *dst, size_t size);

/* The bytes s[0, len) becomes for sink k, without a NUL. */
extern size_t hp_sink_len(hp_sink k, const char *s, size_t len);

#endif
