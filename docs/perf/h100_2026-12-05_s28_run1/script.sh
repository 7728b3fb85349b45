#!/usr/bin/env bash
# Next GPU session, run 1 (correctness, ~300 s): carry ["gpu-bin/s29", "gpu-bin/s29run1.sh"].
# Binaries (session 28, xz, built from 3a246ad): fp4kit_head / test_moe_testonly = HEAD (+ the residency test),
# test_moe_fix / fp4kit_fix = + docs/wip/moe-pdl-ordering.patch + fused-decode-dispense-first-units.patch,
# test_gemm_ingrid / fp4kit_ingrid = + docs/wip/w4a4-arrange-in-grid.patch (claim-based barrier),
# fp4kit_micro_handoff = bench/micro/grid_handoff.cu (session 27's all-CTA barrier design).
# 1. the fused-decode residency test on the head kernels (expected: FAILS, holder timeout = deadlock);
# 2. test_moe of the fix (all must pass, the residency test included);
# 3. test_gemm of the ingrid patch (all; includes the public grouped GEMM tests of session 28, never run
#    on a GPU before, and GemmGpu.InGridArrangementFinishesOnTheSmsLeftFree);
# 4. compute-sanitizer memcheck of the grouped GEMM GPU tests; 5. the hand-off micro.
set -u
R=${OUT:-/tmp}/s29r1; mkdir -p $R; N=gpu-bin/s29; X=/tmp/s29; mkdir -p $X
for f in $N/*.xz; do b=$(basename $f .xz); [ -x $X/$b ] || { { xz -dc $f 2>/dev/null || python3 -c "import lzma,sys; sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())" $f; } > $X/$b; chmod +x $X/$b; }; done
timeout 60 $X/test_moe_testonly --gtest_filter='*SmsLeftFree*' > $R/resid_head.log 2>&1; echo "1. residency test, head kernels: rc=$? (expected non-zero)"
grep -E "deadlock|OK \]|FAILED \]" $R/resid_head.log | head -4
timeout 200 $X/test_moe_fix --gtest_brief=1 > $R/test_moe_fix.log 2>&1; echo "2. test_moe (fix): rc=$?"
grep -E "FAILED|PASSED|SKIPPED" $R/test_moe_fix.log | head -8
timeout 120 $X/test_gemm_ingrid --gtest_brief=1 > $R/test_gemm_ingrid.log 2>&1; echo "3. test_gemm (ingrid + grouped API): rc=$?"
grep -E "FAILED|PASSED|SKIPPED" $R/test_gemm_ingrid.log | head -8
S=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 200 $S --tool memcheck $X/test_gemm_ingrid --gtest_filter='*GroupedGemmGpuApi*:*GroupedGemmGpuGraph*' > $R/memcheck_grouped.log 2>&1
echo "4. memcheck grouped API: rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $R/memcheck_grouped.log | head -4
timeout 60 $X/fp4kit_micro_handoff > $R/micro.txt 2>&1; echo "5. micro rc=$?"; cat $R/micro.txt | tail -15
cd ${OUT:-/tmp} && tar czf s29r1.tgz s29r1 && rm -rf s29r1
