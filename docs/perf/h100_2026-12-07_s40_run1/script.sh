#!/usr/bin/env bash
# Session 40 run 1 (H100, or whichever GPU came): the split-tail tactics (wgmma `_st`, ids 55-63) and
# the wave model's rule for them. 1) test_gemm (all; SplitTailRagged runs every `_st` tactic) and
# memcheck of SplitTailRagged; 2) A/B of the rule, FP4KIT_WGMMA_SPLIT_TAIL=0 (off) vs 1 (on), alternated twice in one binary, on the
# shapes and M where it changes the choice (and neighbours that it does not: controls); 3) on an
# H100, the acceptance sweeps of #5 / #7 with the rule on (gpu-check BENCH=acceptance's four commands).
set -u; R=$OUT/r1; mkdir -p $R; S=$R/summary.txt
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry || exit 3
H=build-carry/tools/fp4kit; $H info > $R/info.txt 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.memory,power.limit,temperature.gpu --format=csv > $R/nvidia-smi.txt
timeout 150 build-carry/tests/test_gemm > $R/test_gemm.log 2>&1; echo "test_gemm rc=$? t=$SECONDS $(grep -E '^\[  (PASSED|FAILED) ' $R/test_gemm.log | tr '\n' ' ')" >> $S
grep -q '^\[  FAILED' $R/test_gemm.log && { cat $S; grep -B2 -A12 'Failure' $R/test_gemm.log | head -60; tar -C $OUT -czf $OUT/run1.tgz r1; exit 1; }
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 150 $SAN --tool memcheck build-carry/tests/test_gemm --gtest_filter=GemmGpu.SplitTailRagged > $R/memcheck_split_tail.log 2>&1
echo "memcheck rc=$? t=$SECONDS $(grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED) ' $R/memcheck_split_tail.log | tr '\n' ' ')" >> $S
ab() { FP4KIT_WGMMA_SPLIT_TAIL=$1 timeout 100 $H bench gemm --shapes seed,gate_up,qkv --m 288,320,384,448,512,640,768,1024,1280,1536 --mode both --graph --pdl --no-baseline --target-ms 60 --warmup-ms 40 --csv --output $R/$2.csv > $R/$2.log 2>&1; echo "$2 rc=$? t=$SECONDS" >> $S; }
ab 0 off_r1; ab 1 on_r1; ab 0 off_r2; ab 1 on_r2
python3 scripts/ab_table.py --col us --base off $R/off_r*.csv $R/on_r*.csv > $R/ab_us.txt 2>&1
python3 scripts/ab_table.py --col graph_us --base off $R/off_r*.csv $R/on_r*.csv > $R/ab_graph.txt 2>&1
run() { local name=$1; shift; timeout 200 $H "$@" --csv --output $R/accept_$name.csv > $R/accept_$name.log 2>&1
  echo "acc_$name rc=$? t=$SECONDS" >> $S; }
if grep -q H100 $R/nvidia-smi.txt; then  # the acceptance GPU (the call may get an H200)
run gemm_small bench gemm --shapes all --m 1,2,3,4,5,6,8,9,12,16 --mode both --graph --pdl --target-ms 30
run moe_small bench moe --preset all --t 1,2,4,8,16 --mode both --graph --pdl --target-ms 30
run gemm_mid bench gemm --shapes all --m 24,32,48,64,96,128,192,256,384,512,1024,1536 --mode both --graph --pdl --target-ms 200 --warmup-ms 100
run moe_large bench moe --preset all --t 4096 --mode both --no-reduced-check --target-ms 200 --warmup-ms 100
python3 scripts/acceptance.py $R/accept_*.csv > $R/acceptance.txt 2>&1
fi
cat $S; grep -E '^(acceptance:|  #[57] [a-c]:)' $R/acceptance.txt 2>/dev/null; grep -E 'x_|ratio|MISS|median' $R/ab_us.txt | head -5
tar -C $OUT -czf $OUT/run1.tgz r1 && rm -rf $R
