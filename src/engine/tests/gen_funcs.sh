#!/bin/sh
# gen_funcs.sh N DIR -- a hostile object and a dump that uses it.
#
# DIR/libhpfuncs.so: N functions hp_fn_0 .. hp_fn_N-1 of 16 bytes each, with
# symbols, .eh_frame FDEs and DWARF (one compile unit per 1,000 functions,
# a subprogram and line rows for each), from generated assembly through
# gcc -g -shared: tens of thousands of functions assemble in seconds where C
# would take minutes.  DIR/funcs.heap: a heap_v2 dump whose maps name it at
# 0x7f0000000000 and whose stacks of 8 frames hit every function once.
set -eu
n=$1 dir=$(cd "$2" && pwd)
per=1000
i=0
while [ "$i" -lt "$n" ]; do
	awk -v from="$i" -v to="$((i + per < n ? i + per : n))" 'BEGIN {
		printf "\t.text\n"
		for (k = from; k < to; k++)
			printf "\t.globl hp_fn_%d\n\t.type hp_fn_%d, @function\n\t.p2align 4\nhp_fn_%d:\n\t.cfi_startproc\n\tpushq %%rbp\n\tmovq %%rsp, %%rbp\n\tcall hp_fn_%d@PLT\n\tpopq %%rbp\n\tret\n\t.cfi_endproc\n\t.size hp_fn_%d, .-hp_fn_%d\n", k, k, k, (k + 1) % to, k, k
		printf "\t.section .note.GNU-stack,\"\",@progbits\n"
	}' >"$dir/funcs_$i.s"
	i=$((i + per))
done
gcc -g -shared -nostdlib -o "$dir/libhpfuncs.so" "$dir"/funcs_*.s
rm -f "$dir"/funcs_*.s
size=$(stat -c %s "$dir/libhpfuncs.so")
nm --defined-only "$dir/libhpfuncs.so" | awk -v path="$dir/libhpfuncs.so" -v size="$size" '
	$3 ~ /^hp_fn_/ { addr[n++] = $1 }
	END {
		printf "heap_v2/524288\n  t*: %d: %d [0: 0]\n", n, 100 * n
		for (i = 0; i < n; i++) {
			if (i % 8 == 0) printf "@"
			# addresses in hex text: base 0x7f0000000000 plus the symbol value (< 2^32)
			printf " 0x7f00%08x", ("0x" addr[i]) + 9
			if (i % 8 == 7 || i == n - 1) printf "\n  t*: 1: 100 [0: 0]\n"
		}
		printf "\nMAPPED_LIBRARIES:\n7f0000000000-7f00%08x r-xp 00000000 08:01 1 %s\n",
			int((size + 4095) / 4096) * 4096, path
	}' >"$dir/funcs.heap"
