#!/usr/bin/env bash
# Session 36 run 3 (H100): tests of 55512fb + the fit 160 tile; grouped 128x160 with per-tile wgmma N 144 / 160 (EXPERIMENT) vs 128x144 (default) and plain 128x160, MoE T = 4096 / 4352; gq: W4A4's gather quantizing each entry instead of each token once (EXPERIMENT hook).
D=gpu-bin/ab_pf
mkdir -p $D/base $D/new $OUT/ab
tar -xJf $D/base.tar.xz -C $D/base && tar -xJf $D/new3.tar.xz -C $D/new || exit 3
S=$OUT/ab/summary.txt
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $S
timeout 150 $D/new/tests/test_gemm --gtest_filter='Grouped*' > $OUT/ab/test_gemm.txt 2>&1; echo "test_gemm Grouped* rc=$? t=$SECONDS" >> $S
grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED|Failure" $OUT/ab/test_gemm.txt | head -12 >> $S
timeout 200 $D/new/tests/test_moe > $OUT/ab/test_moe.txt 2>&1; echo "test_moe rc=$? t=$SECONDS" >> $S
grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED|Failure" $OUT/ab/test_moe.txt | head -12 >> $S
timeout 100 compute-sanitizer --tool memcheck $D/new/tests/test_moe --gtest_filter=MoeGpu.PerEntryFc2PrefetchBitIdentical > $OUT/ab/san_moe.txt 2>&1
echo "memcheck moe rc=$? t=$SECONDS $(grep -E 'ERROR SUMMARY' $OUT/ab/san_moe.txt | tail -1)" >> $S
for rep in 1 2 3 4; do
  for arm in base b160 n160 new gq; do
    bin=$D/new/tools/fp4kit; case $arm in base|b160) bin=$D/base/tools/fp4kit;; esac
    tac=""; case $arm in b160|n160) tac="--fc1-tactic 12 --fc2-tactic 12";; esac
    env=""; [ $arm = gq ] && env="FP4KIT_EXP_GATHER_QUANT=1"
    env $env timeout 100 $bin bench moe --preset deepseek-v3,fi-256,qwen3.6-35b-a3b --t 4096,4352 --mode both $tac --no-baseline --no-check \
      --no-reduced-check --target-ms 150 --warmup-ms 60 --csv --output $OUT/ab/${arm}_r$rep.csv > /dev/null 2> $OUT/ab/${arm}_r$rep.err
    echo "$arm r$rep rc=$? t=$SECONDS" >> $S
    [ $SECONDS -gt 520 ] && break 2
  done
done
cat $S
tar -C $OUT -czf $OUT/ab3.tgz ab && rm -rf $OUT/ab
