#!/usr/bin/env bash
# Session 41 run 1 (H100): the final code of session 40 (8b1e96c: split-tail weight 0.7) never ran on a GPU.
# 1) test_gemm, test_tune; 2) the acceptance sweeps of #5 / #7 (gpu-check BENCH=acceptance's four
# commands) scored with the Marlin figures; 3) qkv M = 640 / 768 / 1024 split-tail rule vs off (the
# 0.7 weight's changed choice); 4) every tactic at the #5 c near misses on the large layers
# (M = 24, 32, 192, 256), graph replay with PDL, to find tiles the heuristic leaves out; 5) the new
# 24-token decode tile (tactic 64, decode_dpfr_m24_r16_u4, forced; the heuristic does not take it yet)
# against auto at M = 17 / 20 / 24 on the six shapes, alternated twice, and memcheck of it.
set -u; R=$OUT/r1; mkdir -p $R; S=$R/summary.txt
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry || exit 3
H=build-carry/tools/fp4kit; $H info > $R/info.txt 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.memory,power.limit,temperature.gpu --format=csv > $R/nvidia-smi.txt
for t in test_gemm test_tune; do
  timeout 150 build-carry/tests/$t > $R/$t.log 2>&1; echo "$t rc=$? t=$SECONDS $(grep -E '^\[  (PASSED|FAILED) ' $R/$t.log | tr '\n' ' ')" >> $S
done
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 90 $SAN --tool memcheck $H bench gemm --shapes 1000x4160,8200x1040 --m 13,17,24 --mode both --tactic 64 --reps 2 --warmup 1 --no-baseline > $R/memcheck_t64.log 2>&1
echo "memcheck_t64 rc=$? t=$SECONDS $(grep -E 'ERROR SUMMARY' $R/memcheck_t64.log | tr '\n' ' ')" >> $S
run() { local name=$1; shift; timeout 200 $H "$@" --csv --output $R/accept_$name.csv > $R/accept_$name.log 2>&1
  echo "acc_$name rc=$? t=$SECONDS" >> $S; }
if grep -q H100 $R/nvidia-smi.txt; then  # the acceptance GPU (the call may get an H200)
run gemm_small bench gemm --shapes all --m 1,2,3,4,5,6,8,9,12,16 --mode both --graph --pdl --target-ms 30
run moe_small bench moe --preset all --t 1,2,4,8,16 --mode both --graph --pdl --target-ms 30
run gemm_mid bench gemm --shapes all --m 24,32,48,64,96,128,192,256,384,512,1024,1536 --mode both --graph --pdl --target-ms 200 --warmup-ms 100
run moe_large bench moe --preset all --t 4096 --mode both --no-reduced-check --target-ms 200 --warmup-ms 100
python3 scripts/acceptance.py --marlin ../shared/baselines/h100_marlin_nvfp4_2026-11-22.txt $R/accept_*.csv > $R/acceptance_with_marlin.txt 2>&1
fi
ab() { FP4KIT_WGMMA_SPLIT_TAIL=$1 timeout 60 $H bench gemm --shapes qkv --m 640,768,1024 --mode both --graph --pdl --no-baseline --target-ms 60 --warmup-ms 40 --csv --output $R/$2.csv > $R/$2.log 2>&1; echo "$2 rc=$? t=$SECONDS" >> $S; }
ab 0 off_r1; ab '' rule_r1
python3 scripts/ab_table.py --col graph_us --base off $R/off_r*.csv $R/rule_r*.csv > $R/ab_graph.txt 2>&1
timeout 150 $H bench gemm --shapes seed,gate_up --m 24,32,192,256 --mode both --tactic all --graph --pdl --no-baseline --no-check --target-ms 10 --csv --output $R/all_mid.csv > $R/all_mid.log 2>&1; echo "all_mid rc=$? t=$SECONDS" >> $S
m24() { timeout 60 $H bench gemm --shapes all --m 17,20,24 --mode both --tactic $1 --graph --pdl --no-baseline --target-ms 30 --csv --output $R/$2.csv > $R/$2.log 2>&1; echo "$2 rc=$? t=$SECONDS" >> $S; }
m24 auto auto_r1; m24 64 t64_r1; m24 auto auto_r2; m24 64 t64_r2
python3 scripts/ab_table.py --col graph_us --base auto $R/auto_r*.csv $R/t64_r*.csv > $R/ab_m24.txt 2>&1
cat $S; grep -E '^(acceptance:|  #[57] [a-c]:)' $R/acceptance_with_marlin.txt 2>/dev/null; cat $R/ab_graph.txt | head -20; cat $R/ab_m24.txt | head -60
tar -C $OUT -czf $OUT/run1.tgz r1 && rm -rf $R
