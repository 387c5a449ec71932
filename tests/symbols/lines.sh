#!/usr/bin/env bash
# lines.sh REPORT DUMP OBJECT... -- every location heapprof-report --symbols
# gives for an address in OBJECT (a path in the dump's maps) against GNU
# addr2line -i -f: as many levels, the same names, and per level the same
# line and a file whose path ends like addr2line's (it joins the compile
# directory).  Prints "checked N levels, M wrong" and each wrong address.
set -euo pipefail
report=$1 dump=$2
shift 2
sym=$(mktemp)
trap 'rm -f "$sym" "$sym".*' EXIT
"$report" --symbols "$dump" > "$sym"
checked=0 wrong=0
# mawk has no strtonum; addresses fit a double's 53 bits
hex='function hex(s,  i, v) { v = 0; sub(/^0x/, "", s); s = tolower(s)
	for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
	return v }
'
for obj in "$@"; do
	bias=$(awk -v p="$obj" '$6 == p && $3 == "00000000" {split($1, r, "-"); print r[1]; exit}' "$dump")
	[ -n "$bias" ] || continue
	# ours: one line per address, levels "name at file:line" split by " <- "
	awk -v o="${obj##*/}" -v b="$bias" "$hex"'$2 == o && / at / {
		pc = hex($1); $1 = ""; $2 = ""; sub(/^ +/, "")
		printf "%.0f\t%s\n", pc - hex(b), $0 }' "$sym" > "$sym.ours"
	[ -s "$sym.ours" ] || continue
	cut -f1 "$sym.ours" | while read -r a; do printf '%x\n' "$a"; done |
		addr2line -a -i -f -e "$obj" > "$sym.truth"
	# truth: the same shape as ours, "(discriminator N)" dropped
	awk "$hex"'/^0x/ {if (a != "") print a "\t" l; a = sprintf("%.0f", hex($1)); l = ""; n = 0; next}
		n % 2 == 0 {f = $0; n++; next}
		{sub(/ \(discriminator [0-9]+\)$/, ""); l = l (l == "" ? "" : " <- ") f " at " $0; n++}
		END {if (a != "") print a "\t" l}' "$sym.truth" > "$sym.addr2line"
	read -r c x < <(paste "$sym.ours" "$sym.addr2line" | awk -F'\t' '
		{
			n = split($2, ours, / <- /); m = split($4, gnu, / <- /); bad = $1 != $3 || n != m
			for (i = 1; i <= n && !bad; i++) {
				sub(/ \(inline\)/, "", ours[i])
				split(ours[i], o, / at /); split(gnu[i], g, / at /)
				ol = o[2]; sub(/.*:/, "", ol); of = substr(o[2], 1, length(o[2]) - length(ol) - 1)
				gl = g[2]; sub(/.*:/, "", gl); gf = substr(g[2], 1, length(g[2]) - length(gl) - 1)
				bad = o[1] != g[1] || ol != gl || substr(gf, length(gf) - length(of) + 1) != of
			}
			levels += n
			if (bad) { wrong++; print "WRONG " $1 ": heapprof " $2 " | addr2line " $4 > "/dev/stderr" }
		}
		END {print levels + 0, wrong + 0}')
	checked=$((checked + c)) wrong=$((wrong + x))
done
echo "checked $checked levels, $wrong wrong"
[ "$wrong" -eq 0 ]
