#!/usr/bin/env bash
# Session 40 run 2 (H100; NOT RUN in session 40: no machine): the final code (dd0b9f7, split-tail weight 0.7; the
# binaries of any later commit do as well). test_gemm and test_tune; #5 b's
# smaller layers (o, qkv) at M <= 16 again, per call and graph (run 1's four o outliers); the changed
# choice at qkv M = 640 (back to 256x128) against the rule off, and M = 768 / 1024 on the split tail.
set -u; R=$OUT/r2; mkdir -p $R; S=$R/summary.txt
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry || exit 3
H=build-carry/tools/fp4kit; $H info > $R/info.txt 2>&1
for t in test_gemm test_tune; do
  timeout 120 build-carry/tests/$t > $R/$t.log 2>&1; echo "$t rc=$? t=$SECONDS $(grep -E '^\[  (PASSED|FAILED) ' $R/$t.log | tr '\n' ' ')" >> $S
done
timeout 120 $H bench gemm --shapes qkv,o --m 1,2,3,4,5,6,8,9,12,16 --mode both --graph --pdl --target-ms 30 --csv --output $R/accept_gemm_small_qkv_o.csv > $R/small.log 2>&1; echo "small rc=$? t=$SECONDS" >> $S
python3 scripts/acceptance.py --marlin ../shared/baselines/h100_marlin_nvfp4_2026-11-22.txt $R/accept_gemm_small_qkv_o.csv > $R/acceptance_with_marlin.txt 2>&1
ab() { FP4KIT_WGMMA_SPLIT_TAIL=$1 timeout 60 $H bench gemm --shapes qkv --m 640,768,1024 --mode both --graph --pdl --no-baseline --target-ms 60 --warmup-ms 40 --csv --output $R/$2.csv > $R/$2.log 2>&1; echo "$2 rc=$? t=$SECONDS" >> $S; }
ab 0 off_r1; ab '' rule_r1; ab 0 off_r2; ab '' rule_r2
python3 scripts/ab_table.py --col graph_us --base off $R/off_r*.csv $R/rule_r*.csv > $R/ab_graph.txt 2>&1
cat $S; grep -E '#5 b:|MISSED' $R/acceptance_with_marlin.txt; cat $R/ab_graph.txt
tar -C $OUT -czf $OUT/run2.tgz r2 && rm -rf $R
