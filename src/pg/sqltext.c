/*
 * sqltext.c -- the one way text from outside the database becomes a SQL value.
 *
 * A text value must be valid in the database encoding, or the server raises
 * "invalid byte sequence" when the value is sent or compared.  What
 * heapprof returns comes from files, other processes and object files, in
 * any encoding: every such value passes hpg_text.
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"

#include "sqltext.h"

text *
hpg_text(const char *s, size_t len)
{
	int			enc = GetDatabaseEncoding();
	char	   *copy;
	size_t		i = 0;

	if (pg_verifymbstr(s, (int) len, true))
		return cstring_to_text_with_len(s, (int) len);
	copy = palloc(len + 1);
	while (i < len)
	{
		int			n = pg_encoding_verifymbchar(enc, s + i, (int) (len - i));

		if (n <= 0)
		{
			copy[i++] = '?';
			continue;
		}
		memcpy(copy + i, s + i, n);
		i += n;
	}
	return cstring_to_text_with_len(copy, (int) len);
}

text *
hpg_text_in(const char *s, size_t len, const char *encoding)
{
	int			from = encoding && encoding[0] ? pg_char_to_encoding(encoding) : -1;
	int			to = GetDatabaseEncoding();
	Oid			proc;
	StringInfoData out;
	size_t		i = 0;

	/* SQL_ASCII's bytes have no encoding to convert from */
	if (from < 0 || from == to || from == PG_SQL_ASCII || to == PG_SQL_ASCII ||
		!OidIsValid(proc = FindDefaultConversionProc(from, to)))
		return hpg_text(s, len);
	initStringInfo(&out);
	while (i < len)
	{
		int			done;

		CHECK_FOR_INTERRUPTS();
		enlargeStringInfo(&out, (int) (len - i) * MAX_CONVERSION_GROWTH + 1);
		/* converts up to the first character it cannot, which becomes '?' */
		done = pg_do_encoding_conversion_buf(proc, from, to, (unsigned char *) unconstify(char *, s) + i,
											 (int) (len - i), (unsigned char *) out.data + out.len,
											 out.maxlen - out.len, true);
		out.len += (int) strlen(out.data + out.len);
		i += done;
		if (i < len)
		{
			int			n = pg_encoding_verifymbchar(from, s + i, (int) (len - i));

			appendStringInfoChar(&out, '?');
			i += n > 0 ? n : 1;
		}
	}
	return hpg_text(out.data, out.len);
}
