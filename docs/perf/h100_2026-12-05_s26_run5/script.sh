#!/usr/bin/env bash
# Session 26 run 5: compute-sanitizer on the final binary's W4A16 ragged tests, whose cases now take the
# A ring with 2 and 4 warps per row block (K = 1040 / 2064, 8208x4160): memcheck and racecheck.
set -u
R=/tmp/r5; mkdir -p $R; tar -xzf build-carry/r3.tgz -C $R
F='GemmGpu.W4A16RaggedAllTactics'
timeout 200 compute-sanitizer --tool memcheck $R/test_gemm --gtest_filter=$F > $R/memcheck.log 2>&1; echo "memcheck rc=$?"
grep -E "ERROR SUMMARY|PASSED|FAILED" $R/memcheck.log | head -3
timeout 300 compute-sanitizer --tool racecheck $R/test_gemm --gtest_filter=$F > $R/racecheck.log 2>&1; echo "racecheck rc=$?"
grep -E "RACECHECK SUMMARY|ERROR SUMMARY|PASSED|FAILED" $R/racecheck.log | head -3
rm -f $R/fp4kit $R/test_gemm
tar -C /tmp -czf $OUT/r5.tgz r5
