#!/usr/bin/env bash
# Session 32 (prepared, not run: no device time left). Where the grouped 128x144 tile's time goes at MoE
# T = 4096 (#7 c), now that neither its tensor work (per-tile wgmma N: tensor-busy -8 %, duration -2 %)
# nor its activation bytes (one map per width: ~2 %) set it (docs/PERF.md session 32 runs 5-7): ncu's
# warp-state and scheduler sections of DeepSeek-V3's FC1 and FC2 (the first two wgmma launches of one
# layer), W4A16 and W4A4. Look at: the consumers' stall reasons (long scoreboard on the stage's
# shared loads, the full-barrier wait = data late, wait_group = tensor busy, barrier = the epilogue),
# issue-slot use, and the producer's share. ~60 s of GPU with binaries from gpu-check's pack.
# Usage on the GPU machine: BIN=build-carry/tools/fp4kit bash docs/wip/grouped-144-ncu-stalls-gpu-run.sh
set -u; R=$OUT/ncu_stalls; mkdir -p $R; BIN=${BIN:-build-carry/tools/fp4kit}
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
for mode in w4a16 w4a4; do
  timeout 200 $NCU --kernel-name regex:wgmma_gemm_kernel --launch-count 2 --section SpeedOfLight \
    --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section Occupancy \
    --metrics smsp__inst_executed.sum,sm__inst_executed_pipe_tensor_op_gmma.sum \
    $BIN bench moe --preset deepseek-v3 --t 4096 --mode $mode --no-baseline --no-check --no-reduced-check \
    --warmup 1 --reps 1 > $R/ncu_$mode.txt 2>&1; echo "ncu $mode rc=$?"
  grep -E "Duration|Issue Slots Busy|No Eligible|Active Warps Per|Eligible Warps|Stall|Compute \(SM\)|L2 Cache Throughput" \
    $R/ncu_$mode.txt | head -30
done
tar -C $OUT -czf $OUT/ncu_stalls.tgz ncu_stalls && rm -rf $R
