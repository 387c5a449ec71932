/*
 * maps.h -- the one reader of /proc/PID/maps text.
 *
 * A dump's MAPPED_LIBRARIES section is a copy of the dumping process's maps.
 * The symbolizer (modules and file identity), pprof (mappings) and anything
 * else that needs it read it line by line through hp_maps_next: no
 * allocation, bounded by the text, any input.
 */
#ifndef HEAPPROF_MAPS_H
#define HEAPPROF_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct hp_mapping
{
	uint64_t	start;
	uint64_t	end;
	uint64_t	offset;
	unsigned	dev_major;
	unsigned	dev_minor;
	uint64_t	inode;
	bool		exec;			/* perms has 'x' (its third letter, "r-xp") */
	const char *path;			/* into the text, not NUL-terminated; NULL unless
								 * it starts with '/' (anonymous, [heap], ...) */
	size_t		pathlen;
	const char *line;			/* the whole line, without its newline */
	size_t		linelen;
} hp_mapping;

/*
 * The next line of the maps text at *p (before end) that has the five
 * fields; lines that do not, or whose numbers do not fit, are skipped.
 * Advances *p past the line.  False when no line is left (also when *p is
 * NULL: no text).
 */
extern bool hp_maps_next(const char **p, const char *end, hp_mapping *m);

#endif
