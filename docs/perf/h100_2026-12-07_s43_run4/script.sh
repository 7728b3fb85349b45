#!/usr/bin/env bash
# Session 43 run 4 (H100): sanitizers on the two-stage-step kernels. 1) test_gemm (with the new
# GemmGpu.TwoStageStepClusterSplit: 128x24 s12 k128, 2-way cluster split-K, the last pair past K);
# 2) compute-sanitizer racecheck of that test; 3) memcheck of the auto path on ragged shapes (run 3's had an
# invalid N) and of tactics 70 / 72 / 73 forced.
set -u; R=$OUT/r4; mkdir -p $R; S=$R/summary.txt
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry || exit 3
H=build-carry/tools/fp4kit; $H info > $R/info.txt 2>&1
timeout 200 build-carry/tests/test_gemm > $R/test_gemm.log 2>&1; echo "test_gemm rc=$? t=$SECONDS $(grep -E '^\[  (PASSED|FAILED) ' $R/test_gemm.log | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED' $R/test_gemm.log | head -20 >> $S
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 150 $SAN --tool racecheck build-carry/tests/test_gemm --gtest_filter=GemmGpu.TwoStageStepClusterSplit > $R/racecheck.log 2>&1
echo "racecheck rc=$? t=$SECONDS $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|^\[  (PASSED|FAILED)' $R/racecheck.log | tr '\n' ' ')" >> $S
timeout 90 $SAN --tool memcheck $H bench gemm --shapes 4112x4160,8208x8224 --m 40,64 --mode both --reps 2 --warmup 1 --no-baseline > $R/memcheck_auto.log 2>&1
echo "memcheck_auto rc=$? t=$SECONDS $(grep -E 'ERROR SUMMARY' $R/memcheck_auto.log | tr '\n' ' ') $(grep -c k128 $R/memcheck_auto.log) k128 rows" >> $S
for t in 70 72 73; do
  timeout 60 $SAN --tool memcheck $H bench gemm --shapes 1008x4160,8208x1056 --m 20,33,64 --tactic $t --mode both --reps 2 --warmup 1 --no-baseline > $R/memcheck_t$t.log 2>&1
  echo "memcheck_t$t rc=$? t=$SECONDS $(grep -E 'ERROR SUMMARY' $R/memcheck_t$t.log | tr '\n' ' ')" >> $S
done
cat $S
tar -C $OUT -czf $OUT/run4.tgz r4 && rm -rf $R
