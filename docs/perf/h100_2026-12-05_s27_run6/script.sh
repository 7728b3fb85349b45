#!/usr/bin/env bash
# Session 27 run 6: the MoE NVFP4-input decode by byte permutes (nvfp4_decode16_store): test_moe of
# the new tree, then bench moe --fp4-input W4A4, old kernels (same bench) vs new, T = 1..16 on every
# preset, graph replay with PDL, 2 alternated repetitions (the new arm's first with the CPU check);
# the BF16-input W4A4 (in-layer quantization) of the new binary beside.
set -u
R=$OUT/moefp4; mkdir -p $R; X=/tmp/moefp4; mkdir -p $X
F=build-carry/tools/fp4kit; [ -x $F ] || tar -xzf build-carry/fp4kit-binaries.tar.gz -C build-carry
cp $F $X/fp4kit_new
xz -dc gpu-bin/moefp4/fp4kit_old.xz > $X/fp4kit_old 2>/dev/null || python3 -c "import lzma,sys; sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())" gpu-bin/moefp4/fp4kit_old.xz > $X/fp4kit_old
chmod +x $X/fp4kit_old
timeout 150 build-carry/tests/test_moe --gtest_brief=1 > $R/test_moe.log 2>&1; echo "test_moe rc=$?"; grep -E "PASSED|FAILED|SKIPPED" $R/test_moe.log | head -5
B="bench moe --preset all --t 1,2,4,8,16 --mode w4a4 --graph --pdl --no-baseline --no-reduced-check --target-ms 40 --csv"
timeout 150 $X/fp4kit_new $B --fp4-input --output $R/new_r1.csv > $R/new_r1.log 2>&1 || echo "new 1 rc=$?"
grep -E "checked|FAIL" $R/new_r1.log | tail -3
timeout 100 $X/fp4kit_old $B --fp4-input --no-check --output $R/old_r1.csv > /dev/null 2>&1 || echo "old 1 rc=$?"
timeout 100 $X/fp4kit_old $B --fp4-input --no-check --output $R/old_r2.csv > /dev/null 2>&1 || echo "old 2 rc=$?"
timeout 100 $X/fp4kit_new $B --fp4-input --no-check --output $R/new_r2.csv > /dev/null 2>&1 || echo "new 2 rc=$?"
timeout 100 $X/fp4kit_new $B --no-check --output $R/bf16in_r1.csv > /dev/null 2>&1 || echo "bf16in rc=$?"
python3 scripts/ab_table.py --base old $R/old_r*.csv $R/new_r*.csv $R/bf16in_r1.csv
cd $OUT && tar czf moefp4.tgz moefp4 && rm -rf moefp4
