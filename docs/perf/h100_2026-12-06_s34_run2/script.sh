#!/usr/bin/env bash
# A/B of the two-way cluster split-K reduction (each split finishes half of a >= 96-token tile) against HEAD.
D=gpu-bin/ab_cluster
mkdir -p $D/base $D/new $OUT/ab
tar -xJf $D/base.tar.xz -C $D/base && tar -xJf $D/new.tar.xz -C $D/new || exit 3
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $OUT/ab/gpu.txt
T=$D/new/tests/test_gemm
timeout 120 $T --gtest_filter='GemmGpu.*' > $OUT/ab/test_gemm.txt 2>&1; echo "test_gemm rc=$? t=$SECONDS" | tee -a $OUT/ab/summary.txt
grep -E "^\[  (PASSED|FAILED|  OK) |FAILED" $OUT/ab/test_gemm.txt | tail -12 >> $OUT/ab/summary.txt
for tool in memcheck racecheck; do
  timeout 90 compute-sanitizer --tool $tool $T --gtest_filter=GemmGpu.TwoWayClusterSplitOneTactic > $OUT/ab/san_$tool.txt 2>&1
  echo "$tool rc=$? t=$SECONDS $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/ab/san_$tool.txt | tail -1) $(grep -E '^\[  (PASSED|FAILED)' $OUT/ab/san_$tool.txt)" >> $OUT/ab/summary.txt
done
for rep in 1 2 3; do
  for arm in base new; do
    timeout 100 $D/$arm/tools/fp4kit bench gemm --shapes all --m 96,128,192,256,384,512 --mode both --graph --pdl \
      --no-baseline --no-check --target-ms 100 --csv --output $OUT/ab/${arm}_r$rep.csv > /dev/null 2> $OUT/ab/${arm}_r$rep.err
    echo "$arm r$rep rc=$? t=$SECONDS" >> $OUT/ab/summary.txt
  done
done
cat $OUT/ab/summary.txt
tar -C $OUT -czf $OUT/ab.tgz ab && rm -rf $OUT/ab
