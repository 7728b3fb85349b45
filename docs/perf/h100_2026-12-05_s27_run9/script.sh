#!/usr/bin/env bash
# Session 27 run 9: the W4A4 1..2-token rule (rolling 32-row tile where A is decoded in the GEMM):
# test_gemm of the new tree, then auto old (de5a150) vs new, W4A4 and W4A16 M = 1, 2 on the six
# decode shapes, 3 alternated repetitions, graph replay with PDL.
set -u
R=$OUT/rule; mkdir -p $R; X=/tmp/rule; mkdir -p $X
F=build-carry/tools/fp4kit; [ -x $F ] || tar -xzf build-carry/fp4kit-binaries.tar.gz -C build-carry
cp $F $X/fp4kit_new
xz -dc gpu-bin/m12/fp4kit_old.xz > $X/fp4kit_old 2>/dev/null || python3 -c "import lzma,sys; sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())" gpu-bin/m12/fp4kit_old.xz > $X/fp4kit_old
chmod +x $X/fp4kit_old
timeout 120 build-carry/tests/test_gemm --gtest_brief=1 > $R/test_gemm.log 2>&1; echo "test_gemm rc=$?"; grep -E "PASSED|FAILED|SKIPPED" $R/test_gemm.log | head -4
for rep in 1 2 3; do
  for v in old new; do
    timeout 60 $X/fp4kit_$v bench gemm --shapes 8192x8192,8192x28672,gate_up,down,o,qkv --m 1,2 --mode both \
      --graph --pdl --no-baseline --target-ms 30 --csv --output $R/${v}_r$rep.csv > /dev/null 2>&1 || echo "$v $rep rc=$?"
  done
done
python3 scripts/ab_table.py --base old $R/old_r*.csv $R/new_r*.csv
cd $OUT && tar czf rule.tgz rule && rm -rf rule
