#!/usr/bin/env bash
# Session 39 run 4 (H100): gpu-check BENCH=acceptance of the session's final code (every test binary, the
# demo, the acceptance sweeps of issues #5 and #7).
set -u
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry || exit 3
OUT=$OUT/gc BUILD_DIR=build-carry BENCH=acceptance BUDGET=${BUDGET:-450} BENCH_TIMEOUT=200 bash scripts/gpu-check.sh > $OUT/gc.log 2>&1
echo "gpu-check rc=$? t=$SECONDS"
tail -30 $OUT/gc.log
tar -C $OUT -czf $OUT/run4.tgz gc gc.log && rm -rf $OUT/gc
