#!/usr/bin/env bash
# Session 30 run 4 (lean): the dense decode kernels compute the warp's K slice before the PDL wait
# (kStageA, W4A4 at 1..2 tokens with K <= 16384, used to repeat two 64-bit divisions after it).
# (1) test_gemm of the new tree; (2) A/B base vs new, M = 1, 2, both modes, graph + PDL.
# Prepared in session 30, not run (no device time left). To run it: build HEAD, then
#   mkdir -p gpu-bin/s30c && xz -T2 -c build/tools/fp4kit > gpu-bin/s30c/fp4kit_base.xz
#   git apply docs/wip/decode-slice-bounds-before-wait.patch && ninja -C build tools/fp4kit tests/test_gemm
#   xz -T2 -c build/tools/fp4kit > gpu-bin/s30c/fp4kit_new.xz; xz -T2 -c build/tests/test_gemm > gpu-bin/s30c/test_gemm_new.xz
#   git apply -R docs/wip/decode-slice-bounds-before-wait.patch
# and run `bash docs/wip/decode-slice-bounds-gpu-run.sh` with carry ["gpu-bin/s30c"] (~100 s).
set -u; R=$OUT/r4; mkdir -p $R/ab; B=gpu-bin/s30c
for f in fp4kit_base fp4kit_new test_gemm_new; do xz -dc $B/$f.xz > /tmp/$f; chmod +x /tmp/$f; done
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
timeout 100 /tmp/test_gemm_new --gtest_brief=1 > $R/test_gemm.log 2>&1; echo "test_gemm rc=$?"; grep -E "PASSED|FAILED|SKIPPED|Failure" $R/test_gemm.log | head -6
M="bench gemm --shapes all --m 1,2 --mode both --graph --pdl --no-baseline --no-check --target-ms 20 --csv"
for rep in 1 2 3; do
  timeout 40 /tmp/fp4kit_base $M --output $R/ab/base_r$rep.csv >/dev/null 2>&1 || echo "base $rep rc=$?"
  timeout 40 /tmp/fp4kit_new $M --output $R/ab/new_r$rep.csv >/dev/null 2>&1 || echo "new $rep rc=$?"
  python3 scripts/ab_table.py --base base $R/ab/*_r*.csv > $R/ab.txt 2>&1
done
cat $R/ab.txt
tar -C $R -czf $R/ab.tgz ab && rm -rf $R/ab
