#!/usr/bin/env bash
# Session 46's unrun run 6 (H100; refused for lack of device time): carry ["build-carry"] with
# fp4kit-binaries.tar.xz = a build of f0f75e4 (before session 46's decode changes: tools/fp4kit) and new.tar.xz = a
# build of HEAD renamed tools/fp4kit_new, tests/test_gemm_new (see docs/wip/README.md for packing).
# 1) test_gemm; 2) narrow layers with K = 8192 / 14336 (the dp rule's W4A16 extension, measured forced only) and two
#    of run 5's, auto path, both modes, M = 1..16, alternated x2, with the CPU check; 3) W4A4 past K = 4096 (still on
#    the rule before): the dp tiles forced (49 at M = 1, 51 at 8, 20 / 53 at 16) against auto. One tarball.
set -u; R=$OUT/r6; mkdir -p $R; S=$R/summary.txt
pack() { (cd $OUT && tar -czf r6.tgz r6); }
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry && tar -xJf build-carry/new.tar.xz -C build-carry || exit 3
H=build-carry/tools/fp4kit; N=build-carry/tools/fp4kit_new; $N info > $R/info_new.txt 2>&1
echo "gpu $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" >> $S
timeout 100 build-carry/tests/test_gemm_new > $R/test_gemm_new.log 2>&1; echo "test_gemm_new rc=$? t=$SECONDS $(grep -E '^\[  (PASSED|FAILED) ' $R/test_gemm_new.log | tr '\n' ' ')" >> $S; pack
g() { local name=$1 bin=$2; timeout 60 $bin bench gemm --shapes 2048x8192,2048x14336,1024x14336,1024x4096,4096x2048 --m 1,4,8,12,16 --mode both --graph --pdl --no-baseline --target-ms 30 --csv --output $R/$name.csv > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS $(grep -c ',ok,' $R/$name.csv) ok" >> $S; }
for r in 1 2; do g before_r$r $H; g new_r$r $N; done
python3 scripts/ab_table.py --col graph_us --base before $R/before_r*.csv $R/new_r*.csv > $R/ab_narrow.txt 2>&1; pack
f() { local name=$1 m=$2 tac=$3; timeout 40 $N bench gemm --shapes 2048x8192,2048x14336,1024x14336 --m $m --mode w4a4 --tactic $tac --graph --pdl --no-baseline --target-ms 30 --csv --output $R/$name.csv > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS" >> $S; }
f w4a4_m1_t49 1 49; f w4a4_m8_t51 8 51; f w4a4_m16_t20 16 20; f w4a4_m16_t53 16 53; pack
# 4) leads: at M = 12 / 16 two passes of the 8-token dp tile 51 against the rule's 53 (run 5b: 5-12 % ahead, forced);
#    17..32 tokens on narrow layers, every tactic (dp passes vs the wgmma 24 / 32-token tiles the heuristic keeps).
timeout 60 $N bench gemm --shapes 1024x4096,2048x2048,4096x1024,2048x14336 --m 12,16 --mode both --tactic 51 --graph --pdl --no-baseline --no-check --target-ms 30 --csv --output $R/t51_m16.csv > $R/t51_m16.log 2>&1; echo "t51 rc=$? t=$SECONDS" >> $S
timeout 150 $N bench gemm --shapes 1024x4096,2048x2048,4096x1024 --m 20,24,32 --mode w4a16 --tactic all --graph --pdl --no-baseline --no-check --target-ms 20 --csv --output $R/sweep_m24.csv > $R/sweep_m24.log 2>&1; echo "sweep rc=$? t=$SECONDS" >> $S; pack
cat $S $R/ab_narrow.txt; grep -h fp4kit $R/w4a4_*.csv | cut -d, -f1,4,5,7,14,15; grep w4a4 $R/new_r1.csv | cut -d, -f1,4,5,7,15
rm -rf $R; true
