/*
 * sqltext.h -- the one way text from outside the database becomes a SQL value.
 */
#ifndef HEAPPROF_SQLTEXT_H
#define HEAPPROF_SQLTEXT_H

/*
 * s (len bytes) as a text value valid in the database encoding: bytes that
 * do not form a character become '?'.  For all text heapprof did not get
 * from PostgreSQL in this database: names from ELF and DWARF, file paths,
 * what a profile file or another process wrote (which may be another
 * database's encoding, or a hostile file's bytes).
 */
extern text *hpg_text(const char *s, size_t len);

#define HpgTextDatum(s) PointerGetDatum(hpg_text((s), strlen(s)))

/*
 * The same for text written in the database encoding named encoding (a
 * profile's %heapprof-encoding: another database's statements), converted
 * where PostgreSQL can: characters without an equivalent become '?'.  NULL
 * or "" (an older file): as hpg_text.
 */
extern text *hpg_text_in(const char *s, size_t len, const char *encoding);

#endif
