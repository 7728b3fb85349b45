#!/usr/bin/env bash
# Session 39 run 2 (H100): the 4-split one-pass rule (65..128 tokens, 128x128 s6 fitted, where 4 K splits
# keep >= 32 chunks: down) against the old rule (FP4KIT_WGMMA_4SPLIT_ONE_PASS=0), down and o at M = 65..128,
# graph replay with PDL, 3 alternated repetitions; one pass of the fitted tile forced at o M = 80..128 and at
# down / o M = 144..224 (4-way workspace splits) against auto; then test_gemm.
set -u; R=$OUT/ab; mkdir -p $R; S=$R/summary.txt
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry || exit 3
H=build-carry/tools/fp4kit
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $S
B="--mode both --graph --pdl --no-baseline --no-check --target-ms 20 --csv"
for rep in 1 2 3; do for v in old new; do env=""; [ $v = old ] && env="FP4KIT_WGMMA_4SPLIT_ONE_PASS=0"
  env $env timeout 60 $H bench gemm --shapes llama8b.down,llama8b.o --m 65,72,80,96,104,112,120,128 $B \
    --output $R/${v}_r$rep.csv > /dev/null 2> $R/${v}_r$rep.err; echo "$v r$rep rc=$? t=$SECONDS" >> $S
done; done
timeout 60 $H bench gemm --shapes llama8b.down --m 72,96,128 --mode both --target-ms 5 --csv --output $R/new_check.csv \
  > /dev/null 2> $R/new_check.err; echo "check rc=$? t=$SECONDS" >> $S
for rep in 1 2; do
  for mt in 80:41 96:37 112:43 128:9; do m=${mt%:*}; t=${mt#*:}
    timeout 30 $H bench gemm --shapes llama8b.o --m $m --tactic $t $B --output $R/o_m${m}_t${t}_r$rep.csv > /dev/null 2>&1
  done
  for mt in 144:45 160:46 192:47 224:48; do m=${mt%:*}; t=${mt#*:}
    timeout 30 $H bench gemm --shapes llama8b.down,llama8b.o --m $m --tactic $t $B --output $R/mid_m${m}_t${t}_r$rep.csv > /dev/null 2>&1
  done
  timeout 60 $H bench gemm --shapes llama8b.down,llama8b.o --m 80,96,112,128,144,160,192,224 $B --output $R/auto_r$rep.csv > /dev/null 2>&1
  echo "forced r$rep t=$SECONDS" >> $S
done
timeout 120 build-carry/tests/test_gemm --gtest_brief=1 > $R/test_gemm.txt 2>&1; echo "test_gemm rc=$? t=$SECONDS" >> $S
tail -3 $R/test_gemm.txt >> $S
cat $S; tar -C $OUT -czf $OUT/run2.tgz ab && rm -rf $R
