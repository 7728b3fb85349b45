#!/usr/bin/env bash
# Session 38 run 3 (warm H200 of runs 1-2): the full test_gemm of the coalesced-partials build (skc), and
# compute-sanitizer memcheck of one two-way split with the workspace path forced.
set -u; R=$OUT/r3; mkdir -p $R; [ -x /tmp/test_gemm_skc ] || { xz -dc gpu-bin/s38/test_gemm_skc.xz > /tmp/test_gemm_skc; chmod +x /tmp/test_gemm_skc; }
S=$R/summary.txt; timeout 220 /tmp/test_gemm_skc > $R/test_gemm_skc_full.txt 2>&1; echo "test_gemm_skc full rc=$? t=$SECONDS" >> $S
grep -E "PASSED|FAILED|SKIPPED \]" $R/test_gemm_skc_full.txt | tail -8 >> $S
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
FP4KIT_NO_CLUSTER_SPLITK=1 timeout 120 $CS --tool memcheck /tmp/test_gemm_skc --gtest_filter='GemmGpu.TwoWayClusterSplitOneTactic' > $R/memcheck_ws.txt 2>&1
echo "memcheck ws rc=$? t=$SECONDS" >> $S; tail -4 $R/memcheck_ws.txt >> $S; cat $S; tar -C $OUT -czf $OUT/run3.tgz r3 && rm -rf $R
