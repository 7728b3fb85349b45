#!/usr/bin/env bash
# Session 42 run 5 (H100): the final code (47667f4's rule: W4A16 takes the 32-row 24-token tile only where each warp
# streams <= 32 chunks; a1fb7e3 = it + docs). test_gemm, then auto at M = 17 / 20 / 24 on every shape, both modes
# (graph replay with PDL, 30 ms samples; the tactic column shows each choice).
set -u; R=$OUT/r5; mkdir -p $R; S=$R/summary.txt
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry || exit 3
H=build-carry/tools/fp4kit; $H info > $R/info.txt 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.memory,power.limit,temperature.gpu --format=csv > $R/nvidia-smi.txt
timeout 150 build-carry/tests/test_gemm > $R/test_gemm.log 2>&1; echo "test_gemm rc=$? t=$SECONDS $(grep -E '^\[  (PASSED|FAILED) ' $R/test_gemm.log | tr '\n' ' ')" >> $S
timeout 60 $H bench gemm --shapes all --m 17,20,24 --mode both --graph --pdl --no-baseline --target-ms 30 --csv --output $R/auto.csv > $R/auto.log 2>&1; echo "auto rc=$? t=$SECONDS" >> $S
cat $S; grep -v '^#' $R/auto.csv | cut -d, -f1,4,5,7,15
tar -C $OUT -czf $OUT/run5.tgz r5 && rm -rf $R
