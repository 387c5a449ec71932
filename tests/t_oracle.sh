#!/usr/bin/env bash
# t_oracle.sh -- heapprof-report against jeprof on the same dumps.
#
# tests/oracle/oracle.c (built with -g, linked with jemalloc) allocates
# through known chains and dumps with exact (lg_prof_sample:0) and sampled
# (lg_prof_sample:14) counts.  For text (bytes, MB, objects), dot and
# collapsed output, every number must equal jeprof's:
#  - the Total line and dot header / legend, verbatim;
#  - every row (but its running sum), node and edge of the program's own
#    functions, verbatim, but for whole numbers (bytes, objects, collapsed
#    values): within 1, as heapprof's rows add up to its Total;
#  - the multiset of flat values over all rows, and of collapsed values;
#  - with --cum, the program's rows in jeprof's order;
#  - the same for a later dump minus an earlier one (--base), whose header
#    says what grew and shrank, as the sums of jeprof's own stacks.
# Names outside the program may differ on purpose: jeprof names static code
# in stripped libraries after the nearest export (heapprof labels it
# honestly) and treats inline frames per library.
set -euo pipefail
. "${HP_TOP:=$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
cd "$HP_TOP"
work=$(scratch)

# bracket expressions: the same pattern serves grep -E and awk
funcs='leaf_alloc|alloc_big|mid|alloc_small_many|rec|sizes|grow|leak_more|via_inline|inl_alloc|inl_alloc [(]inline[)]|inl_alloc[[]inline[]]|worker_alloc|thread_main|main'
cc -g -O1 -fno-inline -fno-optimize-sibling-calls -fno-omit-frame-pointer -pthread \
	tests/oracle/oracle.c -ljemalloc -o "$work/oracle"
MALLOC_CONF=prof:true,prof_active:true,lg_prof_sample:0 "$work/oracle" "$work/exact.heap"
MALLOC_CONF=prof:true,prof_active:true,lg_prof_sample:14 "$work/oracle" "$work/sampled.heap"
# an earlier and a later dump of one process, for --base
MALLOC_CONF=prof:true,prof_active:true,lg_prof_sample:0 "$work/oracle" "$work/before.heap" "$work/after.heap"

jeprof_out() { jeprof "$@" --debug-syms-by-id 2>/dev/null | sed -E 's/<[0-9a-f]{16}>//g'; }

# near A B: the same lines, but whole numbers may differ by 1: heapprof's
# whole-number rows add up to the Total, each within 1 of jeprof's truncation
near() {
	awk 'NR == FNR { a[FNR] = $0; n = FNR; next }
		{ if (!(FNR in a)) { print "extra: " $0; bad = 1; next }
		  x = a[FNR]; nx = split(x, f); ny = split($0, g)
		  ok = nx == ny
		  for (i = 1; ok && i <= nx; i++)
			if (f[i] != g[i] && !(f[i] ~ /^-?[0-9]+$/ && g[i] ~ /^-?[0-9]+$/ && f[i] - g[i] <= 1 && g[i] - f[i] <= 1))
				ok = 0
		  if (!ok) { print "< " x; print "> " $0; bad = 1 } }
		END { if (FNR != n) { print "line counts differ"; bad = 1 }; exit bad }' "$1" "$2"
}

# the running-sum column depends on tie order among equal rows named differently
own_rows() { grep -E " ($funcs)\$" | awk '{$3 = ""; print}' | sort -k5 || true; }
flat_values() { awk '$1 != "0" && $1 != "0.0" {print $1}' | sort -g; }
flat_pcts() { awk '$1 != "0" && $1 != "0.0" {print $2}' | sort; }

check_text() {
	local dump=$1 j h
	shift
	j=$(jeprof_out --text "$@" "$work/oracle" "$dump")
	# the diff's explanation of its percentages is heapprof's own (checked below)
	h=$(./heapprof-report --text "$@" "$dump" | grep -v '^Diff: ')
	[ "$(head -n1 <<<"$j")" = "$(head -n1 <<<"$h")" ] || fail "total $* $dump"
	order() { grep -E " ($funcs)\$" | awk '{print $NF}'; }
	case " $* " in *" --cum "*)
		diff <(order <<<"$j") <(order <<<"$h") || fail "order by cum $* $dump"
	esac
	near <(own_rows <<<"$j") <(own_rows <<<"$h") || fail "rows $* $dump"
	near <(tail -n +2 <<<"$j" | flat_values) <(tail -n +2 <<<"$h" | flat_values) || fail "flat values $* $dump"
	diff <(tail -n +2 <<<"$j" | flat_pcts) <(tail -n +2 <<<"$h" | flat_pcts) || fail "flat shares $* $dump"
	[ "$(own_rows <<<"$h" | wc -l)" -ge "$min_rows" ] || fail "too few program rows $* $dump"
	# whole numbers: heapprof's rows add up to its Total
	case " $* " in *" --show_bytes "* | *" --inuse_objects "*)
		[ "$(awk 'NR == 1 { t = $2 } NR > 1 { s += $1 } END { print (s == t) }' <<<"$h")" = 1 ] ||
			fail "rows do not add up to the Total $* $dump"
	esac
}

