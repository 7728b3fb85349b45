# Run 2 (session 45, same warm H100 right after run 1; run 1's $OUT held more files than come back, so
# its summary / test log / sweep were repeated here, packed in one tarball). carry ["build-carry"] (binary 17ee0b8).
set -u; R=$OUT/r2; mkdir -p $R; tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry; H=build-carry/tools/fp4kit
timeout 120 build-carry/tests/test_gemm > $R/test_gemm.log 2>&1; echo "test_gemm rc=$? t=$SECONDS $(grep -E '^\[  (PASSED|FAILED) ' $R/test_gemm.log | tr '\n' ' ')" >> $R/summary.txt
grep -E '^\[  FAILED|ShortKSplitShrink|workspace' $R/test_gemm.log | head -20 >> $R/summary.txt
FP4KIT_WGMMA_SPLIT_SHRINK=1 timeout 60 build-carry/tests/test_gemm --gtest_filter='*Auto*:*Split*' > $R/test_gemm_shrink.log 2>&1
echo "test_gemm_shrink rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $R/test_gemm_shrink.log | tr '\n' ' ')" >> $R/summary.txt
timeout 200 $H bench gemm --shapes gate_up,seed.8192x28672,seed.8192x8192 --m 24,32 --mode both --tactic all --graph --pdl --no-baseline --no-check --target-ms 20 --csv --output $R/sweep.csv > $R/sweep.log 2>&1
echo "sweep rc=$? t=$SECONDS" >> $R/summary.txt; cd $OUT && tar -czf r2.tgz r2 && rm -rf r2
