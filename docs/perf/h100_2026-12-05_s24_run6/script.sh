#!/usr/bin/env bash
# Session 24 run 6: final binary: GemmGpu.* (PDL chain test included), gemm_mid and gemm_small acceptance sweeps.
set -u
R=/tmp/r6; mkdir -p $R; tar -xzf build-carry/fp4kit-binaries.tar.gz -C /tmp
F=/tmp/tools/fp4kit
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $R/smi.txt
/tmp/tests/test_gemm --gtest_filter='GemmGpu.*' --gtest_brief=1 > $R/test_gemm.log 2>&1; echo "test_gemm rc=$?"
grep -E "FAILED|PASSED|differs" $R/test_gemm.log | head -8
timeout 100 $F bench gemm --shapes all --m 24,32,48,64,96,128,192,256,384,512,1024,1536 --mode both --graph --pdl --target-ms 30 --csv --output $R/accept_gemm_mid.csv > $R/accept_gemm_mid.log 2>&1; echo "gemm_mid rc=$?"
timeout 100 $F bench gemm --shapes all --m 1,2,3,4,5,6,8,9,12,16 --mode both --graph --pdl --target-ms 30 --csv --output $R/accept_gemm_small.csv > $R/accept_gemm_small.log 2>&1; echo "gemm_small rc=$?"
