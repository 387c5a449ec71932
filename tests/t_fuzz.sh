#!/usr/bin/env bash
# t_fuzz.sh -- run the libFuzzer target (ASan + UBSan) from the committed seed
# corpus for FUZZ_SECONDS (default 60).  Any crash, leak or sanitizer report
# fails the test.
set -uo pipefail
cd "$HP_TOP/fuzz"
make -s clean
make -s fuzz_parse
make -s run SECONDS="${FUZZ_SECONDS:-60}" > fuzz.log 2>&1
status=$?
grep -E 'ERROR|SUMMARY' fuzz.log || true
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' fuzz.log)
rm -rf new-corpus fuzz.log
[ "$status" = 0 ] || exit "$status"
echo "fuzz: $runs executions in ${FUZZ_SECONDS:-60} s (ASan, UBSan), no finding"

