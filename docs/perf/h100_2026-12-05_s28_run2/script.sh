#!/usr/bin/env bash
# Next GPU session, run 2 (performance, ~300 s; same carry as run 1, binaries already unpacked if the
# machine is still warm): A/B of the two kernel patches, alternated repetitions, graph replay with PDL.
# a. MoE fixes (fused-decode unit dispenser + PDL ordering): head vs fix, the presets whose T = 8 / 16 take the fused-decode path
#    (fi-256, qwen3-30b-a3b, qwen3.6-35b-a3b at T = 16), both modes; #7 a's margins are 1-8 %.
# b. W4A4 in-grid arrangement: head / ingrid without state (plain A loads) / ingrid --sync-state,
#    M = 3, 8, 9, 16 on the four >= 32 MB shapes (#5 a misses by 2.5-6.7 % there).
set -u
R=${OUT:-/tmp}/s29r2; mkdir -p $R; N=gpu-bin/s29; X=/tmp/s29; mkdir -p $X
for f in $N/*.xz; do b=$(basename $f .xz); [ -x $X/$b ] || { { xz -dc $f 2>/dev/null || python3 -c "import lzma,sys; sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())" $f; } > $X/$b; chmod +x $X/$b; }; done
B="bench moe --preset fi-256,qwen3-30b-a3b,qwen3.6-35b-a3b --t 8,16 --mode both --graph --pdl --no-baseline --no-reduced-check --no-check --target-ms 40 --csv"
for rep in 1 2; do
  timeout 80 $X/fp4kit_head $B --output $R/moe_head_r$rep.csv > /dev/null 2>&1 || echo "moe head $rep rc=$?"
  timeout 80 $X/fp4kit_fix $B --output $R/moe_fix_r$rep.csv > /dev/null 2>&1 || echo "moe fix $rep rc=$?"
done
S="bench gemm --shapes 8192x8192,down,gate_up,8192x28672 --m 3,8,9,16 --mode w4a4 --graph --pdl --no-baseline --target-ms 30 --csv"
for rep in 1 2 3; do
  timeout 50 $X/fp4kit_head $S --output $R/gemm_head_r$rep.csv > /dev/null 2>&1 || echo "gemm head $rep rc=$?"
  timeout 50 $X/fp4kit_ingrid $S --output $R/gemm_plain_r$rep.csv > /dev/null 2>&1 || echo "gemm plain $rep rc=$?"
  timeout 50 $X/fp4kit_ingrid $S --sync-state --output $R/gemm_ingrid_r$rep.csv > /dev/null 2>&1 || echo "gemm ingrid $rep rc=$?"
done
echo "== a. fused-decode dispenser"; python3 scripts/ab_table.py --base moe_head $R/moe_head_r*.csv $R/moe_fix_r*.csv
echo "== b. W4A4 in-grid arrangement"; python3 scripts/ab_table.py --base gemm_head $R/gemm_head_r*.csv $R/gemm_plain_r*.csv $R/gemm_ingrid_r*.csv
cd ${OUT:-/tmp} && tar czf s29r2.tgz s29r2 && rm -rf s29r2
