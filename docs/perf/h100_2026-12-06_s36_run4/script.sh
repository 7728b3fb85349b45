#!/usr/bin/env bash
# Session 36 run 4 (H100): acceptance sweep of e4c9691 (binaries built on the dev machine, carried in build-carry/).
mkdir -p build-carry && tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry && OUT=$OUT/gc BUILD_DIR=build-carry BENCH=acceptance BUDGET=520 BENCH_TIMEOUT=200 bash scripts/gpu-check.sh > $OUT/gc.log 2>&1; tail -25 $OUT/gc.log; tar -C $OUT -czf $OUT/gc.tgz gc gc.log
