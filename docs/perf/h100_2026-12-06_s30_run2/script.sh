#!/usr/bin/env bash
# Session 30 run 2: per-entry W4A4 kernel A staging x itself (batched loads) vs the staging kernel.
# base = HEAD 8827e31; exp = + stage_x batches up to 4 trips' loads + FP4KIT_EXP_PRESTAGE_MIN_WORK.
set -u; R=$OUT/r2; mkdir -p $R/ab; B=gpu-bin/s30
for f in fp4kit_base fp4kit_exp test_moe_exp; do xz -dc $B/$f.xz > /tmp/$f; chmod +x /tmp/$f; done
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
M="bench moe --preset all --t 1,2,4,8 --mode w4a4 --graph --pdl --no-baseline --no-check --target-ms 30 --csv"
for rep in 1 2 3; do
  timeout 60 /tmp/fp4kit_base $M --output $R/ab/base_r$rep.csv >/dev/null 2>&1 || echo "base $rep rc=$?"
  timeout 60 /tmp/fp4kit_exp $M --output $R/ab/exp_r$rep.csv >/dev/null 2>&1 || echo "exp $rep rc=$?"
  FP4KIT_EXP_PRESTAGE_MIN_WORK=999999999999 timeout 60 /tmp/fp4kit_exp $M --output $R/ab/percta_r$rep.csv >/dev/null 2>&1 || echo "percta $rep rc=$?"
done
python3 scripts/ab_table.py --base base $R/ab/*_r*.csv | tee $R/ab.txt
# W4A16 control of the same binaries (per-entry W4A16 has no staging; must be ~1.000)
M16="bench moe --preset fi-256,qwen3.6-35b-a3b --t 1,4 --mode w4a16 --graph --pdl --no-baseline --no-check --target-ms 30 --csv"
mkdir -p $R/c16
for rep in 1 2; do
  timeout 60 /tmp/fp4kit_base $M16 --output $R/c16/base_r$rep.csv >/dev/null 2>&1
  timeout 60 /tmp/fp4kit_exp $M16 --output $R/c16/exp_r$rep.csv >/dev/null 2>&1
done
python3 scripts/ab_table.py --base base $R/c16/*_r*.csv | tee $R/c16.txt
for v in default 999999999999 0; do
  if [ $v = default ]; then unset FP4KIT_EXP_PRESTAGE_MIN_WORK; else export FP4KIT_EXP_PRESTAGE_MIN_WORK=$v; fi
  timeout 150 /tmp/test_moe_exp --gtest_brief=1 > $R/test_moe_$v.log 2>&1; echo "test_moe PMW=$v rc=$?"; grep -E "PASSED|FAILED|Failure" $R/test_moe_$v.log | head -6
done
export FP4KIT_EXP_PRESTAGE_MIN_WORK=999999999999
timeout 150 compute-sanitizer --tool memcheck /tmp/test_moe_exp --gtest_brief=1 --gtest_filter='*PerEntry*' > $R/memcheck_percta.log 2>&1; echo "memcheck rc=$?"; tail -3 $R/memcheck_percta.log
/tmp/fp4kit_exp bench moe --preset fi-256,deepseek-v3,qwen3.6-35b-a3b --t 1,4 --mode w4a4 --graph --pdl --no-baseline --target-ms 20 > $R/check_percta.txt 2>&1; echo "checked bench (per-CTA) rc=$?"; tail -2 $R/check_percta.txt
unset FP4KIT_EXP_PRESTAGE_MIN_WORK
tar -C $OUT -czf $OUT/r2.tgz r2; rm -rf $R
