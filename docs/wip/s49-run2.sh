#!/usr/bin/env bash
# Session 49 run 2: A/B of the session 49 candidate rules in one binary (5d64c53), carry ["build-carry"]
# (fp4kit-binaries.tar.xz = tools/fp4kit + tests/test_gemm of 5d64c53). "before" = FP4KIT_DECODE_MID_M=0
# FP4KIT_WGMMA_NARROW_ONE_PASS=0 (the rules of 01bd61f); "rule" = the defaults. Auto path, both modes, CPU check,
# alternated x2; then every tactic on down / qkv at M = 32 (the next candidates). One tarball.
set -u; R=$OUT/r2; mkdir -p $R; S=$R/summary.txt
pack() { (cd $OUT && tar -czf r2.tgz r2); }
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry || exit 3
H=build-carry/tools/fp4kit; $H info > $R/info.txt 2>&1
echo "gpu $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" >> $S
SH=2048x14336,1536x14336,2048x12288,1024x28672,4096x4096,4096x14336,4096x8192,3072x4096
g() { local name=$1; shift; env "$@" timeout 150 $H bench gemm --shapes $SH --m 20,24,28,32,40,48,56,64 --mode both --graph --pdl --no-baseline --target-ms 100 --warmup-ms 50 --csv --output $R/$name.csv > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS $(grep -c ',ok,' $R/$name.csv) ok" >> $S; }
for r in 1 2; do g before_r$r FP4KIT_DECODE_MID_M=0 FP4KIT_WGMMA_NARROW_ONE_PASS=0; g rule_r$r FP4KIT_UNUSED=1; pack; done
python3 scripts/ab_table.py --col graph_us --base before $R/before_r*.csv $R/rule_r*.csv > $R/ab.txt 2>&1; pack
if [ -z "${SHORT:-}" ]; then  # SHORT=1: the A/B only (low device budget)
timeout 120 $H bench gemm --shapes 4096x14336,6144x4096 --m 32 --mode both --tactic all --graph --pdl --no-baseline --no-check --target-ms 20 --csv --output $R/sweep.csv > $R/sweep.log 2>&1; echo "sweep rc=$? t=$SECONDS" >> $S; pack
timeout 100 $H bench gemm --shapes 4096x4096 --m 96,128 --mode both --tactic all --graph --pdl --no-baseline --no-check --target-ms 20 --csv --output $R/sweep_o.csv > $R/sweep_o.log 2>&1; echo "sweep_o rc=$? t=$SECONDS" >> $S; pack
fi
cat $S; grep -- '->' $R/ab.txt | sort -k6 -n; tail -1 $R/ab.txt
rm -rf $R; true
