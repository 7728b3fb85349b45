#!/usr/bin/env bash
# Session 31 run 6: per-entry kernel A with two row tiles per CTA (x staged once, the next tile's first
# weights requested before this tile's epilogue), FP4KIT_EXP_PE_TP=2 where the plain kernel's grid
# passes one wave of 3 CTAs per SM (fi-256 T = 4: 512 -> 256 CTAs). (1) test_moe with it forced on
# every plain per-entry grid (FP4KIT_EXP_PE_TP_ANY) and off; (2) A/B base (HEAD 5b2cf53) / tp1 (this
# build, off) / tp2, both modes, graph + PDL, 3 reps; one checked pass of tp2.
set -u; R=$OUT/r6; mkdir -p $R/moe; B=gpu-bin/s31d
for f in fp4kit_base fp4kit_exp test_moe_exp; do xz -dc $B/$f.xz > /tmp/$f; chmod +x /tmp/$f; done
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
FP4KIT_EXP_PE_TP=2 FP4KIT_EXP_PE_TP_ANY=1 timeout 80 /tmp/test_moe_exp --gtest_brief=1 > $R/test_moe_tp2.log 2>&1; echo "test_moe tp2 rc=$?"; grep -E "PASSED|FAILED|Failure" $R/test_moe_tp2.log | head -6
MO="bench moe --preset fi-256,qwen3.6-35b-a3b,qwen3-30b-a3b,deepseek-v3 --t 1,2,4 --mode both --graph --pdl --no-baseline --target-ms 20 --csv"
FP4KIT_EXP_PE_TP=2 timeout 50 /tmp/fp4kit_exp ${MO/qwen3-30b-a3b,deepseek-v3/qwen3-30b-a3b} --output $R/tp2_checked.csv > $R/tp2_checked.log 2>&1; echo "tp2 checked rc=$?"; grep -E "checks|RESULT" $R/tp2_checked.log
for rep in 1 2; do
  timeout 60 /tmp/fp4kit_base $MO --no-check --output $R/moe/base_r$rep.csv >/dev/null 2>&1 || echo "base $rep rc=$?"
  timeout 60 /tmp/fp4kit_exp $MO --no-check --output $R/moe/tp1_r$rep.csv >/dev/null 2>&1 || echo "tp1 $rep rc=$?"
  FP4KIT_EXP_PE_TP=2 timeout 60 /tmp/fp4kit_exp $MO --no-check --output $R/moe/tp2_r$rep.csv >/dev/null 2>&1 || echo "tp2 $rep rc=$?"
done
python3 scripts/ab_table.py --base base $R/moe/*_r*.csv > $R/moe.txt 2>&1; cat $R/moe.txt
tar -C $R -czf $R/raw.tgz moe && rm -rf $R/moe
