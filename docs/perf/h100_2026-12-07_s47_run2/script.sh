#!/usr/bin/env bash
# Session 47 run 2 (H100): carry ["build-carry"] with fp4kit-binaries.tar.xz = HEAD's tools/fp4kit + tests/test_gemm
# and s46.tar.xz = tools/fp4kit_s46 (763763b, session 46's rules; same picks as c9cfd86).
# 1) test_gemm; 2) narrow layers, auto path, s46 vs HEAD alternated x2, both modes, M = 1..32 with the CPU check
#    (the 8-token tile in passes at 9..32, W4A4's dp rule past K = 4096); 3) every tactic at M = 40 / 48 / 64 on
#    narrow layers (W4A16): does the 8-token tile keep winning past 32 tokens? One tarball.
set -u; R=$OUT/r2; mkdir -p $R; S=$R/summary.txt
pack() { (cd $OUT && tar -czf r2.tgz r2); }
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry && tar -xJf build-carry/s46.tar.xz -C build-carry || exit 3
H=build-carry/tools/fp4kit; B=build-carry/tools/fp4kit_s46; $H info > $R/info.txt 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.memory,power.limit --format=csv > $R/nvidia-smi.txt
echo "gpu $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" >> $S
timeout 100 build-carry/tests/test_gemm > $R/test_gemm.log 2>&1; echo "test_gemm rc=$? t=$SECONDS $(grep -E '^\[  (PASSED|FAILED) ' $R/test_gemm.log | tr '\n' ' ')" >> $S; pack
SH=1024x4096,2048x2048,4096x1024,512x4096,2048x8192,2048x14336,1024x14336,4096x2048,1024x1024
g() { local name=$1 bin=$2; timeout 90 $bin bench gemm --shapes $SH --m 1,8,9,12,16,17,20,24,28,32 --mode both --graph --pdl --no-baseline --target-ms 30 --csv --output $R/$name.csv > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS $(grep -c ',ok,' $R/$name.csv) ok" >> $S; }
for r in 1 2; do g s46_r$r $B; g head_r$r $H; done
python3 scripts/ab_table.py --col graph_us --base s46 $R/s46_r*.csv $R/head_r*.csv > $R/ab_narrow.txt 2>&1; pack
timeout 150 $H bench gemm --shapes 1024x4096,2048x2048,4096x1024,2048x8192 --m 40,48,64 --mode w4a16 --tactic all --graph --pdl --no-baseline --no-check --target-ms 20 --csv --output $R/sweep_m64.csv > $R/sweep_m64.log 2>&1; echo "sweep rc=$? t=$SECONDS" >> $S; pack
cat $S; grep -- '->' $R/ab_narrow.txt; tail -2 $R/ab_narrow.txt
rm -rf $R; true
