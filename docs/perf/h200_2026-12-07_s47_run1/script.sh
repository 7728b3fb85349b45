#!/usr/bin/env bash
# Session 47 run 1: session 46's run 6 (docs/wip/s46-run6.sh, same packs), then on an H200 only the pair-rule A/B
# (FP4KIT_WGMMA_PAIRS=0 vs 1 with HEAD's binary, every shape + 8192x16384, M = 20..128, both modes, the acceptance's
# timing: 200 ms samples after 100 ms of warm-up, x2). Tarballs r6.tgz and r7.tgz.
set -u
bash docs/wip/s46-run6.sh   # archived here as script_run6.sh
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || exit 0
R=$OUT/r7; mkdir -p $R; S=$R/summary.txt; N=build-carry/tools/fp4kit_new
pack() { (cd $OUT && tar -czf r7.tgz r7); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.memory,power.limit --format=csv > $R/nvidia-smi.txt
p() { local name=$1; timeout 120 $N bench gemm --shapes all,8192x16384 --m 20,24,28,32,48,64,96,128 --mode both --graph --pdl --no-baseline --no-check --target-ms 200 --warmup-ms 100 --csv --output $R/$name.csv > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS" >> $S; }
for r in 1 2; do FP4KIT_WGMMA_PAIRS=0 p poff_r$r; FP4KIT_WGMMA_PAIRS=1 p pon_r$r; pack; done
python3 scripts/ab_table.py --col graph_us --base poff $R/poff_r*.csv $R/pon_r*.csv > $R/ab_pairs.txt 2>&1; pack
cat $S; grep -vE ' (0\.99|1\.00|1\.01)[0-9] ' $R/ab_pairs.txt | head -60
rm -rf $R; true