# collapsed: the program's own frames of each stack, and its value
own_suffix() {
	awk -v re="^($funcs)\$" '{
		v = $NF; sub(/ [-0-9]+$/, ""); n = split($0, f, ";"); s = ""
		for (i = 1; i <= n; i++) if (f[i] ~ re) s = s (s == "" ? "" : ";") f[i]
		print s, v }' | sort -k1,1 -k2,2g
}

check_collapsed() {
	local dump=$1 j h
	shift
	j=$(jeprof_out --collapsed "$@" "$work/oracle" "$dump")
	h=$(./heapprof-report --collapsed "$@" "$dump")
	near <(own_suffix <<<"$j") <(own_suffix <<<"$h") || fail "collapsed $dump"
	grep -q '^_start;.*main;mid;alloc_big;leaf_alloc [0-9]' <<<"$h" || fail "collapsed chain $dump"
}

# dot: nodes by label, edges by (caller, callee) names
dot_view() {
	awk -v re="^($funcs)\$" '
		/^N[0-9]+ \[label=/ { id = $1; l = $0; sub(/^N[0-9]+ /, "", l); name = l
			sub(/^\[label="/, "", name); sub(/\\n.*/, "", name); nm[id] = name
			if (name ~ re) print "node", l; next }
		/^N[0-9]+ -> N[0-9]+/ { a = nm[$1]; b = nm[$3]; e = $0; sub(/^N[0-9]+ -> N[0-9]+ /, "", e)
			if (a ~ re && b ~ re) print "edge", a, b, e; next }
		NR <= 3 { print "head", $0 }' | sort
}

check_dot() {
	local dump=$1 j h
	shift
	j=$(jeprof_out --dot "$@" "$work/oracle" "$dump")
	h=$(./heapprof-report --dot --program="$work/oracle" "$@" "$dump")
	diff <(dot_view <<<"$j") <(dot_view <<<"$h") || fail "dot $* $dump"
	[ "$(dot_view <<<"$h" | grep -c '^edge')" -ge "$min_edges" ] || fail "too few edges $* $dump"
	dot -Tsvg <<<"$h" >/dev/null || fail "dot -Tsvg rejects our graph"
}

for dump in "$work/exact.heap" "$work/sampled.heap"; do
	min_rows=8
	check_text "$dump"
	check_text "$dump" --show_bytes
	check_text "$dump" --inuse_objects
	check_text "$dump" --ignore=worker
	min_rows=2
	check_text "$dump" --focus=rec
	check_text "$dump" --cum
	check_text "$dump" --cum --show_bytes
	check_collapsed "$dump"
	min_edges=5
	check_dot "$dump"
	check_dot "$dump" --inuse_objects
	min_edges=3
	check_dot "$dump" --nodefraction=0.2 --edgefraction=0.05
done
# leak hunting: the later dump minus the earlier one
dump=$work/after.heap
min_rows=3
check_text "$dump" --base="$work/before.heap" --show_bytes
check_text "$dump" --base="$work/before.heap" --drop_negative
check_text "$dump" --base="$work/before.heap"
check_text "$dump" --base="$work/before.heap" --cum
# the header explains the shares: grew and shrank as jeprof's stacks sum them, of the net
read -r grew shrank < <(jeprof_out --collapsed --base="$work/before.heap" "$work/oracle" "$dump" |
	awk '{ v = $NF } v > 0 { g += v } v < 0 { s -= v } END { print g + 0, s + 0 }')
[ "$shrank" -gt 0 ] || fail "the diff shrinks nowhere"
line="Diff: $grew B grew, $shrank B shrank (negative rows); percentages are of the net change, $((grew - shrank)) B, as in jeprof --base"
./heapprof-report --text --show_bytes --base="$work/before.heap" "$dump" | sed -n 2p | grep -xF "$line" >/dev/null ||
	fail "diff header: want '$line'"
./heapprof-report --text --drop_negative --base="$work/before.heap" "$dump" | grep '^Diff: ' >/dev/null &&
	fail "diff header without negative rows"
check_collapsed "$dump" --base="$work/before.heap"
min_edges=2
check_dot "$dump" --base="$work/before.heap"
# the growing stack leads; the freed one is negative
./heapprof-report --collapsed --base="$work/before.heap" "$dump" | sed -n 1p | grep ';main;leak_more;leaf_alloc 1310720$' >/dev/null ||
	fail "the growing stack is not the first of the diff"
./heapprof-report --collapsed --base="$work/before.heap" "$dump" | grep ';main;alloc_small_many;leaf_alloc -1024000$' >/dev/null ||
	fail "the freed stack is not negative"
echo "oracle: text (also --cum), dot and collapsed agree with jeprof, with and without --base; the diff header sums jeprof's stacks"
