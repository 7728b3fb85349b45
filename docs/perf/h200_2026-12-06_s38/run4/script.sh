#!/usr/bin/env bash
# Session 38 run 4 (warm H200): HEAD (35bbcd1) vs the coalesced partials (skc), every bench shape at
# M = 24..256, W4A16 and W4A4, graph replay with PDL, two alternated repetitions (ab_graph.txt:
# scripts/ab_table.py --col graph_us --base head).
set -u; R=$OUT/r4; mkdir -p $R; tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry tools/fp4kit || exit 3
X=/tmp/fp4kit_skc; [ -x $X ] || { xz -dc gpu-bin/s38/fp4kit_skc.xz > $X; chmod +x $X; }; B=build-carry/tools/fp4kit; S=$R/summary.txt
for rep in 1 2; do for v in head skc; do bin=$B; [ $v = skc ] && bin=$X
  timeout 100 $bin bench gemm --shapes all --m 24,32,48,64,96,128,192,256 --mode both --no-baseline --no-check --graph --pdl \
    --target-ms 15 --csv --output $R/${v}_r$rep.csv > /dev/null 2> $R/${v}_r$rep.err; echo "$v r$rep rc=$? t=$SECONDS" >> $S
done; done; cat $S; tar -C $OUT -czf $OUT/run4.tgz r4 && rm -rf $R
