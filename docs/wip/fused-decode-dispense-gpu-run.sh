#!/usr/bin/env bash
# GPU side of docs/wip/fused-decode-dispense-first-units.patch + fused-decode-residency-test.patch
# (carry ["gpu-bin/resid", "gpu-bin/resid-gpu-run.sh"]; binaries built in session 28 from 3c7f0a1's
# tree: head = HEAD, testonly = HEAD + the residency test, fix = HEAD + the test + the fix).
# 1. the residency test on the head kernels: expected to FAIL (the holder's 3 s timeout breaks a
#    deadlock); 2. test_moe of the fix, whole (the residency test must pass, every other MoE test too);
# 3. A/B of the fused-decode points (T = 8, 16; the four presets that take that path; both modes):
#    head vs fix, 3 alternated repetitions, graph replay with PDL; table last.
set -u
R=${OUT:-/tmp}/resid; mkdir -p $R; N=gpu-bin/resid; X=/tmp/resid; mkdir -p $X
for f in $N/*.xz; do b=$(basename $f .xz); { xz -dc $f 2>/dev/null || python3 -c "import lzma,sys; sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())" $f; } > $X/$b; chmod +x $X/$b; done
timeout 60 $X/test_moe_testonly --gtest_filter='*SmsLeftFree*' > $R/testonly.log 2>&1; echo "residency test on head kernels rc=$? (expected: failure)"
grep -E "deadlock|OK \]|FAILED" $R/testonly.log | head -4
timeout 240 $X/test_moe_fix --gtest_brief=1 > $R/test_moe_fix.log 2>&1; echo "test_moe (fix) rc=$?"
grep -E "FAILED|PASSED|SKIPPED" $R/test_moe_fix.log | head -6
B="bench moe --preset fi-256,qwen3-30b-a3b,qwen3.6-35b-a3b,deepseek-v3 --t 8,16 --mode both --graph --pdl --no-baseline --no-reduced-check --no-check --target-ms 40 --csv"
for rep in 1 2 3; do
  timeout 100 $X/fp4kit_head $B --output $R/head_r$rep.csv > /dev/null 2>&1 || echo "head $rep rc=$?"
  timeout 100 $X/fp4kit_fix $B --output $R/fix_r$rep.csv > /dev/null 2>&1 || echo "fix $rep rc=$?"
done
python3 scripts/ab_table.py --base head $R/head_r*.csv $R/fix_r*.csv
cd ${OUT:-/tmp} && tar czf resid.tgz resid && rm -rf resid
