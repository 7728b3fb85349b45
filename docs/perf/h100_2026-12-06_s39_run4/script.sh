#!/usr/bin/env bash
# Session 39 run 4 (H100): the acceptance sweeps of issues #5 and #7 on the session's final code (the same
# four commands as gpu-check BENCH=acceptance; the test binaries of this code ran in runs 1-2), then
# scripts/acceptance.py. Trimmed from a whole gpu-check to fit the device time left (~460 s).
set -u; R=$OUT/acc; mkdir -p $R; S=$R/summary.txt
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry tools/fp4kit || exit 3
H=build-carry/tools/fp4kit; $H info > $R/info.txt 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.memory,power.limit,temperature.gpu --format=csv > $R/nvidia-smi.txt
run() { local name=$1; shift; timeout 200 $H "$@" --csv --output $R/accept_$name.csv > $R/accept_$name.log 2>&1
  echo "acc_$name rc=$? t=$SECONDS" >> $S; }
run gemm_small bench gemm --shapes all --m 1,2,3,4,5,6,8,9,12,16 --mode both --graph --pdl --target-ms 30
run moe_small bench moe --preset all --t 1,2,4,8,16 --mode both --graph --pdl --target-ms 30
run gemm_mid bench gemm --shapes all --m 24,32,48,64,96,128,192,256,384,512,1024,1536 --mode both --graph --pdl --target-ms 200 --warmup-ms 100
run moe_large bench moe --preset all --t 4096 --mode both --no-reduced-check --target-ms 200 --warmup-ms 100
python3 scripts/acceptance.py $R/accept_*.csv > $R/acceptance.txt 2>&1
cat $S; grep -E '^(acceptance:|  #[57] [a-c]:)' $R/acceptance.txt
tar -C $OUT -czf $OUT/run4.tgz acc && rm -rf $R
