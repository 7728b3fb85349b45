#!/usr/bin/env bash
# Session 48 run 1 (session 47's unrun run 3, plus two forced sweeps; not run in session 48 either: no machine was lent): carry ["build-carry"] with
# fp4kit-binaries.tar.xz = tools/fp4kit built from 2ce689b (the 33..64-token narrow rule in BOTH modes) and
# prev.tar.xz = tools/fp4kit_prev (af7f7a7, the rule before). Session 47 left both packs in /work/main/build-carry
# (check `info`'s source). HEAD applies the rule to W4A16 only (W4A4 unmeasured), so the W4A16 half of this A/B
# confirms HEAD and the W4A4 half decides whether `!w4a4` comes out of decode_dp_heuristic's 33..64 branch.
# Narrow layers, auto path, alternated x2, both modes, M = 33..64 with the CPU check. One tarball.
set -u; R=$OUT/r3; mkdir -p $R; S=$R/summary.txt
pack() { (cd $OUT && tar -czf r3.tgz r3); }
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry && tar -xJf build-carry/prev.tar.xz -C build-carry || exit 3
H=build-carry/tools/fp4kit; B=build-carry/tools/fp4kit_prev; $H info > $R/info.txt 2>&1
echo "gpu $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" >> $S
SH=1024x4096,2048x2048,2048x8192,4096x2048,512x4096,1024x14336,3072x3072,1536x4096
g() { local name=$1 bin=$2; timeout 90 $bin bench gemm --shapes $SH --m 33,40,48,56,64 --mode both --graph --pdl --no-baseline --target-ms 30 --csv --output $R/$name.csv > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS $(grep -c ',ok,' $R/$name.csv) ok" >> $S; }
for r in 1 2; do g prev_r$r $B; g head_r$r $H; pack; done
python3 scripts/ab_table.py --col graph_us --base prev $R/prev_r*.csv $R/head_r*.csv > $R/ab_m64.txt 2>&1; pack
# Narrow layers with N*K > 16 Mi past 16 tokens (the 9..32 and 33..64 rules stop at 16 Mi): every tactic, both modes.
timeout 200 $H bench gemm --shapes 2048x14336,1024x28672 --m 24,32,48 --mode both --tactic all --graph --pdl --no-baseline --no-check --target-ms 20 --csv --output $R/sweep_big.csv > $R/sweep_big.log 2>&1; echo "sweep rc=$? t=$SECONDS" >> $R/summary.txt; pack
# Mid-size layers at 33..64 tokens (#5 c's furthest misses: o 0.29 / 0.24 of the roofline at M = 64 on wgmma): every tactic.
timeout 240 $H bench gemm --shapes 4096x4096,6144x4096,8192x8192 --m 40,48,64 --mode both --tactic all --graph --pdl --no-baseline --no-check --target-ms 20 --csv --output $R/sweep_mid.csv > $R/sweep_mid.log 2>&1; echo "sweep_mid rc=$? t=$SECONDS" >> $R/summary.txt; pack
cat $S; grep -- '->' $R/ab_m64.txt | sort -k6 -n; tail -1 $R/ab_m64.txt
rm -rf $R; true
