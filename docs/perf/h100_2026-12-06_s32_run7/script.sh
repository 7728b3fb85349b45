#!/usr/bin/env bash
# Session 32 run 7: fit3 plus one activation map per width (128- and 16-row boxes in device memory,
# one TMA load per stage: maps) vs fit3 vs HEAD (base): tests, memcheck, MoE T = 4096 with the dense baseline.
set -u; R=$OUT/s32g; mkdir -p $R/moe; B=gpu-bin/s32g
for f in fp4kit_base fp4kit_fit3 fp4kit_maps; do xz -dc $B/$f.xz > /tmp/$f; chmod +x /tmp/$f; done
mkdir -p /tmp/t && tar -xJf $B/tests.tar.xz -C /tmp/t
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
timeout 60 /tmp/t/tests/test_gemm --gtest_filter='*Grouped*' > $R/test_gemm.log 2>&1; echo "test_gemm grouped rc=$?"
timeout 90 /tmp/t/tests/test_moe --gtest_filter='*ManyExperts*:*MatchesReference*:*PermutationPaths*' > $R/test_moe.log 2>&1; echo "test_moe rc=$?"
grep -hE "^\[  (PASSED|FAILED)|FAILED  \]" $R/test_gemm.log $R/test_moe.log | head
timeout 60 compute-sanitizer --tool memcheck /tmp/t/tests/test_gemm --gtest_filter='GroupedGemmGpu.RaggedGroupsEveryTactic' > $R/memcheck.log 2>&1; echo "memcheck rc=$?"; tail -1 $R/memcheck.log
MO="bench moe --preset deepseek-v3,fi-256,qwen3.6-35b-a3b,qwen3-30b-a3b --t 4096 --mode both --no-reduced-check --target-ms 200 --warmup-ms 100 --csv"
for rep in 1 2 3; do for v in base fit3 maps; do timeout 40 /tmp/fp4kit_$v $MO --output $R/moe/${v}_r$rep.csv > /dev/null 2>&1 || echo "$v $rep rc=$?"; done; done
python3 scripts/ab_table.py --col us --base base $R/moe/*_r*.csv > $R/moe.txt 2>&1; cat $R/moe.txt
grep -h "x_dense\|^deepseek\|^fi-256\|^qwen" $R/moe/maps_r1.csv | grep fp4kit | cut -d, -f1-3,5- | head -8
tar -C $R -czf $R/raw.tgz moe && rm -rf $R/moe
