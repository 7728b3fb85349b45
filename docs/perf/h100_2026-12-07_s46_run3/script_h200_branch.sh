#!/usr/bin/env bash
# Session 46 run 2 (an H200, kind nvidia-h200): `bash docs/wip/s46-run2.sh` with carry ["build-carry"]:
# fp4kit-binaries.tar.xz = HEAD's tools/fp4kit, tests/test_gemm, tests/test_moe; skc.tar.xz = the same three with
# docs/wip/decode-stream-k-coalesced-partials.patch applied (tools/fp4kit_skc, tests/test_*_skc).
# 1) tests of both builds; 2) the pair rule (and with it the 17..32-token 128-row rule) forced on (FP4KIT_WGMMA_PAIRS=1)
#    vs off (=0) on every shape + 8192x16384, M = 20..128, the acceptance's timing (200 ms after 100 ms warm-up);
# 3) the coalesced decode stream-K partials vs HEAD: narrow layers (stream-K decode tactics) M = 1..16, and the MoE
#    presets whose grouped decode takes stream-K on HBM-rich devices. One tarball, packed per step.
set -u; R=$OUT/r2; mkdir -p $R; S=$R/summary.txt
pack() { (cd $OUT && tar -czf r2.tgz r2); }
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry && tar -xJf build-carry/skc.tar.xz -C build-carry || exit 3
H=build-carry/tools/fp4kit; K=build-carry/tools/fp4kit_skc; $H info > $R/info.txt 2>&1; $K info > $R/info_skc.txt 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.memory,power.limit,temperature.gpu --format=csv > $R/nvidia-smi.txt
echo "gpu $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" >> $S
t() { local name=$1; shift; timeout 200 "$@" > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS $(grep -E '^\[  (PASSED|FAILED) ' $R/$name.log | tr '\n' ' ')" >> $S; }
t test_gemm build-carry/tests/test_gemm; t test_gemm_skc build-carry/tests/test_gemm_skc; t test_moe_skc build-carry/tests/test_moe_skc; pack
p() { local name=$1; timeout 120 $H bench gemm --shapes all,8192x16384 --m 20,24,28,32,48,64,96,128 --mode both --graph --pdl --no-baseline --no-check --target-ms 200 --warmup-ms 100 --csv --output $R/$name.csv > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS" >> $S; }
for r in 1 2; do FP4KIT_WGMMA_PAIRS=0 p poff_r$r; FP4KIT_WGMMA_PAIRS=1 p pon_r$r; done
python3 scripts/ab_table.py --col graph_us --base poff $R/poff_r*.csv $R/pon_r*.csv > $R/ab_pairs.txt 2>&1; pack
g() { local name=$1 bin=$2; timeout 60 $bin bench gemm --shapes 1024x4096,2048x4096,2048x14336,4096x2048 --m 1,2,4,8,12,16 --mode both --graph --pdl --no-baseline --no-check --target-ms 30 --csv --output $R/$name.csv > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS" >> $S; }
# Mixtral's FC1 (28672x4096 per expert) takes the grouped decode's stream-K on an H200 with >= 8 rows (pipeline path).
m() { local name=$1 bin=$2; timeout 90 $bin bench moe --preset mixtral-8x7b --t 4,8,16,32 --path pipeline --mode both --graph --pdl --no-baseline --no-check --target-ms 30 --csv --output $R/$name.csv > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS" >> $S; }
for r in 1 2; do g ghead_r$r $H; g gskc_r$r $K; m mhead_r$r $H; m mskc_r$r $K; done
python3 scripts/ab_table.py --col graph_us --base ghead $R/ghead_r*.csv $R/gskc_r*.csv > $R/ab_skc_gemm.txt 2>&1
python3 scripts/ab_table.py --col graph_us --base mhead $R/mhead_r*.csv $R/mskc_r*.csv > $R/ab_skc_moe.txt 2>&1; pack
cat $S; grep -vE ' (0\.99|1\.00|1\.01)[0-9] ' $R/ab_pairs.txt | head -70; cat $R/ab_skc_gemm.txt | tail -5; cat $R/ab_skc_moe.txt | head -70
rm -rf $R; true
