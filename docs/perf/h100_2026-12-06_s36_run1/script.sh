#!/usr/bin/env bash
# Session 36 run 1 (H100): HEAD tests + micro tma_rows; per-entry kernel A prefetching kernel B's FC2 slices into L2 (EXPERIMENT env hooks).
D=gpu-bin/ab_pf
mkdir -p $D/base $D/new $OUT/ab
tar -xJf $D/base.tar.xz -C $D/base && tar -xJf $D/new.tar.xz -C $D/new || exit 3
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $OUT/ab/gpu.txt
S=$OUT/ab/summary.txt
cat $OUT/ab/gpu.txt >> $S
timeout 200 $D/new/tests/test_moe > $OUT/ab/test_moe.txt 2>&1; echo "test_moe rc=$? t=$SECONDS" | tee -a $S
grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED|Failure" $OUT/ab/test_moe.txt | head -12 >> $S
for at in 0 1; do
  FP4KIT_EXP_PE_L2PF=64 FP4KIT_EXP_PE_L2PF_AT=$at timeout 100 $D/new/tests/test_moe --gtest_filter='MoeGpu.PerEntry*' > $OUT/ab/test_moe_pf$at.txt 2>&1
  echo "test_moe pf at=$at rc=$? t=$SECONDS" | tee -a $S
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED|Failure" $OUT/ab/test_moe_pf$at.txt | head -6 >> $S
done
timeout 60 $D/new/bench/fp4kit_micro_tma_rows > $OUT/ab/micro_tma_rows.txt 2>&1; echo "micro rc=$? t=$SECONDS" >> $S
cat $OUT/ab/micro_tma_rows.txt >> $S
for rep in 1 2 3; do
  for arm in base off s24 s64 e24 e64; do
    bin=$D/new/tools/fp4kit; [ $arm = base ] && bin=$D/base/tools/fp4kit
    env=""
    case $arm in s*) env="FP4KIT_EXP_PE_L2PF=${arm:1} FP4KIT_EXP_PE_L2PF_AT=0";; e*) env="FP4KIT_EXP_PE_L2PF=${arm:1} FP4KIT_EXP_PE_L2PF_AT=1";; esac
    env $env timeout 60 $bin bench moe --preset all --t 1,2,4 --mode both --graph --pdl --no-baseline --no-check \
      --target-ms 30 --csv --output $OUT/ab/${arm}_r$rep.csv > /dev/null 2> $OUT/ab/${arm}_r$rep.err
    echo "$arm r$rep rc=$? t=$SECONDS" >> $S
    [ $SECONDS -gt 540 ] && break 2
  done
done
cat $S
tar -C $OUT -czf $OUT/ab.tgz ab && rm -rf $OUT/ab
