#!/usr/bin/env bash
# Session 45 run 4: `bash docs/wip/s45-rule-gpu-run.sh` with carry ["build-carry"] (pack of 6f05533+): test_gemm, then
# the heuristic's 17..32-token rule on 8192x28672-like layers (256-row tile -> 128-row pair tile), auto path,
# FP4KIT_WGMMA_PAIRS=0 (the rules before) vs default, alternated x2, graph + PDL, 60 ms samples; one tarball.
set -u; R=$OUT/r4; mkdir -p $R; S=$R/summary.txt
pack() { (cd $OUT && tar -czf r4.tgz r4); }
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry || exit 3
H=build-carry/tools/fp4kit; $H info > $R/info.txt 2>&1
timeout 120 build-carry/tests/test_gemm > $R/test_gemm.log 2>&1; echo "test_gemm rc=$? t=$SECONDS $(grep -E '^\[  (PASSED|FAILED) ' $R/test_gemm.log | tr '\n' ' ')" >> $S; pack
b() { local name=$1; timeout 100 $H bench gemm --shapes seed.8192x28672,8192x16384 --m 17,20,24,28,32 --mode both --graph --pdl --no-baseline --no-check --target-ms 60 --csv --output $R/$name.csv > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS" >> $S; }
for r in 1 2; do FP4KIT_WGMMA_PAIRS=0 b before_r$r; FP4KIT_WGMMA_PAIRS=1 b rule_r$r; done  # (=1: forced on an H200 too)
python3 scripts/ab_table.py --col graph_us --base before $R/before_r*.csv $R/rule_r*.csv > $R/ab_rule.txt 2>&1; pack
cat $S $R/ab_rule.txt
