#!/usr/bin/env bash
# Session 25 run 7: gpu-check of 479884e (every carried test binary, all four acceptance sweeps with the
# new timing of the long ones); no memcheck (run 1 / run 6 covered it).
set -u
mkdir -p /tmp/gc
OUT=/tmp/gc BUILD_DIR=build-carry BENCH=acceptance BUDGET=420 BENCH_TIMEOUT=200 \
  bash scripts/gpu-check.sh > /tmp/gc/console.txt 2>&1; echo "gpu-check rc=$?" > /tmp/gc/status.txt
tail -30 /tmp/gc/console.txt
tar -C /tmp -czf $OUT/gc.tgz gc
