#!/usr/bin/env bash
# Session 36 run 2 (H100): per-entry kernel A asking L2 for kernel B's FC2 slices at the end of its last entries' CTAs (EXPERIMENT env hooks), budgets.
D=gpu-bin/ab_pf
mkdir -p $D/base $D/new $OUT/ab
tar -xJf $D/base.tar.xz -C $D/base && tar -xJf $D/new2.tar.xz -C $D/new || exit 3
S=$OUT/ab/summary.txt
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $S
for rep in 1 2 3; do
  for arm in base e4 e8 e16 e24 auto25 auto50; do
    bin=$D/new/tools/fp4kit; [ $arm = base ] && bin=$D/base/tools/fp4kit
    env=""
    case $arm in e*) env="FP4KIT_EXP_PE_L2PF=${arm:1} FP4KIT_EXP_PE_L2PF_AT=1";; auto*) env="FP4KIT_EXP_PE_L2PF=$arm FP4KIT_EXP_PE_L2PF_AT=1";; esac
    env $env timeout 60 $bin bench moe --preset all --t 1,2,3,4 --mode both --graph --pdl --no-baseline --no-check \
      --target-ms 30 --csv --output $OUT/ab/${arm}_r$rep.csv > /dev/null 2> $OUT/ab/${arm}_r$rep.err
    echo "$arm r$rep rc=$? t=$SECONDS" >> $S
    [ $SECONDS -gt 400 ] && break 2
  done
done
cat $S
tar -C $OUT -czf $OUT/ab2.tgz ab && rm -rf $OUT/ab
