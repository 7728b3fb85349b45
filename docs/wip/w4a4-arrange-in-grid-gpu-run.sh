#!/usr/bin/env bash
# GPU side of docs/wip/w4a4-arrange-in-grid.patch (carry ["gpu-bin/ingrid", "gpu-bin/ingrid-gpu-run.sh"]):
# binaries built in session 27 from c993a71 + the patch (head = 724940d's tree without it).
# 1. the micro (is the in-grid hand-off cheaper than the kernel boundary?), 2. test_gemm of the patch,
# 3. racecheck of one W4A4 all-tactics case with the state, 4. A/B W4A4 M = 3, 8, 9, 16 on the four
# >= 32 MB shapes: head / patch without the state (plain A loads) / patch with --sync-state, 3
# alternated repetitions, graph replay with PDL; table last.
set -u
R=${OUT:-/tmp}/ingrid; mkdir -p $R; N=gpu-bin/ingrid; X=/tmp/ingrid; mkdir -p $X
for f in $N/*.xz; do b=$(basename $f .xz); { xz -dc $f 2>/dev/null || python3 -c "import lzma,sys; sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())" $f; } > $X/$b; chmod +x $X/$b; done
timeout 60 $X/fp4kit_micro_handoff_ingrid > $R/micro.txt 2>&1; echo "micro rc=$?"; cat $R/micro.txt
timeout 150 $X/test_gemm_ingrid --gtest_brief=1 > $R/test_gemm.log 2>&1; echo "test_gemm rc=$?"
grep -E "FAILED|PASSED|SKIPPED" $R/test_gemm.log | head -6
timeout 150 compute-sanitizer --tool racecheck $X/test_gemm_ingrid --gtest_filter=GemmGpu.RingWithFewWarpsPerRowBlock > $R/racecheck.log 2>&1
echo "racecheck rc=$?"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $R/racecheck.log | head -3
S="bench gemm --shapes 8192x8192,down,gate_up,8192x28672 --m 3,8,9,16 --mode w4a4 --graph --pdl --no-baseline --target-ms 30 --csv"
for rep in 1 2 3; do
  timeout 60 $X/fp4kit_head $S --output $R/head_r$rep.csv > /dev/null 2>&1 || echo "head $rep rc=$?"
  timeout 60 $X/fp4kit_ingrid $S --output $R/plain_r$rep.csv > /dev/null 2>&1 || echo "plain $rep rc=$?"
  timeout 60 $X/fp4kit_ingrid $S --sync-state --output $R/ingrid_r$rep.csv > /dev/null 2>&1 || echo "ingrid $rep rc=$?"
done
python3 scripts/ab_table.py --base head $R/head_r*.csv $R/plain_r*.csv $R/ingrid_r*.csv
cd ${OUT:-/tmp} && tar czf ingrid.tgz ingrid && rm -rf ingrid
