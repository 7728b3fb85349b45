#!/usr/bin/env bash
# Session 31 run 3: (1) test_gemm + memcheck (W4A4 tests) of new = HEAD + the kStageA-only slice bounds
# + the arrangement's scale word / later wait; (2) A/B base (HEAD) vs new, M = 1, 2, 3, 8, 9, 16, both
# modes, graph + PDL (alternated, 3 reps); (3) every tactic of down and 8192x8192 W4A4 at M = 9, 16 with
# new (down's tactic 20 lost 6 % with the arrangement patch in run 1); (4) MoE diagnostic: base vs
# noepi (kernel A's W4A4 round trip of h removed: wrong numerics, --no-check), fi-256 / Qwen3.6 /
# DeepSeek-V3 T = 1, 2, 4, both modes (W4A16 = control), 3 reps.
set -u; R=$OUT/r3; mkdir -p $R/ab $R/moe; B=gpu-bin/s31b
for f in fp4kit_base fp4kit_new fp4kit_noepi test_gemm_new; do xz -dc $B/$f.xz > /tmp/$f; chmod +x /tmp/$f; done
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
timeout 100 /tmp/test_gemm_new --gtest_brief=1 > $R/test_gemm.log 2>&1; echo "test_gemm rc=$?"; grep -E "PASSED|FAILED|SKIPPED|Failure" $R/test_gemm.log | head -6
timeout 150 compute-sanitizer --tool memcheck /tmp/test_gemm_new --gtest_brief=1 --gtest_filter='*W4A4*' > $R/memcheck_w4a4.log 2>&1; echo "memcheck rc=$?"; tail -2 $R/memcheck_w4a4.log
M="bench gemm --shapes all --m 1,2,3,8,9,16 --mode both --graph --pdl --no-baseline --no-check --target-ms 20 --csv"
for rep in 1 2 3; do
  timeout 80 /tmp/fp4kit_base $M --output $R/ab/base_r$rep.csv >/dev/null 2>&1 || echo "base $rep rc=$?"
  timeout 80 /tmp/fp4kit_new $M --output $R/ab/new_r$rep.csv >/dev/null 2>&1 || echo "new $rep rc=$?"
done
python3 scripts/ab_table.py --base base $R/ab/*_r*.csv > $R/ab.txt 2>&1
timeout 150 /tmp/fp4kit_new bench gemm --shapes down,8192x8192 --m 9,16 --mode w4a4 --tactic all --graph --pdl --no-baseline --no-check --target-ms 10 --csv --output $R/tactics_new.csv > $R/tactics_new.log 2>&1; echo "tactics rc=$?"
MO="bench moe --preset fi-256,qwen3.6-35b-a3b,deepseek-v3 --t 1,2,4 --mode both --graph --pdl --no-baseline --no-check --target-ms 20 --csv"
for rep in 1 2 3; do
  timeout 60 /tmp/fp4kit_base $MO --output $R/moe/base_r$rep.csv >/dev/null 2>&1 || echo "moe base $rep rc=$?"
  timeout 60 /tmp/fp4kit_noepi $MO --output $R/moe/noepi_r$rep.csv >/dev/null 2>&1 || echo "moe noepi $rep rc=$?"
done
python3 scripts/ab_table.py --base base $R/moe/*_r*.csv > $R/moe.txt 2>&1
cat $R/ab.txt; cat $R/moe.txt
tar -C $R -czf $R/raw.tgz ab moe && rm -rf $R/ab $R/moe
