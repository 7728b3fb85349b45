#!/usr/bin/env bash
# Session 25 run 1: gpu-check of HEAD 143d9c1 (every carried test binary incl. test_moe and test_quant,
# memcheck of test_quant, all four acceptance sweeps), then memcheck of the grouped-wgmma MoE tests.
set -u
mkdir -p /tmp/gc
OUT=/tmp/gc BUILD_DIR=build-carry BENCH=acceptance SANITIZE=1 BUDGET=430 BENCH_TIMEOUT=150 \
  bash scripts/gpu-check.sh > /tmp/gc/console.txt 2>&1; echo "gpu-check rc=$?" > /tmp/gc/status.txt
tail -32 /tmp/gc/console.txt
tar -xzf build-carry/fp4kit-binaries.tar.gz -C /tmp
timeout 150 compute-sanitizer --tool memcheck /tmp/tests/test_moe --gtest_filter='MoeGpu.ManyExpertsLargeBatch:MoeGpu.PdlBackToBackLayersBitIdentical:MoeGpu.GraphCaptureReplaysBitIdentical' > /tmp/gc/memcheck_moe.log 2>&1; echo "memcheck moe rc=$?"
grep -E "ERROR SUMMARY|PASSED|FAILED" /tmp/gc/memcheck_moe.log | head
tar -C /tmp -czf $OUT/gc.tgz gc
