#!/usr/bin/env bash
# Session 33 run 10: the quantize_block16 mend (shared body of the one-thread-per-block W4A4 quantize
# kernels; SASS 380 -> 379 instructions per loop) — MoE tests and ncu of the two kernels vs HEAD 74008c8.
set -u; B=gpu-bin/s33r10; mkdir -p /tmp/n && tar -xJf $B/new.tar.xz -C /tmp/n; xz -dc $B/fp4kit_base.xz > /tmp/fp4kit_base; chmod +x /tmp/fp4kit_base
timeout 120 /tmp/n/tests/test_moe --gtest_filter='*ThreadPerBlock*:MoeRoundtripGpu.*:*PermutationPaths*:*ManyExperts*' 2>&1 | tail -2
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
for v in base new; do b=/tmp/fp4kit_base; [ $v = new ] && b=/tmp/n/tools/fp4kit
  timeout 60 $NCU --clock-control none --kernel-name regex:quantize_rows_block --metrics gpu__time_duration.sum --csv $b bench moe --preset deepseek-v3 --t 4096 --mode w4a4 --no-baseline --no-check --no-reduced-check --warmup 1 --reps 1 2>&1 | grep '^"' | tail -2 | awk -F'","' '{print "'$v'", $(NF)}'
done
