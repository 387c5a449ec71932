#!/usr/bin/env bash
# t_honest.sh -- on the server's postgres (cluster (a); Debian's is stripped),
# no frame is labelled with a symbol whose [value, value + size) does not
# contain it; code without a symbol gets "postgres+0xSTART" labels instead.  Checked
# against nm -D -S on a real backend's dump after a real workload.  The dump
# as if from another machine (other inodes, no build-ids) is named the same.
set -euo pipefail
. "${HP_TOP:=$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
cd "$HP_TOP"
w=$(scratch)
postgres=$("${PG_CONFIG:-pg_config}" --bindir)/postgres

q > /dev/null <<SQL
CREATE EXTENSION IF NOT EXISTS heapprof;
SELECT heapprof_enable();
CREATE TEMP TABLE t AS SELECT g, md5(g::text) AS m FROM generate_series(1, 20000) g;
SELECT count(*) FROM (SELECT * FROM t ORDER BY m) s;
SELECT count(*) FROM t a JOIN t b USING (m);
\\o $w/raw.heap
SELECT heapprof_dump_raw();
SQL

bias=$(awk -v p="$postgres" '$6 == p && $3 == "00000000" {split($1, r, "-"); print r[1]; exit}' "$w/raw.heap")
[ -n "$bias" ] || { echo "postgres not in the dump's maps"; exit 1; }
# The same dump as a raw jemalloc one from another machine with the same
# packages: no %heapprof lines (no build-ids), other inodes.  The code is the
# evidence: the same names as at home, jemalloc's frames cut.
grep -v '^%heapprof' "$w/raw.heap" > "$w/home.heap"
awk 'm && NF >= 6 && $5 != 0 {$5 = $5 + 1} /^MAPPED_LIBRARIES:/ {m = 1} {print}' "$w/home.heap" > "$w/foreign.heap"
./heapprof-report --collapsed "$w/home.heap" > "$w/home.txt"
./heapprof-report --collapsed "$w/foreign.heap" > "$w/foreign.txt"
cmp -s "$w/home.txt" "$w/foreign.txt" || { diff "$w/home.txt" "$w/foreign.txt" || true; echo "another machine's dump named otherwise"; exit 1; }
! grep -q 'jemalloc\|replaced' "$w/foreign.txt" || { echo "another machine's dump: jemalloc frames or refusals left"; exit 1; }
./heapprof-report --symbols "$w/foreign.heap" > "$w/foreign.sym"
grep "^# identity $postgres: other inode, code: all [0-9]* return addresses follow a call$" "$w/foreign.sym" ||
	{ grep '^# identity' "$w/foreign.sym"; echo "postgres: no evidence"; exit 1; }

# The point is Debian's stripped binary, whose dynamic symbols are all the
# names it has.  A postgres with a symbol table and DWARF (tests/pgbuild's)
# names static and inlined code from its debug info, which t_symbols checks
# against addr2line-style truth; there is nothing stripped to check here.
if [ -n "$(nm "$postgres" 2>/dev/null | sed -n 1p)" ]; then
	echo "postgres is not stripped here: nothing to check (Debian's stripped 15 is checked)"
	exit 0
fi
symtab=-D
declare -A lo hi
while read -r addr size type name; do
	lo[$name]=$((16#$addr))
	hi[$name]=$((16#$addr + 16#$size))
done < <(nm $symtab -S --defined-only "$postgres" | awk 'NF == 4 && $3 ~ /^[TtWi]$/')

./heapprof-report --symbols "$w/raw.heap" > "$w/symbols.txt"
named=0 labelled=0 bad=0
while read -r pc object rest; do
	[ "$object" = postgres ] || continue
	name=${rest##*<- }
	addr=$((16#$pc - 16#$bias))
	if [[ $name == postgres+0x* ]]; then
		labelled=$((labelled + 1))
	elif [ -n "${lo[$name]:-}" ]; then
		if [ "$addr" -ge "${lo[$name]}" ] && [ "$addr" -lt "${hi[$name]}" ]; then
			named=$((named + 1))
		else
			echo "WRONG: $pc (postgres+$(printf 0x%x "$addr")) labelled $name"
			bad=$((bad + 1))
		fi
	else
		echo "UNKNOWN NAME: $pc $name"
		bad=$((bad + 1))
	fi
done < "$w/symbols.txt"
echo "postgres frames: $named named inside their symbol, $labelled honest labels, $bad wrong"
[ "$bad" -eq 0 ] && [ "$named" -gt 10 ] && [ "$labelled" -gt 5 ]
