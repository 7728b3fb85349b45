#!/usr/bin/env bash
# Session 46 run 1: `bash docs/wip/s46-run1.sh` with carry ["build-carry"] (xz pack of 48bc378's build).
# 1) test_gemm; 2) H100: the 17..32-token 128-row rule through the auto path (FP4KIT_WGMMA_PAIRS=0 = the rules
#    before, vs default), 8192x28672 / 8192x16384, alternated x2, graph + PDL, 60 ms samples;
#    H200: the pair rule forced on (=1) vs off (=0), every shape, M = 24..128, alternated x2;
# 3) the acceptance sweeps of #5 and #7 (gpu-check's BENCH=acceptance commands). One tarball, packed per step.
set -u; R=$OUT/r1; mkdir -p $R; S=$R/summary.txt
pack() { (cd $OUT && tar -czf r1.tgz r1); }
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry || exit 3
H=build-carry/tools/fp4kit; $H info > $R/info.txt 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.memory,power.limit,temperature.gpu --format=csv > $R/nvidia-smi.txt
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "gpu $GPU" >> $S
timeout 120 build-carry/tests/test_gemm > $R/test_gemm.log 2>&1; echo "test_gemm rc=$? t=$SECONDS $(grep -E '^\[  (PASSED|FAILED) ' $R/test_gemm.log | tr '\n' ' ')" >> $S; pack
if [[ "$GPU" == *H200* ]]; then
  p() { local name=$1; timeout 100 $H bench gemm --shapes all --m 24,32,48,64,96,128 --mode both --graph --pdl --no-baseline --no-check --target-ms 40 --csv --output $R/$name.csv > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS" >> $S; }
  for r in 1 2; do FP4KIT_WGMMA_PAIRS=0 p poff_r$r; FP4KIT_WGMMA_PAIRS=1 p pon_r$r; done
  python3 scripts/ab_table.py --col graph_us --base poff $R/poff_r*.csv $R/pon_r*.csv > $R/ab_pairs.txt 2>&1
else
  b() { local name=$1; timeout 100 $H bench gemm --shapes seed.8192x28672,8192x16384 --m 17,20,24,28,32 --mode both --graph --pdl --no-baseline --no-check --target-ms 60 --csv --output $R/$name.csv > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS" >> $S; }
  for r in 1 2; do FP4KIT_WGMMA_PAIRS=0 b before_r$r; b rule_r$r; done
  python3 scripts/ab_table.py --col graph_us --base before $R/before_r*.csv $R/rule_r*.csv > $R/ab_rule.txt 2>&1
fi
pack
run() { local name=$1; shift; timeout 200 $H "$@" --csv --output $R/accept_$name.csv > $R/accept_$name.log 2>&1
  echo "acc_$name rc=$? t=$SECONDS" >> $S; pack; }
run gemm_small bench gemm --shapes all --m 1,2,3,4,5,6,8,9,12,16 --mode both --graph --pdl --target-ms 30
run gemm_mid bench gemm --shapes all --m 24,32,48,64,96,128,192,256,384,512,1024,1536 --mode both --graph --pdl --target-ms 200 --warmup-ms 100
run moe_small bench moe --preset all --t 1,2,4,8,16 --mode both --graph --pdl --target-ms 30
run moe_large bench moe --preset all --t 4096 --mode both --no-reduced-check --target-ms 200 --warmup-ms 100
python3 scripts/acceptance.py $R/accept_*.csv > $R/acceptance.txt 2>&1; pack
cat $S; [ -f $R/ab_rule.txt ] && cat $R/ab_rule.txt; [ -f $R/ab_pairs.txt ] && grep -vE ' (0\.99|1\.00|1\.01)[0-9] ' $R/ab_pairs.txt | head -60
grep -E '^  #[57] [a-c]:' $R/acceptance.txt
rm -rf $R; true
