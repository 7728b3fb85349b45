#!/usr/bin/env bash
# Session 27 run 3 (same H100 as run 2): head (217ece2) vs the new binary (slice + e2m1x8, K <= 16384),
# W4A4 M = 1, 2, 9, 16 on the six decode shapes, alternated 3 times; W4A16 control on 8192x28672.
set -u
R=$OUT/ab; mkdir -p $R; X=/tmp/ab; mkdir -p $X
xz -dc gpu-bin/w4a4dec/fp4kit_head.xz > $X/fp4kit_head 2>/dev/null || python3 -c "import lzma,sys; sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())" gpu-bin/w4a4dec/fp4kit_head.xz > $X/fp4kit_head
chmod +x $X/fp4kit_head
F=build-carry/tools/fp4kit; [ -x $F ] || tar -xzf build-carry/fp4kit-binaries.tar.gz -C build-carry
cp $F $X/fp4kit_new
for rep in 1 2 3; do
  for v in head new; do
    timeout 60 $X/fp4kit_$v bench gemm --shapes 8192x8192,down,gate_up,o,qkv,8192x28672 --m 1,2,9,16 --mode w4a4 \
      --graph --pdl --no-baseline --target-ms 30 --csv --output $R/${v}_r$rep.csv > /dev/null 2>&1 || echo "$v $rep rc=$?"
    timeout 30 $X/fp4kit_$v bench gemm --shapes 8192x28672 --m 1,2 --mode w4a16 \
      --graph --pdl --no-baseline --target-ms 30 --csv --output $R/${v}c_r$rep.csv > /dev/null 2>&1 || echo "$v c $rep rc=$?"
  done
done
python3 scripts/ab_table.py --base head $R/head_r*.csv $R/new_r*.csv
python3 scripts/ab_table.py --base headc $R/headc_r*.csv $R/newc_r*.csv
