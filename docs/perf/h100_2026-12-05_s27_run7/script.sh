#!/usr/bin/env bash
# Session 27 run 7: the fused-decode path decodes an NVFP4 input once per token (token rows): test_moe of
# the new tree, then bench moe --fp4-input W4A4, run 6 new (e2) vs token rows (tok), T = 1..16 on every
# preset, graph replay with PDL, 2 alternated repetitions (the new arm's first with the CPU check);
# the BF16-input W4A4 (in-layer quantization) of the new binary beside.
set -u
R=$OUT/moefp4; mkdir -p $R; X=/tmp/moefp4; mkdir -p $X
F=build-carry/tools/fp4kit; [ -x $F ] || tar -xzf build-carry/fp4kit-binaries.tar.gz -C build-carry
cp $F $X/fp4kit_new
xz -dc gpu-bin/moefp4/fp4kit_e2.xz > $X/fp4kit_e2 2>/dev/null || python3 -c "import lzma,sys; sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())" gpu-bin/moefp4/fp4kit_e2.xz > $X/fp4kit_e2
chmod +x $X/fp4kit_e2
timeout 150 build-carry/tests/test_moe --gtest_brief=1 > $R/test_moe.log 2>&1; echo "test_moe rc=$?"; grep -E "PASSED|FAILED|SKIPPED" $R/test_moe.log | head -5
B="bench moe --preset all --t 1,2,4,8,16 --mode w4a4 --graph --pdl --no-baseline --no-reduced-check --target-ms 40 --csv"
timeout 150 $X/fp4kit_new $B --fp4-input --output $R/tok_r1.csv > $R/tok_r1.log 2>&1 || echo "new 1 rc=$?"
grep -E "# checks:|RESULT" $R/tok_r1.log | tail -2
timeout 100 $X/fp4kit_e2 $B --fp4-input --no-check --output $R/e2_r1.csv > /dev/null 2>&1 || echo "e2 1 rc=$?"
timeout 100 $X/fp4kit_e2 $B --fp4-input --no-check --output $R/e2_r2.csv > /dev/null 2>&1 || echo "e2 2 rc=$?"
timeout 100 $X/fp4kit_new $B --fp4-input --no-check --output $R/tok_r2.csv > /dev/null 2>&1 || echo "new 2 rc=$?"
timeout 100 $X/fp4kit_new $B --no-check --output $R/bf16in_r1.csv > /dev/null 2>&1 || echo "bf16in rc=$?"
python3 scripts/ab_table.py --base e2 $R/e2_r*.csv $R/tok_r*.csv $R/bf16in_r1.csv
cd $OUT && tar czf moefp4.tgz moefp4 && rm -rf moefp4
