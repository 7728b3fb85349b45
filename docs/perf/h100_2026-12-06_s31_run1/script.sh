#!/usr/bin/env bash
# Session 30 (prepared, not run: no device time left). Two patches that shorten the path from the PDL
# wait to the first loads, one binary with both (they touch different kernels):
#   docs/wip/decode-slice-bounds-before-wait.patch: the dense decode kernel's K-slice bounds before the
#     wait (kStageA, W4A4 at M = 1..2, K <= 16384: 126-134 -> 53-61 instructions from the wait to the
#     first A load);
#   docs/wip/arrange-scale-word-wait-later.patch: the W4A4 arrangement kernel (M = 3..16) computes its
#     indices before the wait and reads its four scale bytes as one word (158 -> 51 instructions, no
#     division after the wait).
# (1) test_gemm of the new tree; (2) A/B base vs new, M = 1, 2, 3, 8, 9, 16, both modes, graph + PDL
# (W4A16 is the control: its kernels change only by the slice bounds' registers).
# To run it: build HEAD, then
#   mkdir -p gpu-bin/s30c && xz -T2 -c build/tools/fp4kit > gpu-bin/s30c/fp4kit_base.xz
#   git apply docs/wip/decode-slice-bounds-before-wait.patch docs/wip/arrange-scale-word-wait-later.patch
#   ninja -C build tools/fp4kit tests/test_gemm
#   xz -T2 -c build/tools/fp4kit > gpu-bin/s30c/fp4kit_new.xz; xz -T2 -c build/tests/test_gemm > gpu-bin/s30c/test_gemm_new.xz
#   git apply -R docs/wip/decode-slice-bounds-before-wait.patch docs/wip/arrange-scale-word-wait-later.patch
# and run `bash docs/wip/decode-front-path-gpu-run.sh` with carry ["gpu-bin/s30c"] (~250 s).
set -u; R=$OUT/r4; mkdir -p $R/ab; B=gpu-bin/s31a
for f in fp4kit_base fp4kit_new test_gemm_new; do xz -dc $B/$f.xz > /tmp/$f; chmod +x /tmp/$f; done
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
timeout 100 /tmp/test_gemm_new --gtest_brief=1 > $R/test_gemm.log 2>&1; echo "test_gemm rc=$?"; grep -E "PASSED|FAILED|SKIPPED|Failure" $R/test_gemm.log | head -6
# The arrangement's 32-bit scale loads and the moved waits: memcheck of the W4A4 GEMM tests (ragged K).
timeout 150 compute-sanitizer --tool memcheck /tmp/test_gemm_new --gtest_brief=1 --gtest_filter='*W4A4*' > $R/memcheck_w4a4.log 2>&1; echo "memcheck rc=$?"; tail -2 $R/memcheck_w4a4.log
M="bench gemm --shapes all --m 1,2,3,8,9,16 --mode both --graph --pdl --no-baseline --no-check --target-ms 20 --csv"
for rep in 1 2 3; do
  timeout 80 /tmp/fp4kit_base $M --output $R/ab/base_r$rep.csv >/dev/null 2>&1 || echo "base $rep rc=$?"
  timeout 80 /tmp/fp4kit_new $M --output $R/ab/new_r$rep.csv >/dev/null 2>&1 || echo "new $rep rc=$?"
  python3 scripts/ab_table.py --base base $R/ab/*_r*.csv > $R/ab.txt 2>&1
done
cat $R/ab.txt
tar -C $R -czf $R/ab.tgz ab && rm -rf $R/ab
