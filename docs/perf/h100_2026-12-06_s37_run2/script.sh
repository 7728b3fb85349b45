#!/usr/bin/env bash
# Session 37 run 2 (H100): kernel B four row tiles rule (FP4KIT_MOE_FC2_FOUR_TILES=0 = the old rule) and
# 8 tiles (EXPERIMENT FP4KIT_EXP_PE_B_R8=1), T = 1..4, then test_moe and memcheck of the new test.
mkdir -p build-carry $OUT/ab && tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry || exit 3
S=$OUT/ab/summary.txt
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $S
FP4KIT_EXP_PE_B_R8=1 timeout 60 build-carry/tests/test_moe --gtest_filter='MoeGpu.PerEntry*' > $OUT/ab/test_moe_r8.txt 2>&1
echo "test_moe PerEntry* R8 rc=$? t=$SECONDS" >> $S
grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED|Failure" $OUT/ab/test_moe_r8.txt | head -6 >> $S
for rep in 1 2 3; do
  for arm in old rule r8; do
    env=""; case $arm in old) env="FP4KIT_MOE_FC2_FOUR_TILES=0";; r8) env="FP4KIT_EXP_PE_B_R8=1";; esac
    env $env timeout 60 build-carry/tools/fp4kit bench moe --preset all --t 1,2,3,4 --mode both --graph --pdl --no-baseline --no-check \
      --target-ms 30 --csv --output $OUT/ab/${arm}_r$rep.csv > /dev/null 2> $OUT/ab/${arm}_r$rep.err
    echo "$arm r$rep rc=$? t=$SECONDS" >> $S
  done
done
for rep in 1 2; do
  for arm in auto pe; do
    path=""; [ $arm = pe ] && path="--path per-entry"
    timeout 60 build-carry/tools/fp4kit bench moe --preset fi-256 --t 5,6,8 --mode both $path --graph --pdl --no-baseline --no-check \
      --target-ms 30 --csv --output $OUT/ab/t58${arm}_r$rep.csv > /dev/null 2> $OUT/ab/t58${arm}_r$rep.err
    echo "t58$arm r$rep rc=$? t=$SECONDS" >> $S
  done
done
cat $S
timeout 200 build-carry/tests/test_moe > $OUT/ab/test_moe.txt 2>&1; echo "test_moe rc=$? t=$SECONDS" >> $S
grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED|Failure" $OUT/ab/test_moe.txt | head -8 >> $S
timeout 150 compute-sanitizer --tool memcheck build-carry/tests/test_moe --gtest_filter=MoeGpu.PerEntryFc2FourRowTilesBitIdentical > $OUT/ab/san_moe.txt 2>&1
echo "memcheck rc=$? t=$SECONDS $(grep -E 'ERROR SUMMARY' $OUT/ab/san_moe.txt | tail -1)" >> $S
cat $S
tar -C $OUT -czf $OUT/run2.tgz ab && rm -rf $OUT/ab
