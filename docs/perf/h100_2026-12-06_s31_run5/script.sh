#!/usr/bin/env bash
# Session 31 run 5 (the machine of run 4, warm): the four acceptance benchmarks of gpu-check's
# BENCH=acceptance, run with run 4's fp4kit_shfl (the landed code except the expert-slice kernels, which
# HEAD keeps as in fabcf61),
# judged here by scripts/acceptance.py (Marlin figures: ../shared/baselines).
set -u; R=$OUT/acc; mkdir -p $R; F=/tmp/fp4kit_shfl; [ -x $F ] || { xz -dc gpu-bin/s31c/fp4kit_shfl.xz > $F; chmod +x $F; }; nvidia-smi --query-gpu=name --format=csv,noheader; T0=$SECONDS
timeout 60 $F bench gemm --shapes all --m 1,2,3,4,5,6,8,9,12,16 --mode both --graph --pdl --target-ms 30 --csv --output $R/accept_gemm_small.csv > $R/gemm_small.log 2>&1; echo "gemm_small rc=$? $((SECONDS-T0)) s"
timeout 100 $F bench moe --preset all --t 1,2,4,8,16 --mode both --graph --pdl --target-ms 30 --csv --output $R/accept_moe_small.csv > $R/moe_small.log 2>&1; echo "moe_small rc=$? $((SECONDS-T0)) s"
timeout 150 $F bench gemm --shapes all --m 24,32,48,64,96,128,192,256,384,512,1024,1536 --mode both --graph --pdl --target-ms 200 --warmup-ms 100 --csv --output $R/accept_gemm_mid.csv > $R/gemm_mid.log 2>&1; echo "gemm_mid rc=$? $((SECONDS-T0)) s"
timeout 60 $F bench moe --preset all --t 4096 --mode both --no-reduced-check --target-ms 200 --warmup-ms 100 --csv --output $R/accept_moe_large.csv > $R/moe_large.log 2>&1; echo "moe_large rc=$? $((SECONDS-T0)) s"
python3 scripts/acceptance.py $R/accept_*.csv > $R/acceptance.txt 2>&1; grep -E "^(acceptance:|  #[57] [a-c]:)|fi-256.*MISSED" $R/acceptance.txt; tar -C $OUT -czf $OUT/acc.tgz acc && rm -rf $R
