#!/usr/bin/env bash
# Session 41 run 2 (H100): the 24-token decode rule (decode_dpfr_m24_r16_u4 at 17..24 tokens where its
# 16-row CTAs of 8 warps fill 90..100 % of one wave: down, o). NOT RUN in session 41 (no device time left):
# build and pack HEAD's binaries first. 1) test_gemm (its case {20, 260, 4160} is new); 2) memcheck of tactic 64 forced on
# ragged shapes and of the rule's auto path; 3) A/B FP4KIT_DECODE_M24=0 (the rule before) vs unset,
# alternated twice, graph replay with PDL, on down / o (the changed choices).
set -u; R=$OUT/r2; mkdir -p $R; S=$R/summary.txt
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry || exit 3
H=build-carry/tools/fp4kit; $H info > $R/info.txt 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.memory,power.limit,temperature.gpu --format=csv > $R/nvidia-smi.txt
timeout 150 build-carry/tests/test_gemm > $R/test_gemm.log 2>&1; echo "test_gemm rc=$? t=$SECONDS $(grep -E '^\[  (PASSED|FAILED) ' $R/test_gemm.log | tr '\n' ' ')" >> $S
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 90 $SAN --tool memcheck $H bench gemm --shapes 1008x4160,8208x1056 --m 13,17,24 --mode both --tactic 64 --reps 2 --warmup 1 --no-baseline > $R/memcheck_t64.log 2>&1
echo "memcheck_t64 rc=$? t=$SECONDS $(grep -E 'ERROR SUMMARY' $R/memcheck_t64.log | tr '\n' ' ')" >> $S
timeout 60 $SAN --tool memcheck $H bench gemm --shapes down,o --m 20 --mode both --reps 2 --warmup 1 --no-baseline > $R/memcheck_auto.log 2>&1
echo "memcheck_auto rc=$? t=$SECONDS $(grep -E 'ERROR SUMMARY' $R/memcheck_auto.log | tr '\n' ' ')" >> $S
ab() { FP4KIT_DECODE_M24=$1 timeout 60 $H bench gemm --shapes down,o --m 17,20,24 --mode both --graph --pdl --no-baseline --target-ms 30 --csv --output $R/$2.csv > $R/$2.log 2>&1; echo "$2 rc=$? t=$SECONDS" >> $S; }
ab 0 off_r1; ab '' rule_r1; ab 0 off_r2; ab '' rule_r2
python3 scripts/ab_table.py --col graph_us --base off $R/off_r*.csv $R/rule_r*.csv > $R/ab_graph.txt 2>&1
cat $S; cat $R/ab_graph.txt
tar -C $OUT -czf $OUT/run2.tgz r2 && rm -rf $R
