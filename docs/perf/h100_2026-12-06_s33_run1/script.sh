#!/usr/bin/env bash
# Session 33 run 1: test_moe of HEAD (the 39dfa1c mend), per-kernel durations of one MoE layer at
# T = 4096 (DeepSeek-V3, Qwen3.6, W4A16 / W4A4), then the prepared ncu stall look at the grouped
# 144-token tile (docs/wip/grouped-144-ncu-stalls-gpu-run.sh).
set -u
D=gpu-bin/s33r1; mkdir -p $D/x; tar -xJf $D/bin.tar.xz -C $D/x; BIN=$D/x/tools/fp4kit
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader | tee $OUT/gpu.txt
$BIN info > $OUT/info.txt 2>&1; head -3 $OUT/info.txt
timeout 200 $D/x/tests/test_moe > $OUT/test_moe.txt 2>&1; echo "test_moe rc=$?"; tail -3 $OUT/test_moe.txt
for p in deepseek-v3 qwen3.6-35b-a3b; do for mode in w4a16 w4a4; do
  timeout 120 $NCU --clock-control none --metrics gpu__time_duration.sum --csv \
    $BIN bench moe --preset $p --t 4096 --mode $mode --no-baseline --no-check --no-reduced-check \
    --warmup 1 --reps 1 > $OUT/dur_${p}_$mode.csv 2>&1; echo "dur $p $mode rc=$?"
done; done
for mode in w4a16 w4a4; do
  timeout 150 $NCU --clock-control none --kernel-name regex:wgmma_gemm_kernel --launch-count 2 --section SpeedOfLight \
    --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section Occupancy \
    --metrics smsp__inst_executed.sum,sm__inst_executed_pipe_tensor_op_gmma.sum \
    $BIN bench moe --preset deepseek-v3 --t 4096 --mode $mode --no-baseline --no-check --no-reduced-check \
    --warmup 1 --reps 1 > $OUT/ncu_$mode.txt 2>&1; echo "ncu $mode rc=$?"
  grep -E "Duration|Issue Slots Busy|No Eligible|Active Warps Per|Eligible Warps|Stall|Compute \(SM\)|L2 Cache Throughput" \
    $OUT/ncu_$mode.txt | head -30
done
