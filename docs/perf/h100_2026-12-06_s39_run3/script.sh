#!/usr/bin/env bash
# Session 39 run 3 (H100): where a stream-K tile's time goes. gate_up (28672x4096) M = 256 and qkv
# (6144x4096) M = 256, W4A16: the data-parallel 128x256 s4 (10; gate_up: 224 tiles = 1.70 waves) against
# 128x256_sk (29) and 128x128_sk (27), graph replay timing (3 alternated repetitions), then ncu of one
# launch each: duration, SM active cycles min / avg / max (balance), tensor-pipe instructions, issue
# slots, stall reasons, L2 / DRAM bytes.
set -u; R=$OUT/sk; mkdir -p $R; S=$R/summary.txt
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry tools/fp4kit || exit 3
H=build-carry/tools/fp4kit
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $S
for rep in 1 2 3; do for t in 10 29 27; do
  timeout 60 $H bench gemm --shapes llama8b.gate_up,llama8b.qkv --m 256 --mode w4a16 --tactic $t --no-baseline --no-check \
    --graph --pdl --target-ms 30 --csv --output $R/t${t}_r$rep.csv > /dev/null 2>&1; echo "t$t r$rep rc=$? t=$SECONDS" >> $S
done; done
M="sm__cycles_active.min,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_elapsed.max,gpu__time_duration.sum"
M="$M,sm__inst_executed_pipe_tensor_op_gmma.sum,smsp__inst_executed.sum,lts__t_bytes.sum,dram__bytes.sum,launch__grid_size"
M="$M,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"
for shape in llama8b.gate_up llama8b.qkv; do for t in 10 29 27; do
  timeout 120 $NCU --kernel-name regex:wgmma --launch-skip 1 --launch-count 1 --section SpeedOfLight \
    --section WarpStateStats --section SchedulerStats --metrics $M \
    $H bench gemm --shapes $shape --m 256 --mode w4a16 --tactic $t --no-baseline --no-check --warmup 1 --reps 1 \
    > $R/ncu_${shape#llama8b.}_t$t.txt 2>&1; echo "ncu $shape t$t rc=$? t=$SECONDS" >> $S
done; done
cat $S
for f in $R/ncu_*.txt; do echo "== $f"; grep -E "gpu__time_duration|sm__cycles_active|pipe_tensor|smsp__inst_executed.sum|lts__t_bytes|dram__bytes|grid_size|Issue Slots Busy|No Eligible|Stall" $f | head -24; done
tar -C $OUT -czf $OUT/run3.tgz sk && rm -rf $R
