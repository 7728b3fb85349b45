#!/usr/bin/env bash
# Session 35 run 1 (H100): the acceptance sweep on HEAD 86b7c2a's binaries (built here, carried as
# build-carry/fp4kit-binaries.tar.xz; recipe in docs/PERF.md).
mkdir -p build-carry && tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry && \
  OUT=$OUT/gc BUILD_DIR=build-carry BENCH=acceptance BUDGET=520 BENCH_TIMEOUT=200 bash scripts/gpu-check.sh > $OUT/gc.log 2>&1
tar -C $OUT -czf $OUT/gc.tgz gc gc.log
