#!/usr/bin/env bash
# Session 31 run 2: gpu-check BENCH=acceptance of HEAD's binaries (build-carry/fp4kit-binaries.tar.xz).
set -u
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry || exit 1
OUT=$OUT/gc BUILD_DIR=build-carry BENCH=acceptance BUDGET=${BUDGET:-470} BENCH_TIMEOUT=200 bash scripts/gpu-check.sh > $OUT/gc.log 2>&1
echo "gpu-check rc=$?"; tail -45 $OUT/gc.log
