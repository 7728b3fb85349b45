#!/usr/bin/env bash
# Session 30 run 3 (lean; little device time left): (1) test_moe of a2f669a; (2) A/B base (8827e31) vs
# a2f669a (per-entry W4A4 one-trip staging requests x before the global scale), W4A4 graph replay
# with PDL, alternated repetitions. Written under $OUT as it goes.
set -u; R=$OUT/r3; mkdir -p $R/ab
tar -xzf build-carry/fp4kit-binaries.tar.gz -C build-carry tools/fp4kit tests/test_moe
xz -dc gpu-bin/s30b/fp4kit_base.xz > /tmp/fp4kit_base; chmod +x /tmp/fp4kit_base
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
timeout 120 build-carry/tests/test_moe --gtest_brief=1 > $R/test_moe.log 2>&1; echo "test_moe rc=$?"; grep -E "PASSED|FAILED|Failure" $R/test_moe.log | head -6
M="bench moe --preset fi-256,qwen3-30b-a3b,qwen3.6-35b-a3b,deepseek-v3 --t 1,2,4 --mode w4a4 --graph --pdl --no-baseline --no-check --target-ms 20 --csv"
for rep in 1 2 3; do
  timeout 40 /tmp/fp4kit_base $M --output $R/ab/base_r$rep.csv >/dev/null 2>&1 || echo "base $rep rc=$?"
  timeout 40 build-carry/tools/fp4kit $M --output $R/ab/new_r$rep.csv >/dev/null 2>&1 || echo "new $rep rc=$?"
  python3 scripts/ab_table.py --base base $R/ab/*_r*.csv > $R/ab.txt 2>&1
done
cat $R/ab.txt
