#!/usr/bin/env bash
# Session 37 run 3 (H100): kernel B's wide-CTA rule of 7830bcf (rows <= 4 chunks: 1/2/4/8 tiles to fit one
# wave) vs the two-tile rule (FP4KIT_MOE_FC2_WIDE_CTAS=0) and vs at most 4 tiles (exp binary, EXPERIMENT
# FP4KIT_EXP_PE_B_RMAX=4); fi-256 per-entry forced at T = 5..16 against the auto path; then gpu-check
# BENCH=acceptance of 7830bcf with memcheck of MoeGpu.PerEntryFc2WideCtasBitIdentical.
D=gpu-bin/s37
mkdir -p $D/exp $OUT/ab build-carry
tar -xJf $D/exp.tar.xz -C $D/exp && tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry || exit 3
S=$OUT/ab/summary.txt
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $S
for rep in 1 2; do
  for arm in old rule rmax4; do
    bin=build-carry/tools/fp4kit; env=""
    case $arm in old) env="FP4KIT_MOE_FC2_WIDE_CTAS=0";; rmax4) env="FP4KIT_EXP_PE_B_RMAX=4"; bin=$D/exp/tools/fp4kit;; esac
    env $env timeout 60 $bin bench moe --preset fi-256 --t 1,2,3,4 --mode both --graph --pdl --no-baseline --no-check \
      --target-ms 30 --csv --output $OUT/ab/${arm}_r$rep.csv > /dev/null 2> $OUT/ab/${arm}_r$rep.err
    echo "$arm r$rep rc=$? t=$SECONDS" >> $S
    env $env timeout 60 $bin bench moe --preset fi-256 --t 5,6,7,8 --mode both --path per-entry --graph --pdl --no-baseline --no-check \
      --target-ms 30 --csv --output $OUT/ab/pe${arm}_r$rep.csv > /dev/null 2> $OUT/ab/pe${arm}_r$rep.err
    echo "pe$arm r$rep rc=$? t=$SECONDS" >> $S
  done
  timeout 60 build-carry/tools/fp4kit bench moe --preset fi-256 --t 5,6,7,8 --mode both --graph --pdl --no-baseline --no-check \
    --target-ms 30 --csv --output $OUT/ab/peauto_r$rep.csv > /dev/null 2> $OUT/ab/peauto_r$rep.err
  echo "peauto r$rep rc=$? t=$SECONDS" >> $S
done
# The checks once: per-entry forced with the rule's wide CTAs against the CPU reference.
timeout 120 build-carry/tools/fp4kit bench moe --preset fi-256 --t 3,5,8 --mode both --path per-entry --no-baseline --target-ms 10 \
  --csv --output $OUT/ab/check_pe.csv > /dev/null 2> $OUT/ab/check_pe.err
echo "check pe rc=$? t=$SECONDS" >> $S
cat $S
OUT=$OUT/gc BUILD_DIR=build-carry BENCH=${RUN_BENCH:-acceptance} BUDGET=$((450 - SECONDS)) BENCH_TIMEOUT=200 SANITIZE=1 \
  SANITIZE_TARGETS="test_moe:MoeGpu.PerEntryFc2WideCtasBitIdentical" bash scripts/gpu-check.sh > $OUT/gc.log 2>&1
echo "gpu-check rc=$? t=$SECONDS" | tee -a $S
tail -30 $OUT/gc.log
tar -C $OUT -czf $OUT/run3.tgz ab gc gc.log && rm -rf $OUT/ab $OUT/gc
