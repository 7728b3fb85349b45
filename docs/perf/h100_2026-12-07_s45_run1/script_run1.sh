#!/usr/bin/env bash
# Written in session 44, not run (no GPU machine came): `bash docs/wip/short-k-split-gpu-run.sh` with carry ["build-carry"]
# (pack from a build of HEAD: rm -rf build-carry && mkdir build-carry && tar -C build -cf - tools/fp4kit tests/test_gemm | xz -T2 -6 >
# build-carry/fp4kit-binaries.tar.xz). 1) test_gemm (GemmGpu.ShortKSplitShrink); 2) the opt-in short-K
# split halving, FP4KIT_WGMMA_SPLIT_SHRINK=1 vs 0, on short-K layers, M = 17..64, graph replay with PDL, both modes,
# alternated x2; memcheck of the auto path with it on; 3) every tactic at the close #5 c misses (gate_up / 8192x28672 /
# 8192x8192 M = 24, 32) and 4) the #5 a / b sweep (M <= 16), on an H100 only; 5) on an H200 only: the pair rule forced on
# (FP4KIT_WGMMA_PAIRS=1) vs 0, M = 24..128, x2. ~5 min on an H100, ~7 on an H200.
set -u; R=$OUT/r1; mkdir -p $R; S=$R/summary.txt
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry || exit 3
H=build-carry/tools/fp4kit; $H info > $R/info.txt 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.memory,power.limit,temperature.gpu --format=csv > $R/nvidia-smi.txt
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "gpu $GPU" >> $S
timeout 200 build-carry/tests/test_gemm > $R/test_gemm.log 2>&1; echo "test_gemm rc=$? t=$SECONDS $(grep -E '^\[  (PASSED|FAILED) ' $R/test_gemm.log | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|ShortKSplitShrink\]' $R/test_gemm.log | head -20 >> $S
SK=1024x1024,2048x1024,2048x2048,4096x1024,2048x512,4096x2048,3072x2048,6144x1024,8192x2048
b() { local name=$1; shift; timeout 120 $H bench gemm "$@" --m 17,24,32,40,48,56,64 --mode both --graph --pdl --no-baseline --no-check --target-ms 30 --csv --output $R/$name.csv > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS" >> $S; }
for r in 1 2; do
  FP4KIT_WGMMA_SPLIT_SHRINK=0 b off_r$r --shapes $SK
  FP4KIT_WGMMA_SPLIT_SHRINK=1 b shrink_r$r --shapes $SK
done
python3 scripts/ab_table.py --col graph_us --base off $R/off_r*.csv $R/shrink_r*.csv > $R/ab_shrink.txt 2>&1
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
FP4KIT_WGMMA_SPLIT_SHRINK=1 timeout 90 $SAN --tool memcheck $H bench gemm --shapes 4048x1056,2064x2080 --m 20,40 --mode both --reps 2 --warmup 1 --no-baseline > $R/memcheck_auto.log 2>&1
echo "memcheck_auto rc=$? t=$SECONDS $(grep -E 'ERROR SUMMARY' $R/memcheck_auto.log | tr '\n' ' ')" >> $S
if [[ "$GPU" != *H200* ]]; then
timeout 200 $H bench gemm --shapes gate_up,seed.8192x28672,seed.8192x8192 --m 24,32 --mode both --tactic all --graph --pdl --no-baseline --no-check --target-ms 30 --csv --output $R/sweep.csv > $R/sweep.log 2>&1; echo "sweep rc=$? t=$SECONDS" >> $S
timeout 200 $H bench gemm --shapes all --m 1,2,3,4,5,6,8,9,12,16 --mode both --graph --pdl --target-ms 30 --csv --output $R/accept_gemm_small.csv > $R/accept_gemm_small.log 2>&1; echo "acc_gemm_small rc=$? t=$SECONDS" >> $S
fi
if [[ "$GPU" == *H200* ]]; then
  p() { local name=$1; shift; timeout 120 $H bench gemm --shapes all --m 24,32,40,48,64,96,128 --mode both --graph --pdl --no-baseline --no-check --target-ms 60 --csv --output $R/$name.csv > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS" >> $S; }
  for r in 1 2; do FP4KIT_WGMMA_PAIRS=0 p poff_r$r; FP4KIT_WGMMA_PAIRS=1 p pon_r$r; done
  python3 scripts/ab_table.py --col graph_us --base poff $R/poff_r*.csv $R/pon_r*.csv > $R/ab_pairs.txt 2>&1
fi
cat $S; cat $R/ab_shrink.txt; [ -f $R/ab_pairs.txt ] && cat $R/ab_pairs.txt | head -80
