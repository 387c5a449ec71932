/*
 * test_maps.c -- the maps reader (maps.h) on ordinary and odd input.
 */
#include "test.h"
#include "engine/maps.h"

/* Read every mapping of text (copied to an exact-size block). */
static size_t
read_all(const char *text, hp_mapping *out, size_t max)
{
	size_t		len = strlen(text);
	const char *p = t_exact(text, len);
	const char *end = p + len;
	size_t		n = 0;
	hp_mapping	m;

	while (n < max && hp_maps_next(&p, end, &m))
		out[n++] = m;
	return n;
}

static bool
path_is(const hp_mapping *m, const char *path)
{
	if (path == NULL)
		return m->path == NULL;
	return m->path && m->pathlen == strlen(path) && memcmp(m->path, path, m->pathlen) == 0;
}

int
main(void)
{
	hp_mapping	m[16];
	size_t		n;

	n = read_all("55d0a0000000-55d0a0100000 r-xp 00001000 fd:01 1234567                    /usr/lib/postgresql/15/bin/postgres\n"
				 "7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0                          [stack]\n"
				 "7f0000000000-7f0000001000 r--p 00000000 00:00 0\n"
				 "7f1000000000-7f1000002000 r-xp 00000000 08:03 99 /tmp/lib x.so (deleted)", m, 16);
	T_CHECK("maps: four lines", n == 4, "%zu mappings", n);
	if (n == 4)
	{
		T_CHECK("maps: fields", m[0].start == 0x55d0a0000000ULL && m[0].end == 0x55d0a0100000ULL &&
				m[0].offset == 0x1000 && m[0].dev_major == 0xfd && m[0].dev_minor == 1 &&
				m[0].inode == 1234567 && m[0].exec && path_is(&m[0], "/usr/lib/postgresql/15/bin/postgres"),
				"first mapping");
		T_CHECK("maps: a pseudo path is no path", path_is(&m[1], NULL) && !m[1].exec, "[stack]");
		T_CHECK("maps: anonymous", path_is(&m[2], NULL) && m[2].inode == 0, "anonymous");
		T_CHECK("maps: spaces and (deleted) stay in the path, no final newline",
				path_is(&m[3], "/tmp/lib x.so (deleted)") && m[3].exec, "last path");
		T_CHECK("maps: the line", m[0].line && m[0].linelen > 60 && strncmp(m[0].line, "55d0a", 5) == 0,
				"line");
	}
	n = read_all("garbage\n\n"
				 "10-20 r-xp 0 00:00\n"	/* no inode */
				 "10-20\n"
				 "-20 r-xp 0 00:00 0 /a\n"
				 "10-20 r-xp 0 00:00 0x5 /b\n"
				 "1-2 r-xp 0 00:00 0 /ok\n"
				 "10000000000000000-20 r-xp 0 00:00 0 /overflow\n"
				 "10-20 r-xp 0 100000000:00 0 /major\n"
				 "10-20 r-xp 0 00:00 99999999999999999999 /inode\n", m, 16);
	T_CHECK("maps: lines without the five fields are skipped", n == 1 && path_is(&m[0], "/ok") &&
			m[0].start == 1 && m[0].end == 2, "%zu mappings", n);
	n = read_all("", m, 16);
	T_CHECK("maps: empty text", n == 0, "%zu", n);
	{
		const char *p = NULL;
		hp_mapping	x;

		T_CHECK("maps: no text at all", !hp_maps_next(&p, NULL, &x), "a mapping from nothing");
	}
	return t_exit();
}
