#!/usr/bin/env bash
# Session 45 run 3: `bash docs/wip/s45-confirm-gpu-run.sh` with carry ["build-carry"] (pack of 0a09a35+).
# 1) test_gemm with the short-K halving on by default; memcheck of the default auto path at short K;
# 2) 8192x28672-like layers (128-row tiles in one wave, long K) at M = 17..32: the 256-row tile the heuristic
#    takes (40 = 256x24 s8, 19 = 256x32 s8) against the 128-row pair tile (70 / 71 = 128x24 / 128x32 s12_k128),
#    forced, alternated x2, graph + PDL, 60 ms samples; 3) on an H200: the pair rule forced on vs off.
# Everything is packed into one tarball at the end of each step (only a few files come back from $OUT).
set -u; R=$OUT/r3; mkdir -p $R; S=$R/summary.txt
pack() { (cd $OUT && tar -czf r3.tgz r3); }
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry || exit 3
H=build-carry/tools/fp4kit; $H info > $R/info.txt 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.memory,power.limit,temperature.gpu --format=csv > $R/nvidia-smi.txt
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "gpu $GPU" >> $S
timeout 120 build-carry/tests/test_gemm > $R/test_gemm.log 2>&1; echo "test_gemm rc=$? t=$SECONDS $(grep -E '^\[  (PASSED|FAILED) ' $R/test_gemm.log | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|\[ShortKSplitShrink\]' $R/test_gemm.log | head -20 >> $S
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 90 $SAN --tool memcheck $H bench gemm --shapes 2048x2048,4096x1024 --m 24,40 --mode both --reps 2 --warmup 1 --no-baseline > $R/memcheck_default.log 2>&1
echo "memcheck_default rc=$? t=$SECONDS $(grep -E 'ERROR SUMMARY' $R/memcheck_default.log | tr '\n' ' ')" >> $S; pack
b() { local name=$1 t=$2 m=$3; timeout 100 $H bench gemm --shapes seed.8192x28672,8192x16384 --m $m --mode both --tactic $t --graph --pdl --no-baseline --no-check --target-ms 60 --csv --output $R/$name.csv > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS" >> $S; }
for r in 1 2; do
  b t40_r$r 40 17,20,24; b t70_r$r 70 17,20,24; b t19_r$r 19 25,28,32; b t71_r$r 71 25,28,32
done
python3 scripts/ab_table.py --col graph_us --base t40 $R/t40_r*.csv $R/t70_r*.csv > $R/ab_m24.txt 2>&1
python3 scripts/ab_table.py --col graph_us --base t19 $R/t19_r*.csv $R/t71_r*.csv > $R/ab_m32.txt 2>&1; pack
if [[ "$GPU" == *H200* ]]; then
  p() { local name=$1; shift; timeout 100 $H bench gemm --shapes all --m 24,32,48,64,96,128 --mode both --graph --pdl --no-baseline --no-check --target-ms 40 --csv --output $R/$name.csv > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS" >> $S; }
  for r in 1 2; do FP4KIT_WGMMA_PAIRS=0 p poff_r$r; FP4KIT_WGMMA_PAIRS=1 p pon_r$r; done
  python3 scripts/ab_table.py --col graph_us --base poff $R/poff_r*.csv $R/pon_r*.csv > $R/ab_pairs.txt 2>&1; pack
fi
cat $S $R/ab_m24.txt $R/ab_m32.txt; [ -f $R/ab_pairs.txt ] && grep -vE ' (0\.99|1\.00|1\.01)[0-9] ' $R/ab_pairs.txt | head -60; true
