#!/usr/bin/env bash
# Session 29 run 2 (H100, right after run 1 on the same machine): gpu-check BENCH=acceptance with the
# CLI of HEAD 07fe1f5 (gpu-bin/s30/fp4kit_head.xz) for every bench, and the tests of the run-1 build
# (HEAD + the two docs/wip patches of run 1) with FP4KIT_MOE_CLUSTER_STAGING=0, i.e. HEAD's MoE paths.
tar -xzf build-carry/fp4kit-binaries.tar.gz -C build-carry && xz -dc gpu-bin/s30/fp4kit_head.xz > build-carry/tools/fp4kit && chmod +x build-carry/tools/fp4kit && mkdir -p /tmp/gc && FP4KIT_MOE_CLUSTER_STAGING=0 OUT=/tmp/gc BUILD_DIR=build-carry BENCH=acceptance BUDGET=420 BENCH_TIMEOUT=200 bash scripts/gpu-check.sh > /tmp/gc/console.txt 2>&1; echo "gpu-check rc=$?"; tail -30 /tmp/gc/console.txt; tar -C /tmp -czf $OUT/gc.tgz gc
