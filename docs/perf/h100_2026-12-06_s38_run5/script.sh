#!/usr/bin/env bash
# Session 38 run 5 (H100 if one comes): the coalesced workspace partials (skc = c972c90's kernels) against
# HEAD 35bbcd1 at the points whose tiles take the workspace split-K (down M = 24..64, 8192x28672 M = 24 / 32),
# W4A16 and W4A4, graph replay with PDL, two alternated repetitions; and down M = 96 / 128 on one-pass tiles
# with 4-way workspace splits (128x96 = 37, 128x128 s6 = 9) against the auto two-pass tiles.
set -u; R=$OUT/r5; mkdir -p $R; tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry tools/fp4kit || exit 3
X=/tmp/fp4kit_skc; [ -x $X ] || { xz -dc gpu-bin/s38/fp4kit_skc.xz > $X; chmod +x $X; }; B=build-carry/tools/fp4kit; S=$R/summary.txt
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $S
for rep in 1 2; do for v in head skc; do bin=$B; [ $v = skc ] && bin=$X
  timeout 60 $bin bench gemm --shapes llama8b.down,seed.8192x28672 --m 24,32,48,64 --mode both --no-check --graph --pdl \
    --target-ms 20 --csv --output $R/${v}_r$rep.csv > /dev/null 2> $R/${v}_r$rep.err; echo "$v r$rep rc=$? t=$SECONDS" >> $S
done; done
for t in auto 37 9; do
  timeout 60 $X bench gemm --shapes llama8b.down --m 96,128 --mode both --tactic $t --no-baseline --no-check --graph --pdl \
    --target-ms 20 --csv --output $R/down_t$t.csv > /dev/null 2> $R/down_t$t.err; echo "down t$t rc=$? t=$SECONDS" >> $S
done
cat $S; tar -C $OUT -czf $OUT/run5.tgz r5 && rm -rf $R
