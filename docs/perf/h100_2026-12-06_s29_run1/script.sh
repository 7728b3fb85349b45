#!/usr/bin/env bash
# Session 29 run A: (1) per-entry tests + memcheck of the cluster staging; (2) MoE W4A4 A/B of
# FP4KIT_MOE_CLUSTER_STAGING=0/1/2 (same binary); (3) GEMM A/B HEAD 07fe1f5 CLI vs this build (plain A loads).
set -u; R=$OUT/ab; mkdir -p $R; X=/tmp/p; mkdir -p $X
tar -xzf build-carry/fp4kit-binaries.tar.gz -C build-carry
xz -dc gpu-bin/s30/fp4kit_head.xz > $X/fp4kit_head; chmod +x $X/fp4kit_head; F=build-carry/tools/fp4kit
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
T0=$(date +%s)
timeout 150 build-carry/tests/test_moe --gtest_brief=1 --gtest_filter='MoeGpu.PerEntry*:MoeGpu.Pdl*:MoePath.*' > $R/test_moe_pe.log 2>&1; echo "test_moe per-entry rc=$?"; grep -E "PASSED|FAILED|Failure" $R/test_moe_pe.log | head -8
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
timeout 120 $CS --tool memcheck build-carry/tests/test_moe --gtest_brief=1 --gtest_filter='MoeGpu.PerEntryGraphReplaysBitIdentical' > $R/memcheck.log 2>&1; echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $R/memcheck.log | head -3
timeout 120 $CS --tool racecheck build-carry/tests/test_moe --gtest_brief=1 --gtest_filter='MoeGpu.PerEntryGraphReplaysBitIdentical' > $R/racecheck.log 2>&1; echo "racecheck rc=$?"; grep -E "RACECHECK SUMMARY|ERROR SUMMARY|PASSED|FAILED" $R/racecheck.log | head -3
echo "tests $(( $(date +%s) - T0 )) s"
mkdir -p $R/moe
M="bench moe --preset all --t 1,2,4,8 --mode w4a4 --graph --pdl --no-baseline --no-check --target-ms 30 --csv"
for rep in 1 2; do
  for rule in 0 1 2; do
    FP4KIT_MOE_CLUSTER_STAGING=$rule timeout 90 $F $M --output $R/moe/c${rule}_r$rep.csv >/dev/null 2>&1 || echo "moe rule $rule rep $rep rc=$?"
  done
done
echo "moe A/B $(( $(date +%s) - T0 )) s"
S="bench gemm --shapes 8192x8192,down,gate_up,8192x28672,qkv,o --m 3,4,8,9,16 --mode both --graph --pdl --no-baseline --target-ms 30 --csv"
mkdir -p $R/gemm
for rep in 1 2 3; do
  timeout 80 $X/fp4kit_head $S --output $R/gemm/head_r$rep.csv >/dev/null 2>&1 || echo "head $rep rc=$?"
  timeout 80 $F $S --output $R/gemm/plain_r$rep.csv >/dev/null 2>&1 || echo "plain $rep rc=$?"
done
echo "gemm A/B $(( $(date +%s) - T0 )) s"
python3 scripts/ab_table.py --base c0 $R/moe/c*_r*.csv > $R/moe_ab.txt 2>&1; cat $R/moe_ab.txt | head -60
python3 scripts/ab_table.py --base head $R/gemm/*_r*.csv > $R/gemm_ab.txt 2>&1; grep -E "w4a4|points" $R/gemm_ab.txt
echo "w4a16 ratio min/max:"; grep w4a16 $R/gemm_ab.txt | awk '{print $(NF-2)}' | sort -n | sed -n '1p;$p'
tar -C $OUT -czf $OUT/ab.tgz ab; rm -rf $R
