#!/usr/bin/env bash
# Session 35 run 4 (H100): FC1 reading its rows in place on the 256x128 tile with 2I <= 1024 (fi-256, Qwen3.6; the code of 89af446); on = FP4KIT_MOE_ROW_GATHER=1, off = 0, base = HEAD 86b7c2a; plus fp4kit_micro_tma_rows.
D=gpu-bin/ab_gather
mkdir -p $D/base $D/new $OUT/ab
tar -xJf $D/base.tar.xz -C $D/base && tar -xJf $D/new.tar.xz -C $D/new || exit 3
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $OUT/ab/gpu.txt
S=$OUT/ab/summary.txt
timeout 150 $D/new/tests/test_gemm --gtest_filter='Grouped*:TacticTables.*' > $OUT/ab/test_gemm.txt 2>&1; echo "test_gemm rc=$? t=$SECONDS" | tee -a $S
grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED|Failure" $OUT/ab/test_gemm.txt | head -12 >> $S
timeout 200 $D/new/tests/test_moe --gtest_filter='MoeGpu.*' > $OUT/ab/test_moe.txt 2>&1; echo "test_moe rc=$? t=$SECONDS" | tee -a $S
grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED|Failure" $OUT/ab/test_moe.txt | head -12 >> $S
timeout 120 compute-sanitizer --tool memcheck $D/new/tests/test_moe --gtest_filter=MoeGpu.Fc1RowGatherBitIdenticalToGatheredCopy > $OUT/ab/san_moe.txt 2>&1
echo "memcheck moe rc=$? t=$SECONDS $(grep -E 'ERROR SUMMARY' $OUT/ab/san_moe.txt | tail -1)" >> $S
timeout 120 compute-sanitizer --tool memcheck $D/new/tests/test_gemm --gtest_filter=GroupedGemmGpu.RaggedGroupsEveryTactic > $OUT/ab/san_gemm.txt 2>&1
echo "memcheck gemm rc=$? t=$SECONDS $(grep -E 'ERROR SUMMARY' $OUT/ab/san_gemm.txt | tail -1)" >> $S
timeout 60 $D/new/bench/fp4kit_micro_tma_rows > $OUT/ab/micro_tma_rows.txt 2>&1; echo "micro rc=$? t=$SECONDS" >> $S
cat $OUT/ab/micro_tma_rows.txt >> $S
for rep in 1 2 3; do
  for arm in base off on; do
    bin=$D/new/tools/fp4kit; [ $arm = base ] && bin=$D/base/tools/fp4kit
    g=1; [ $arm = off ] && g=0
    FP4KIT_MOE_ROW_GATHER=$g timeout 100 $bin bench moe --preset all --t 1536,2048,3072 --mode both --no-baseline --no-check \
      --no-reduced-check --target-ms 150 --warmup-ms 60 --csv --output $OUT/ab/${arm}_r$rep.csv > /dev/null 2> $OUT/ab/${arm}_r$rep.err
    echo "$arm r$rep rc=$? t=$SECONDS" >> $S
  done
done
cat $S
tar -C $OUT -czf $OUT/ab.tgz ab && rm -rf $OUT/ab
