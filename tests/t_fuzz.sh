#!/usr/bin/env bash
# t_fuzz.sh -- run the libFuzzer target (ASan + UBSan) from the committed seed
# corpus for FUZZ_SECONDS (default 60).  Any crash, leak or sanitizer report
# fails the test.
set -euo pipefail
cd "$HP_TOP/fuzz"
make -s clean
make -s fuzz_parse
make -s run SECONDS="${FUZZ_SECONDS:-60}" 2>&1 | tee fuzz.log | grep -E '^stat::number_of_executed_units|ERROR|SUMMARY' || true
status=${PIPESTATUS[0]}
rm -rf new-corpus fuzz.log
exit "$status"
