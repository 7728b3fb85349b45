#!/usr/bin/env bash
# Session 27 run 2: gpu-check (every carried test binary, the four acceptance sweeps) of the W4A4
# per-warp slice staging + e2m1x8 decode (K <= 16384 in-kernel), then 8192x28672 / down W4A4 M = 1, 2
# twice (the K limit's neighbours).
set -u
mkdir -p /tmp/gc
OUT=/tmp/gc BUILD_DIR=build-carry BENCH=acceptance BUDGET=420 BENCH_TIMEOUT=200 \
  bash scripts/gpu-check.sh > /tmp/gc/console.txt 2>&1; echo "gpu-check rc=$?" > /tmp/gc/status.txt
tail -28 /tmp/gc/console.txt
F=build-carry/tools/fp4kit; [ -x $F ] || tar -xzf build-carry/fp4kit-binaries.tar.gz -C build-carry
R=/tmp/gc/klimit; mkdir -p $R
for rep in 1 2; do
  timeout 40 $F bench gemm --shapes 8192x28672,down,8192x8192 --m 1,2 --mode w4a4 --graph --pdl --no-baseline --target-ms 30 --csv --output $R/new_r$rep.csv > /dev/null 2>&1 || echo "rc=$?"
done
python3 scripts/ab_table.py $R/new_r*.csv | tail -8
tar -C /tmp -czf $OUT/gc.tgz gc
