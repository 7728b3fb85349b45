#!/usr/bin/env bash
# Session 42 run 2 (H100): the 32-row 24-token decode tile as a rule (9b5169d: tactic 65 at 17..24 tokens on
# layers of N·K > 16 Mi whose 32-row CTAs fill >= 70 % of a wave; W4A16 with 8 warps per row block).
# 1) test_gemm; 2) memcheck of tactic 65 forced on ragged shapes and of the rule's auto path (qkv, 8192x8192
# M = 20); 3) the rule vs FP4KIT_DECODE_M24_R32=0 on every shape at M = 17 / 20 / 24, alternated x2, graph
# replay with PDL; 4) the #5 c points at M = 24 with the cuBLASLt baselines (acceptance settings).
set -u; R=$OUT/r2; mkdir -p $R; S=$R/summary.txt
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry || exit 3
H=build-carry/tools/fp4kit; $H info > $R/info.txt 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.memory,power.limit,temperature.gpu --format=csv > $R/nvidia-smi.txt
timeout 150 build-carry/tests/test_gemm > $R/test_gemm.log 2>&1; echo "test_gemm rc=$? t=$SECONDS $(grep -E '^\[  (PASSED|FAILED) ' $R/test_gemm.log | tr '\n' ' ')" >> $S
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
mc() { local name=$1; shift; timeout 90 $SAN --tool memcheck $H bench gemm "$@" --mode both --reps 2 --warmup 1 --no-baseline > $R/$name.log 2>&1
  echo "$name rc=$? t=$SECONDS $(grep -E 'ERROR SUMMARY' $R/$name.log | tr '\n' ' ')" >> $S; }
mc memcheck_t65 --shapes 1008x4160,8208x1056 --m 13,17,24 --tactic 65
mc memcheck_auto --shapes qkv,8192x8192 --m 20
b() { local name=$1; shift; timeout 90 $H bench gemm "$@" --mode both --graph --pdl --no-baseline --target-ms 30 --csv --output $R/$name.csv > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS" >> $S; }
for r in 1 2; do
  FP4KIT_DECODE_M24_R32=0 b off_r$r --shapes all --m 17,20,24
  b rule_r$r --shapes all --m 17,20,24
done
timeout 150 $H bench gemm --shapes all --m 24 --mode both --graph --pdl --target-ms 200 --warmup-ms 100 --csv --output $R/accept_gemm_m24.csv > $R/accept_gemm_m24.log 2>&1; echo "accept_m24 rc=$? t=$SECONDS" >> $S
python3 scripts/ab_table.py --col graph_us --base off $R/off_r*.csv $R/rule_r*.csv > $R/ab_rule.txt 2>&1
cat $S; cat $R/ab_rule.txt
tar -C $OUT -czf $OUT/run2.tgz r2 && rm -rf $R
