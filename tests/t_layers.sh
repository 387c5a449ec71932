#!/usr/bin/env bash
# t_layers.sh -- the structure docs/architecture.md promises:
#  - every file of src/pg is on one floor of the table between its
#    <!-- floors --> markers, and needs only files on floors below its own:
#    file A needs file B when A's object uses a symbol B's object defines
#    (read with nm) or when A.c or A.h includes B.h (headers without a B.c,
#    compat.h and values.h, are leaves); so there is no cycle either;
#  - no cycle among the objects of src/engine, nor of src/cli;
#  - the engine uses no PostgreSQL symbol: everything its objects need is
#    defined by the engine itself or by libc, libdw, libelf, zlib, libm;
#  - one reader of /proc/PID/maps text (maps.c) and one writer and reader of
#    the profile file's "%" lines (format.c).
set -uo pipefail
cd "$HP_TOP"
fail=0

defined() { nm --defined-only -g "$1" | awk '{print $3}'; }
undefined() { nm -u "$1" | awk '{print $2}'; }

# edges "a b" among the objects of DIR's sources: a.o uses a symbol that
# b.o defines; every source's object must be built from it (a missing or
# stale one would hide edges; an object without a source invent them), and
# no edge at all means nothing was read
object_edges() {
	local objs=() c edges=""
	for c in "$1"/*.c; do
		[ "${c%.c}.o" -nt "$c" ] || { echo "${c%.c}.o is missing or older than $c: build first" >&2; return 1; }
		objs+=("${c%.c}.o")
	done
	edges=$(for a in "${objs[@]}"; do
		for b in "${objs[@]}"; do
			[ "$a" = "$b" ] && continue
			if comm -12 <(undefined "$a" | sort -u) <(defined "$b" | sort -u) | grep . >/dev/null; then
				echo "$(basename "$a" .o) $(basename "$b" .o)"
			fi
		done
	done)
	[ -n "$edges" ] || { echo "no dependencies found among $1 objects: not built?" >&2; return 1; }
	printf '%s\n' "$edges"
}
# no cycle among DIR's files (tsort reports one on stderr)
acyclic() {
	local cycle
	if ! cycle=$(printf '%s\n' "$2" | tsort 2>&1 >/dev/null) || [ -n "$cycle" ]; then
		echo "cycle among $1 files:"
		echo "$cycle"
		fail=1
	fi
}
edges=$(object_edges src/pg) || exit 1
# ... and by the headers each file and its header include
edges="$edges
$(for f in src/pg/*.c src/pg/*.h; do
	a=$(basename "${f%.*}")
	sed -n 's/^#include "\([a-z_]*\)\.h".*/\1/p' "$f" | while read -r b; do
		[ "$b" != "$a" ] && [ -f "src/pg/$b.c" ] && echo "$a $b"
	done
done)"

# the floors, top (1) to bottom, from the documented table
floors=$(sed -n '/<!-- floors -->/,/<!-- \/floors -->/p' docs/architecture.md |
	awk -F'|' 'NF >= 4 && $2 !~ /floor|---/ { n++; k = split($3, f, " "); for (i = 1; i <= k; i++) { sub(/\.c$/, "", f[i]); print f[i], n } }')
[ -n "$floors" ] || { echo "no floors table in docs/architecture.md"; exit 1; }
for f in src/pg/*.c; do
	b=$(basename "$f" .c)
	n=$(printf '%s\n' "$floors" | awk -v b="$b" '$1 == b' | wc -l)
	[ "$n" = 1 ] || { echo "$f is on $n floors of docs/architecture.md's table (must be on one)"; fail=1; }
done
bad=$(printf '%s\n' "$edges" | sort -u | while read -r a b; do
	fa=$(printf '%s\n' "$floors" | awk -v x="$a" '$1 == x {print $2}')
	fb=$(printf '%s\n' "$floors" | awk -v x="$b" '$1 == x {print $2}')
	[ -n "$fa" ] && [ -n "$fb" ] && [ "$fa" -ge "$fb" ] && echo "  $a.c (floor $fa) needs $b.c (floor $fb)"
done)
if [ -n "$bad" ]; then
	echo "files of src/pg need files on their own floor or above (docs/architecture.md):"
	echo "$bad"
	fail=1
fi
acyclic src/pg "$edges"
# the engine and the clients, by their objects, have none either
for dir in src/engine src/cli; do
	e=$(object_edges "$dir") || exit 1
	acyclic "$dir" "$e"
done

libs=$(for l in libc.so.6 libdw.so.1 libelf.so.1 libz.so.1 libm.so.6; do
	ldconfig -p | awk -v l="$l" '$1 == l && !n++ {print $NF}'; done)
provided=$( { cat src/engine/*.o >/dev/null; for o in src/engine/*.o; do defined "$o"; done
	for l in $libs; do nm -D --defined-only "$l" | awk '{print $3}' | sed 's/@.*//'; done; } | sort -u)
foreign=$(for o in src/engine/*.o; do undefined "$o"; done | sed 's/@.*//' | sort -u |
	comm -23 - <(printf '%s\n' "$provided") | grep -v '^_GLOBAL_OFFSET_TABLE_$' || true)
if [ -n "$foreign" ]; then
	echo "engine objects use symbols from outside the engine and its libraries:"
	echo "$foreign"
	fail=1
fi

# one owner per format: only maps.c parses maps lines, only format.c spells the "%" lines
owners=$(grep -l '"%%*heapprof' src/engine/*.c src/pg/*.c src/cli/*.c | grep -v 'src/engine/format.c' || true)
if [ -n "$owners" ]; then
	echo "files other than src/engine/format.c spell the %heapprof lines: $owners"
	fail=1
fi
mapsreaders=$(grep -l 'sscanf.*%llx-%llx\|hp_maps_next' src/engine/*.c src/pg/*.c src/cli/*.c |
	grep -v 'src/engine/maps.c' | xargs -r grep -L 'hp_maps_next' || true)
if [ -n "$mapsreaders" ]; then
	echo "files parse maps text themselves: $mapsreaders"
	fail=1
fi

[ $fail = 0 ] || exit 1
echo "layers: $(printf '%s\n' "$edges" | sort -u | wc -l) dependencies among $(ls src/pg/*.o | wc -l) src/pg files, each to a lower floor of $(printf '%s\n' "$floors" | awk '{print $2}' | sort -u | wc -l); no cycle in src/engine or src/cli; engine uses no PostgreSQL symbol; one owner for maps and % lines"
