#!/usr/bin/env bash
# Session 43 run 3 (H100): the two-stage-step rule (wgmma_pair_step_tactic: 128-row tiles of 24..64 tokens, s8 where
# a unit covers <= 32 chunks, s12 beyond). 1) test_gemm (auto paths now on the new tactics); 2) memcheck of the auto
# path on a ragged shape; 3) the rule vs FP4KIT_WGMMA_PAIRS=0 on every shape at M = 24..128 at the acceptance
# settings (200 ms samples after 100 ms warm-up), alternated x2, graph replay with PDL, both modes; 4) the
# acceptance sweeps of #5 / #7 (gpu-check BENCH=acceptance's four commands), scored on the dev machine.
set -u; R=$OUT/r3; mkdir -p $R; S=$R/summary.txt
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry || exit 3
H=build-carry/tools/fp4kit; $H info > $R/info.txt 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.memory,power.limit,temperature.gpu --format=csv > $R/nvidia-smi.txt
timeout 200 build-carry/tests/test_gemm > $R/test_gemm.log 2>&1; echo "test_gemm rc=$? t=$SECONDS $(grep -E '^\[  (PASSED|FAILED) ' $R/test_gemm.log | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED' $R/test_gemm.log | head -20 >> $S
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 90 $SAN --tool memcheck $H bench gemm --shapes 4104x4160,8200x8224 --m 40,64 --mode both --reps 2 --warmup 1 --no-baseline > $R/memcheck_auto.log 2>&1
echo "memcheck_auto rc=$? t=$SECONDS $(grep -E 'ERROR SUMMARY' $R/memcheck_auto.log | tr '\n' ' ') $(grep -c k128 $R/memcheck_auto.log) k128 rows" >> $S
b() { local name=$1; shift; timeout 120 $H bench gemm "$@" --shapes all --m 24,32,40,48,64,96,128 --mode both --graph --pdl --no-baseline --no-check --target-ms 200 --warmup-ms 100 --csv --output $R/$name.csv > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS" >> $S; }
for r in 1 2; do
  FP4KIT_WGMMA_PAIRS=0 b off_r$r
  b rule_r$r
done
python3 scripts/ab_table.py --col graph_us --base off $R/off_r*.csv $R/rule_r*.csv > $R/ab_rule.txt 2>&1
run() { local name=$1; shift; timeout 200 $H "$@" --csv --output $R/accept_$name.csv > $R/accept_$name.log 2>&1
  echo "acc_$name rc=$? t=$SECONDS" >> $S; }
run gemm_small bench gemm --shapes all --m 1,2,3,4,5,6,8,9,12,16 --mode both --graph --pdl --target-ms 30
run moe_small bench moe --preset all --t 1,2,4,8,16 --mode both --graph --pdl --target-ms 30
run gemm_mid bench gemm --shapes all --m 24,32,48,64,96,128,192,256,384,512,1024,1536 --mode both --graph --pdl --target-ms 200 --warmup-ms 100
run moe_large bench moe --preset all --t 4096 --mode both --no-reduced-check --target-ms 200 --warmup-ms 100
cat $S; cat $R/ab_rule.txt
tar -C $OUT -czf $OUT/run3.tgz r3 && rm -rf $R
