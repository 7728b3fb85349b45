#!/usr/bin/env bash
# Session 32 run 5: ncu of the grouped GEMMs (FC1, FC2) of one DeepSeek-V3 T = 4096 W4A16 layer, HEAD vs
# fit3 (per-tile wgmma N {144, 128, 16}), with locked clocks (ncu default) and with --clock-control none.
set -u; R=$OUT/s32e; mkdir -p $R; B=gpu-bin/s32d
for f in fp4kit_base fp4kit_fit3; do xz -dc $B/$f.xz > /tmp/$f; chmod +x /tmp/$f; done
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
for cc in base none; do for v in base fit3; do
  timeout 120 $NCU --clock-control $cc --kernel-name regex:wgmma_gemm_kernel --launch-count 2 --section SpeedOfLight \
    --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__inst_executed_pipe_tensor_op_gmma.sum \
    /tmp/fp4kit_$v bench moe --preset deepseek-v3 --t 4096 --mode w4a16 --no-baseline --no-check --no-reduced-check --warmup 1 --reps 1 \
    > $R/ncu_${cc}_$v.txt 2>&1; echo "ncu $cc $v rc=$?"
  grep -E "Duration|SM Frequency|Compute \(SM\) Throughput|L2 Cache Throughput|DRAM Throughput|gpu__time_duration|cycles_elapsed.avg.per_second|gmma" $R/ncu_${cc}_$v.txt | head -20
done; done
tar -C $OUT -czf $OUT/s32e.tgz s32e; rm -rf $R
