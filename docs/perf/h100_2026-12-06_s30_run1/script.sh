#!/usr/bin/env bash
# Session 30 run 1: the prepared fi-256 script (test_gemm with the shared DeviceBuffer, ncu split of
# per-entry fi-256 T = 4, early-trigger A/B), test_moe with the early trigger forced on, and an ncu
# look at the 16-token decode tiles (#5 a's largest W4A16 misses: down / 8192x8192 M = 9..16).
set -u
bash docs/perf/h100_2026-12-06_s30_run1/per-entry-fi256-ncu-gpu-run.sh  # (was docs/wip/ when run)
R=$OUT/r1x; mkdir -p $R
FP4KIT_EXP_STAGE_EARLY_TRIGGER=1 timeout 120 build-carry/tests/test_moe --gtest_brief=1 > $R/test_moe_et1.log 2>&1; echo "test_moe ET=1 rc=$?"; grep -E "PASSED|FAILED|Failure" $R/test_moe_et1.log | head -8
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
for pt in "down 8" "down 16" "seed.8192x8192 16" "seed.8192x8192 8"; do
  set -- $pt
  timeout 100 $NCU --clock-control none --kernel-name regex:decode --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
    --section Occupancy --section LaunchStats --metrics smsp__inst_executed.sum,dram__bytes_read.sum \
    build-carry/tools/fp4kit bench gemm --shapes $1 --m $2 --mode w4a16 --no-baseline --no-check --warmup 2 --reps 3 \
    > $R/ncu_${1}_m$2.txt 2>&1; echo "ncu $1 M=$2 rc=$?"
  grep -E "Duration|DRAM Throughput|Issue Slots Busy|No Eligible|Executed Ipc A|inst_executed|Registers Per|L1/TEX Hit|Mem Busy|Max Bandwidth|Stall|Achieved Occ" $R/ncu_${1}_m$2.txt | head -20
done
tar -C $OUT -czf $OUT/r1x.tgz r1x; rm -rf $R
