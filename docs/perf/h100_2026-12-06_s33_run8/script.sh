#!/usr/bin/env bash
# Session 33 run 8: the final store-warp build (128x64 grouped tile excluded) — grouped GEMM and MoE
# tests, memcheck, and the MoE T = 64 / 4096 points against run 7's figures.
set -u; R=$OUT; B=gpu-bin/s33r8; mkdir -p /tmp/x && tar -xJf $B/bin.tar.xz -C /tmp/x
nvidia-smi --query-gpu=name --format=csv,noheader
/tmp/x/tools/fp4kit info | head -2
timeout 60 /tmp/x/tests/test_gemm --gtest_filter='*Grouped*' > $R/test_gemm.log 2>&1; echo "test_gemm grouped rc=$?"
timeout 150 /tmp/x/tests/test_moe > $R/test_moe.log 2>&1; echo "test_moe rc=$?"
grep -hE "^\[  (PASSED|FAILED)|FAILED  \]" $R/test_gemm.log $R/test_moe.log | head
timeout 90 compute-sanitizer --tool memcheck /tmp/x/tests/test_moe --gtest_filter='MoeGpu.ManyExpertsLargeBatch' > $R/memcheck.log 2>&1; echo "memcheck rc=$?"; tail -1 $R/memcheck.log
timeout 60 /tmp/x/tools/fp4kit bench moe --preset mixtral-8x7b,fi-256 --t 64,1024 --mode w4a16 --no-baseline --no-check --no-reduced-check --target-ms 50 --csv > $R/mid.csv 2>&1; grep fp4kit $R/mid.csv | cut -d, -f1,6,8,9
