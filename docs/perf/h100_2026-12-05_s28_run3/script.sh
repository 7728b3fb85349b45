#!/usr/bin/env bash
# Session 28 run 3: head (3a246ad) vs the in-grid binary WITHOUT the state ("plain": the arrangement
# kernel in front as before; the patch's plain A loads, arrange_item header and the in-grid code
# compiled in but not taken), M = 1..16 on six layers, both modes, graph replay with PDL, 3 reps.
set -u; R=$OUT/plain; mkdir -p $R; X=/tmp/s29; N=gpu-bin/s29; mkdir -p $X
for f in $N/fp4kit_head.xz $N/fp4kit_ingrid.xz; do b=$(basename $f .xz); [ -x $X/$b ] || { xz -dc $f > $X/$b; chmod +x $X/$b; }; done
S="bench gemm --shapes 8192x8192,down,gate_up,8192x28672,qkv,o --m 1,2,3,4,6,8,9,12,16 --mode both --graph --pdl --no-baseline --target-ms 30 --csv"
for rep in 1 2 3; do timeout 80 $X/fp4kit_head $S --output $R/head_r$rep.csv >/dev/null 2>&1 || echo "head $rep rc=$?"; timeout 80 $X/fp4kit_ingrid $S --output $R/plain_r$rep.csv > /dev/null 2>&1 || echo "plain $rep rc=$?"; done
python3 scripts/ab_table.py --base head $R/head_r*.csv $R/plain_r*.csv
cd $OUT && tar czf plain.tgz plain && rm -rf plain
