#!/usr/bin/env bash
# Session 32 A/B: grouped 144-token tile with one mainloop per wgmma width: fit2 {144,16}, fit3 {144,128,16}, vs HEAD (base).
set -u; R=$OUT/s32c; mkdir -p $R/moe; B=gpu-bin/s32c
for f in fp4kit_base fp4kit_fit2 fp4kit_fit3; do xz -dc $B/$f.xz > /tmp/$f; chmod +x /tmp/$f; done
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
for a in fit2 fit3; do
  mkdir -p /tmp/t_$a && tar -xJf $B/tests_$a.tar.xz -C /tmp/t_$a
  timeout 100 /tmp/t_$a/tests/test_gemm --gtest_filter='*Grouped*' > $R/test_gemm_$a.log 2>&1; echo "$a test_gemm grouped rc=$?"
  timeout 100 /tmp/t_$a/tests/test_moe --gtest_filter='*ManyExperts*:*Grouped*:*LargeBatch*:*Reduced*' > $R/test_moe_$a.log 2>&1; echo "$a test_moe rc=$?"
  grep -hE "^\[  (PASSED|FAILED)" $R/test_gemm_$a.log $R/test_moe_$a.log
done
timeout 90 compute-sanitizer --tool memcheck /tmp/t_fit3/tests/test_gemm --gtest_filter='GroupedGemmGpu.RaggedGroupsEveryTactic' > $R/memcheck.log 2>&1; echo "memcheck fit3 rc=$?"; tail -1 $R/memcheck.log
MO="bench moe --preset deepseek-v3,fi-256,qwen3.6-35b-a3b,qwen3-30b-a3b --t 2048,4096 --mode both --no-baseline --no-check --no-reduced-check --target-ms 100 --warmup-ms 50 --csv"
for rep in 1 2 3; do for v in base fit2 fit3; do timeout 100 /tmp/fp4kit_$v $MO --output $R/moe/${v}_r$rep.csv > /dev/null 2>&1 || echo "$v $rep rc=$?"; done; done
python3 scripts/ab_table.py --col us --base base $R/moe/*_r*.csv > $R/moe.txt 2>&1; cat $R/moe.txt
tar -C $R -czf $R/raw.tgz moe && rm -rf $R/moe
