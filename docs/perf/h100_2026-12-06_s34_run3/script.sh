#!/usr/bin/env bash
# Session 34 run 3: (a) A/B of the shared two-way cluster reduction on every tile size ("all": the
# peer's rank from %cluster_ctarank) against HEAD ("new": tiles >= 96 tokens) and 973fa94 ("base");
# (b) gpu-check BENCH=acceptance of HEAD's binaries (build-carry).
D=gpu-bin/ab_cluster
mkdir -p $D/new $D/all $OUT/ab
for a in new all; do tar -xJf $D/$a.tar.xz -C $D/$a || exit 3; done
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $OUT/ab/gpu.txt
T=$D/all/tests/test_gemm
timeout 30 $T --gtest_filter='GemmGpu.*' > $OUT/ab/test_gemm.txt 2>&1; echo "test_gemm(all) rc=$? t=$SECONDS" >> $OUT/ab/summary.txt
grep -E "^\[  (PASSED|FAILED)|FAILED" $OUT/ab/test_gemm.txt | tail -6 >> $OUT/ab/summary.txt
for tool in memcheck racecheck; do
  timeout 40 compute-sanitizer --tool $tool $T --gtest_filter=GemmGpu.TwoWayClusterSplitOneTactic > $OUT/ab/san_$tool.txt 2>&1
  echo "$tool rc=$? t=$SECONDS $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/ab/san_$tool.txt | tail -1) $(grep -E '^\[  (PASSED|FAILED)' $OUT/ab/san_$tool.txt)" >> $OUT/ab/summary.txt
done
for rep in 1 2; do
  for arm in new all; do
    timeout 40 $D/$arm/tools/fp4kit bench gemm --shapes o,qkv,down,seed.8192x8192 --m 24,48,64,128,256 --mode both --graph --pdl \
      --no-baseline --no-check --target-ms 60 --csv --output $OUT/ab/${arm}_r$rep.csv > /dev/null 2> $OUT/ab/${arm}_r$rep.err
    echo "$arm r$rep rc=$? t=$SECONDS" >> $OUT/ab/summary.txt
  done
done
cat $OUT/ab/summary.txt
tar -C $OUT -czf $OUT/ab.tgz ab && rm -rf $OUT/ab
