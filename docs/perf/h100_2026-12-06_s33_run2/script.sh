#!/usr/bin/env bash
# Session 33 run 2: W4A4 round trips with one thread per 16-element block at large batches and the
# 8-instruction E2M1 rounding (new) vs HEAD (base): test_moe, per-kernel durations, MoE A/B.
set -u; S=$(date +%s); R=$OUT; B=gpu-bin/s33r2
for f in fp4kit_base fp4kit_new test_moe; do xz -dc $B/$f.xz > /tmp/$f; chmod +x /tmp/$f; done
left() { echo $(( 560 - ($(date +%s) - S) )); }
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
timeout 150 /tmp/test_moe > $R/test_moe.log 2>&1; echo "test_moe rc=$? ($(left) s left)"; grep -E "^\[  (PASSED|FAILED)|FAILED  \]|SKIPPED \]" $R/test_moe.log | head
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
for p in deepseek-v3 qwen3.6-35b-a3b; do
  timeout 60 $NCU --clock-control none --metrics gpu__time_duration.sum --csv /tmp/fp4kit_new bench moe --preset $p --t 4096 \
    --mode w4a4 --no-baseline --no-check --no-reduced-check --warmup 1 --reps 1 > $R/dur_new_$p.csv 2>&1; echo "dur $p rc=$?"
  grep -E "quantize_rows|swiglu" $R/dur_new_$p.csv | tail -2 | awk -F'","' '{print $5, $(NF)}' | cut -c1-120
done
mkdir -p $R/large $R/small $R/mid
LG="bench moe --preset deepseek-v3,fi-256,qwen3.6-35b-a3b,qwen3-30b-a3b --t 4096 --mode w4a4 --no-check --no-reduced-check --target-ms 200 --warmup-ms 100 --csv"
for rep in 1 2; do
  timeout 45 /tmp/fp4kit_base $LG --output $R/large/base_r$rep.csv > /dev/null 2>&1 || echo "base $rep rc=$?"
  timeout 45 /tmp/fp4kit_new $LG --output $R/large/new_r$rep.csv > /dev/null 2>&1 || echo "new $rep rc=$?"
  FP4KIT_MOE_QUANT_BLOCK=0 timeout 45 /tmp/fp4kit_new $LG --output $R/large/lanes4_r$rep.csv > /dev/null 2>&1 || echo "lanes4 $rep rc=$?"
  echo "large rep $rep ($(left) s left)"
done
python3 scripts/ab_table.py --col us --base base $R/large/*_r*.csv > $R/large.txt 2>&1; cat $R/large.txt
grep -h "fp4kit" $R/large/new_r1.csv | cut -d, -f1,6,8,9,18 | head -4
SM="bench moe --preset fi-256,qwen3.6-35b-a3b,qwen3-30b-a3b --t 1,2,4,8,16 --mode w4a4 --graph --pdl --no-baseline --no-check --target-ms 20 --csv"
for rep in 1 2 3; do
  [ $(left) -lt 90 ] && break
  timeout 40 /tmp/fp4kit_base $SM --output $R/small/base_r$rep.csv > /dev/null 2>&1 || echo "base $rep rc=$?"
  timeout 40 /tmp/fp4kit_new $SM --output $R/small/new_r$rep.csv > /dev/null 2>&1 || echo "new $rep rc=$?"
  echo "small rep $rep ($(left) s left)"
done
python3 scripts/ab_table.py --col graph_us --base base $R/small/*_r*.csv > $R/small.txt 2>&1; cat $R/small.txt
MD="bench moe --preset deepseek-v3,qwen3.6-35b-a3b,fi-256 --t 256,1024 --mode w4a4 --no-baseline --no-check --no-reduced-check --target-ms 50 --csv"
for rep in 1 2; do
  [ $(left) -lt 40 ] && break
  FP4KIT_MOE_QUANT_BLOCK=0 timeout 30 /tmp/fp4kit_new $MD --output $R/mid/lanes4_r$rep.csv > /dev/null 2>&1 || echo "mid0 rc=$?"
  FP4KIT_MOE_QUANT_BLOCK=1 timeout 30 /tmp/fp4kit_new $MD --output $R/mid/block_r$rep.csv > /dev/null 2>&1 || echo "mid1 rc=$?"
done
python3 scripts/ab_table.py --col us --base lanes4 $R/mid/*_r*.csv > $R/mid.txt 2>&1; cat $R/mid.txt
echo "total $(( $(date +%s) - S )) s"
