#!/usr/bin/env bash
# Session 37 run 1 (H100): per-entry kernel B variants (FP4KIT_EXP_PE_B_R = 4: 4 row tiles per CTA; 3: 2 row
# tiles at 3 CTAs/SM; 5: 4 row tiles at 3 CTAs/SM) against the rule; the HBM-rich small-M rules on the H100.
D=gpu-bin/s37
mkdir -p $D/new $OUT/ab
tar -xJf $D/new.tar.xz -C $D/new || exit 3
S=$OUT/ab/summary.txt
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $S
for r in 4 3 5; do
  FP4KIT_EXP_PE_B_R=$r timeout 100 $D/new/tests/test_moe --gtest_filter='MoeGpu.PerEntry*' > $OUT/ab/test_moe_r$r.txt 2>&1
  echo "test_moe PerEntry* B_R=$r rc=$? t=$SECONDS" >> $S
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED|Failure" $OUT/ab/test_moe_r$r.txt | head -6 >> $S
done
for rep in 1 2 3; do
  for arm in base r4 r3 r5; do
    env=""; [ $arm != base ] && env="FP4KIT_EXP_PE_B_R=${arm:1}"
    env $env timeout 60 $D/new/tools/fp4kit bench moe --preset all --t 1,2,4 --mode both --graph --pdl --no-baseline --no-check \
      --target-ms 30 --csv --output $OUT/ab/${arm}_r$rep.csv > /dev/null 2> $OUT/ab/${arm}_r$rep.err
    echo "$arm r$rep rc=$? t=$SECONDS" >> $S
  done
done
for rep in 1 2 3; do
  for arm in rich0 rich1; do
    chk="--no-check"; [ $rep = 1 ] && chk=""
    FP4KIT_HBM_RICH=${arm:4} timeout 90 $D/new/tools/fp4kit bench gemm --shapes seed,gate_up --m 1,2,3,9,12,16 --mode both --graph --pdl \
      --no-baseline $chk --target-ms 20 --csv --output $OUT/ab/g${arm}_r$rep.csv > /dev/null 2> $OUT/ab/g${arm}_r$rep.err
    echo "g$arm r$rep rc=$? t=$SECONDS" >> $S
  done
  [ $SECONDS -gt 420 ] && break
done
for sh in seed.8192x28672 gate_up seed.8192x8192 down; do
  [ $SECONDS -gt 480 ] && break
  timeout 120 $D/new/tools/fp4kit bench gemm --shapes $sh --m 12 --mode w4a4 --tactic all --graph --pdl --no-baseline \
    --target-ms 15 --csv --output $OUT/ab/all_$sh.csv > /dev/null 2> $OUT/ab/all_$sh.err
  echo "all $sh rc=$? t=$SECONDS" >> $S
done
cat $S
tar -C $OUT -czf $OUT/ab1.tgz ab && rm -rf $OUT/ab
