#!/usr/bin/env bash
# Session 27 run 8: W4A4 at 1..2 tokens with the per-warp slice staging (landed f890717): tactics 14
# (dp r32), 49 (dp rolling r16, the rule's usual pick), 50 (dp rolling r32), 52 (the NVFP4 ring r32)
# forced, 3 repetitions in rotated order, graph replay with PDL; table of medians.
set -u
R=$OUT/m12; mkdir -p $R
F=build-carry/tools/fp4kit; [ -x $F ] || tar -xzf build-carry/fp4kit-binaries.tar.gz -C build-carry
for rep in 1 2 3; do
  case $rep in 1) order="14 49 50 52";; 2) order="52 50 49 14";; 3) order="49 52 14 50";; esac
  for t in $order; do
    timeout 60 $F bench gemm --shapes 8192x8192,8192x28672,gate_up,down,o,qkv --m 1,2 --mode w4a4 --tactic $t \
      --graph --pdl --no-baseline --target-ms 30 --csv --output $R/t${t}_r$rep.csv > /dev/null 2>&1 || echo "t$t $rep rc=$?"
  done
done
python3 scripts/ab_table.py --base t49 $R/t49_r*.csv $R/t14_r*.csv $R/t50_r*.csv $R/t52_r*.csv
cd $OUT && tar czf m12.tgz m12 && rm -rf m12
