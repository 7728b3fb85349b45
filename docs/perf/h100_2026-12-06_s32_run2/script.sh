#!/usr/bin/env bash
# Session 32 A/B: grouped 144-token tile at per-tile wgmma N {144,128,16} (narrow) vs HEAD (base).
set -u; R=$OUT/s32b; mkdir -p $R/moe; B=gpu-bin/s32b
for f in fp4kit_base fp4kit_narrow; do xz -dc $B/$f.xz > /tmp/$f; chmod +x /tmp/$f; done
mkdir -p /tmp/t && tar -xJf $B/tests_narrow.tar.xz -C /tmp/t
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
timeout 150 /tmp/t/tests/test_gemm --gtest_filter='*Grouped*' > $R/test_gemm.log 2>&1; echo "test_gemm grouped rc=$?"
timeout 150 /tmp/t/tests/test_moe > $R/test_moe.log 2>&1; echo "test_moe rc=$?"
grep -E "PASSED|FAILED|SKIPPED" $R/test_gemm.log $R/test_moe.log | head -12
timeout 120 compute-sanitizer --tool memcheck /tmp/t/tests/test_gemm --gtest_filter='GroupedGemmGpu.RaggedGroupsEveryTactic' > $R/memcheck.log 2>&1; echo "memcheck rc=$?"; tail -2 $R/memcheck.log
MO="bench moe --preset deepseek-v3,fi-256,qwen3.6-35b-a3b,qwen3-30b-a3b --t 256,1024,4096 --mode both --no-baseline --no-check --no-reduced-check --target-ms 100 --warmup-ms 50 --csv"
for rep in 1 2 3; do for v in base narrow; do timeout 100 /tmp/fp4kit_$v $MO --output $R/moe/${v}_r$rep.csv > /dev/null 2>&1 || echo "$v $rep rc=$?"; done; done
python3 scripts/ab_table.py --base base $R/moe/*_r*.csv > $R/moe.txt 2>&1; cat $R/moe.txt
tar -C $R -czf $R/raw.tgz moe && rm -rf $R/moe
