#!/usr/bin/env bash
# Session 46 run 5 (H100): `bash docs/wip/s46-run5.sh` with carry ["build-carry"]: fp4kit-binaries.tar.xz = before
# (f0f75e4), new.tar.xz = tools/fp4kit_new + tests/test_gemm_new: decode stream-K with coalesced partials and >= 8
# units per warp, narrow layers at K <= 4096 / M <= 16 on the dp tiles, the 17..32 rule bounded to <= 128-chunk units.
# 1) test_gemm + memcheck of stream-K tactic 3; 2) narrow layers, auto path, before vs new, alternated x2;
# 3) Mixtral's pipeline with FP4KIT_HBM_RICH=1 (grouped decode stream-K), before vs new, x2. One tarball.
set -u; R=$OUT/r5; mkdir -p $R; S=$R/summary.txt
pack() { (cd $OUT && tar -czf r5.tgz r5); }
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry && tar -xJf build-carry/new.tar.xz -C build-carry || exit 3
H=build-carry/tools/fp4kit; N=build-carry/tools/fp4kit_new; $N info > $R/info_new.txt 2>&1
echo "gpu $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" >> $S
timeout 120 build-carry/tests/test_gemm_new > $R/test_gemm_new.log 2>&1; echo "test_gemm_new rc=$? t=$SECONDS $(grep -E '^\[  (PASSED|FAILED) ' $R/test_gemm_new.log | tr '\n' ' ')" >> $S
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 60 $SAN --tool memcheck $N bench gemm --shapes 1008x4160,2064x1056 --m 1,13,16 --mode both --tactic 3 --reps 2 --warmup 1 --no-baseline > $R/memcheck_t3.log 2>&1
echo "memcheck tactic 3 rc=$? t=$SECONDS $(grep -E 'ERROR SUMMARY' $R/memcheck_t3.log | tr '\n' ' ')" >> $S; pack
g() { local name=$1 bin=$2; timeout 60 $bin bench gemm --shapes 512x512,1024x1024,1024x4096,2048x2048,4096x1024,6144x1024,3072x3072,512x4096 --m 1,4,8,16 --mode both --graph --pdl --no-baseline --target-ms 30 --csv --output $R/$name.csv > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS $(grep -c ',ok,' $R/$name.csv) ok" >> $S; }
m() { local name=$1 bin=$2; FP4KIT_HBM_RICH=1 timeout 60 $bin bench moe --preset mixtral-8x7b --t 4,8,16 --path pipeline --mode both --graph --pdl --no-baseline --no-check --target-ms 30 --csv --output $R/$name.csv > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS" >> $S; }
for r in 1 2; do g before_r$r $H; g new_r$r $N; m mbefore_r$r $H; m mnew_r$r $N; done
python3 scripts/ab_table.py --col graph_us --base before $R/before_r*.csv $R/new_r*.csv > $R/ab_narrow.txt 2>&1
python3 scripts/ab_table.py --col graph_us --base mbefore $R/mbefore_r*.csv $R/mnew_r*.csv > $R/ab_moe.txt 2>&1; pack
cat $S $R/ab_narrow.txt $R/ab_moe.txt
rm -rf $R; true
