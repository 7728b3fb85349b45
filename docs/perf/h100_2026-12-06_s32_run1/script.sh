# Session 32 run 1 (H100): the no-stage-wait diagnostic (docs/wip/per-entry-no-stage-wait-gpu-run.sh), then
# gpu-check BENCH=acceptance of HEAD 4bde1a2 (binaries built on the dev machine, carried in build-carry/).
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry && timeout 100 bash docs/wip/per-entry-no-stage-wait-gpu-run.sh > $OUT/nowait.log 2>&1; OUT=$OUT/gc BUILD_DIR=build-carry BENCH=acceptance BUDGET=440 BENCH_TIMEOUT=200 bash scripts/gpu-check.sh > $OUT/gc.log 2>&1
