#!/usr/bin/env bash
# Session 42 run 3 (H100): the acceptance sweeps of #5 / #7 (gpu-check BENCH=acceptance's four commands) with
# 9b5169d's binary (the 32-row 24-token rule), scored afterwards on the dev machine with the Marlin figures.
set -u; R=$OUT/r3; mkdir -p $R; S=$R/summary.txt
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry || exit 3
H=build-carry/tools/fp4kit; $H info > $R/info.txt 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.memory,power.limit,temperature.gpu --format=csv > $R/nvidia-smi.txt
run() { local name=$1; shift; timeout 200 $H "$@" --csv --output $R/accept_$name.csv > $R/accept_$name.log 2>&1
  echo "acc_$name rc=$? t=$SECONDS" >> $S; }
run gemm_small bench gemm --shapes all --m 1,2,3,4,5,6,8,9,12,16 --mode both --graph --pdl --target-ms 30
run moe_small bench moe --preset all --t 1,2,4,8,16 --mode both --graph --pdl --target-ms 30
run gemm_mid bench gemm --shapes all --m 24,32,48,64,96,128,192,256,384,512,1024,1536 --mode both --graph --pdl --target-ms 200 --warmup-ms 100
run moe_large bench moe --preset all --t 4096 --mode both --no-reduced-check --target-ms 200 --warmup-ms 100
cat $S
tar -C $OUT -czf $OUT/run3.tgz r3 && rm -rf $R
