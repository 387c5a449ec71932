#!/usr/bin/env bash
# t_fuzz.sh -- run the libFuzzer targets (ASan + UBSan), the heap_v2 parser's,
# the prof_recent JSON reader's, the symbol index loader's and the history
# tick reader's, each from its committed seed corpus for
# FUZZ_SECONDS (default 60).  Any crash, leak or sanitizer report fails the
# test.
set -uo pipefail
cd "$HP_TOP/fuzz"
make -s clean
make -s fuzz_parse fuzz_recent fuzz_symindex fuzz_history
make -s run SECONDS="${FUZZ_SECONDS:-60}" > fuzz.log 2>&1
status=$?
grep -E 'ERROR|SUMMARY' fuzz.log || true
read -r parse recent symindex history < <(sed -n 's/^stat::number_of_executed_units: *//p' fuzz.log | tr '\n' ' ')
rm -rf new-corpus fuzz.log
[ "$status" = 0 ] || exit "$status"
echo "fuzz: ${parse:-?} (heap_v2) and ${recent:-?} (prof_recent) and ${symindex:-?} (symbol index) and ${history:-?} (history ticks) executions in ${FUZZ_SECONDS:-60} s each (ASan, UBSan), no finding"
