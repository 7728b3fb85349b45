#!/usr/bin/env bash
# Session 39 run 1 (H100): (a) the coalesced workspace partials of c972c90 (HEAD 6a6168f, same SASS) against
# 35bbcd1 ("base") at the points whose tiles take the workspace split-K (down M = 24..64, 8192x28672 M = 24..64),
# W4A16 and W4A4, graph replay with PDL, two alternated repetitions, baselines in each process;
# (b) down M = 96 / 128 on one-pass tiles with 4-way workspace splits (128x96 = 37, 128x128 s6 = 9) against
# the auto two-pass tiles (HEAD); (c) the per-entry MoE wide-CTA rule extended to rows of up to 12 chunks
# (35bbcd1 + docs/wip/per-entry-fc2-wide-ctas-longer-rows.patch, FP4KIT_EXP_PE_B_WIDE_KC=12) on Qwen3.6 /
# Qwen3-30B T = 1..8; (d) gpu-check BENCH=acceptance of HEAD.
set -u; R=$OUT/ab; mkdir -p $R; S=$R/summary.txt
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry || exit 3
for b in base kc; do xz -dc gpu-bin/s39/fp4kit_$b.xz > /tmp/fp4kit_$b; chmod +x /tmp/fp4kit_$b; done
H=build-carry/tools/fp4kit
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $S
for rep in 1 2; do for v in base head; do bin=$H; [ $v = base ] && bin=/tmp/fp4kit_base
  timeout 60 $bin bench gemm --shapes llama8b.down,seed.8192x28672 --m 24,32,48,64 --mode both --no-check --graph --pdl \
    --target-ms 20 --csv --output $R/${v}_r$rep.csv > /dev/null 2> $R/${v}_r$rep.err; echo "$v r$rep rc=$? t=$SECONDS" >> $S
done; done
for t in auto 37 9; do
  timeout 60 $H bench gemm --shapes llama8b.down --m 96,128 --mode both --tactic $t --no-baseline --no-check --graph --pdl \
    --target-ms 20 --csv --output $R/down_t$t.csv > /dev/null 2> $R/down_t$t.err; echo "down t$t rc=$? t=$SECONDS" >> $S
done
for rep in 1 2; do for v in rule kc12; do env=""; [ $v = kc12 ] && env="FP4KIT_EXP_PE_B_WIDE_KC=12"
  env $env timeout 60 /tmp/fp4kit_kc bench moe --preset qwen3.6-35b-a3b,qwen3-30b-a3b --t 1,2,3,4,5,6,8 --mode both --graph --pdl \
    --no-baseline --no-check --target-ms 20 --csv --output $R/moe_${v}_r$rep.csv > /dev/null 2> $R/moe_${v}_r$rep.err
  echo "moe $v r$rep rc=$? t=$SECONDS" >> $S
done; done
FP4KIT_EXP_PE_B_WIDE_KC=12 timeout 60 /tmp/fp4kit_kc bench moe --preset qwen3.6-35b-a3b,qwen3-30b-a3b --t 4,8 --mode both \
  --no-baseline --target-ms 5 --csv --output $R/moe_kc12_check.csv > /dev/null 2> $R/moe_kc12_check.err
echo "moe kc12 check rc=$? t=$SECONDS" >> $S
cat $S
OUT=$OUT/gc BUILD_DIR=build-carry BENCH=acceptance BUDGET=$((570 - SECONDS)) BENCH_TIMEOUT=200 bash scripts/gpu-check.sh > $OUT/gc.log 2>&1
echo "gpu-check rc=$? t=$SECONDS" | tee -a $S
tail -30 $OUT/gc.log
tar -C $OUT -czf $OUT/run1.tgz ab gc gc.log && rm -rf $OUT/ab $OUT/gc
