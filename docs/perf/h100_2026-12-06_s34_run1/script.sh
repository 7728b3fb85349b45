#!/usr/bin/env bash
# Session 34 run 1 (H100): A/B of the two-way cluster split-K reduction (each split finishes half of
# the tile, every tile size) against HEAD 973fa94. gpu-bin/ab_cluster/{base,new}.tar.xz: base = the
# CLI built at 973fa94, new = the CLI and test_gemm with the change (all tile sizes).
D=gpu-bin/ab_cluster
mkdir -p $D/base $D/new $OUT/ab
tar -xJf $D/base.tar.xz -C $D/base && tar -xJf $D/new.tar.xz -C $D/new || exit 3
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $OUT/ab/gpu.txt
T=$D/new/tests/test_gemm
timeout 120 $T --gtest_filter='GemmGpu.*' > $OUT/ab/test_gemm.txt 2>&1; echo "test_gemm rc=$? t=$SECONDS" | tee -a $OUT/ab/summary.txt
grep -E "^\[  (PASSED|FAILED|  OK) |FAILED" $OUT/ab/test_gemm.txt | tail -12 >> $OUT/ab/summary.txt
for rep in 1 2; do
  for arm in base new; do
    timeout 100 $D/$arm/tools/fp4kit bench gemm --shapes all --m 48,64,128,192,256,384,512 --mode both --graph --pdl \
      --no-baseline --no-check --target-ms 60 --csv --output $OUT/ab/${arm}_r$rep.csv > /dev/null 2> $OUT/ab/${arm}_r$rep.err
    echo "$arm r$rep rc=$? t=$SECONDS" >> $OUT/ab/summary.txt
  done
done
F=$D/new/tools/fp4kit
for tool in memcheck racecheck; do
  for tac in 9 35; do
    [ $SECONDS -gt 500 ] && break
    timeout 45 compute-sanitizer --tool $tool $F bench gemm --shapes 6336x1024 --m 40 --tactic $tac --mode both --no-baseline --warmup 0 --reps 1 > $OUT/ab/san_${tool}_$tac.txt 2>&1
    echo "$tool tactic $tac rc=$? t=$SECONDS $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/ab/san_${tool}_$tac.txt | tail -1)" >> $OUT/ab/summary.txt
  done
done
cat $OUT/ab/summary.txt
tar -C $OUT -czf $OUT/ab.tgz ab && rm -rf $OUT/ab
