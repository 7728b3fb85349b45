#!/usr/bin/env bash
# Session 36 run 6 (H100): the grouped 160-token tile (12, N = 144 loop) against the heuristic (256x128 past 144 rows) and 11 above its range: MoE T = 4864 / 5120 / 5376 / 5632 (152 / 160 / 168 / 176 rows on E = 256).
D=gpu-bin/ab_fit
mkdir -p $D/new $OUT/ab
tar -xJf $D/new.tar.xz -C $D/new || exit 3
S=$OUT/ab/summary.txt
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $S
for rep in 1 2 3; do
  for arm in auto f12 f11; do
    tac=""; case $arm in f12) tac="--fc1-tactic 12 --fc2-tactic 12";; f11) tac="--fc1-tactic 11 --fc2-tactic 11";; esac
    timeout 120 $D/new/tools/fp4kit bench moe --preset deepseek-v3,fi-256,qwen3.6-35b-a3b --t 4864,5120,5376,5632 --mode both $tac --no-baseline --no-check \
      --no-reduced-check --target-ms 150 --warmup-ms 60 --csv --output $OUT/ab/${arm}_r$rep.csv > /dev/null 2> $OUT/ab/${arm}_r$rep.err
    echo "$arm r$rep rc=$? t=$SECONDS" >> $S
    [ $SECONDS -gt 480 ] && break 2
  done
done
cat $S
tar -C $OUT -czf $OUT/ab6.tgz ab && rm -rf $OUT/ab
