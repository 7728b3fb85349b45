#!/usr/bin/env bash
# Session 28 run 4 (short): the fragment-order A loads as plain loads, alone: fix (= HEAD 604229a) vs
# build-carry (HEAD + docs/wip/fragment-a-plain-loads.patch), 3 alternated reps; then test_gemm and
# test_moe of build-carry.
set -u; R=$OUT/p2; mkdir -p $R; X=/tmp/p; mkdir -p $X
tar -xzf build-carry/fp4kit-binaries.tar.gz -C build-carry
xz -dc gpu-bin/s29/fp4kit_fix.xz > $X/fp4kit_fix; chmod +x $X/fp4kit_fix; F=build-carry/tools/fp4kit
nvidia-smi --query-gpu=name --format=csv,noheader
S="bench gemm --shapes 8192x8192,down,gate_up,8192x28672,qkv,o --m 3,4,8,9,16 --mode both --graph --pdl --no-baseline --target-ms 30 --csv"
for rep in 1 2 3; do
  timeout 80 $X/fp4kit_fix $S --output $R/fix_r$rep.csv >/dev/null 2>&1 || echo "fix $rep rc=$?"
  timeout 80 $F $S --output $R/plain_r$rep.csv >/dev/null 2>&1 || echo "plain $rep rc=$?"
done
python3 scripts/ab_table.py --base fix $R/fix_r*.csv $R/plain_r*.csv > $R/ab.txt
grep -E "w4a4|points" $R/ab.txt
echo "w4a16 ratio min/max:"; grep w4a16 $R/ab.txt | awk '{print $(NF-2)}' | sort -n | sed -n '1p;$p'
timeout 60 build-carry/tests/test_gemm --gtest_brief=1 > $R/test_gemm.log 2>&1; echo "test_gemm rc=$?"; grep -E "PASSED|FAILED" $R/test_gemm.log | head -3
timeout 120 build-carry/tests/test_moe --gtest_brief=1 > $R/test_moe.log 2>&1; echo "test_moe rc=$?"; grep -E "PASSED|FAILED" $R/test_moe.log | head -3
tar -C $OUT -czf $OUT/p2.tgz p2; rm -rf $R
