#!/usr/bin/env bash
# GPU side of docs/wip/build-w4a4-decode-binaries.sh (carry ["gpu-bin"]): test_gemm of both patches,
# racecheck of the per-warp staging's bit-for-bit test, then W4A4 (and a W4A16 control) at the points
# the patches touch, head / e2 / slice alternated 3 times, graph replay with PDL; table last.
set -u
R=${OUT:-/tmp}/w4a4dec; mkdir -p $R; N=gpu-bin/w4a4dec; X=/tmp/w4a4dec; mkdir -p $X
for f in $N/*.xz; do b=$(basename $f .xz); { xz -dc $f 2>/dev/null || python3 -c "import lzma,sys; sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())" $f; } > $X/$b; chmod +x $X/$b; done
for v in e2 slice; do
  timeout 120 $X/test_gemm_$v --gtest_brief=1 > $R/test_gemm_$v.log 2>&1; echo "test_gemm $v rc=$?"
  grep -E "FAILED|PASSED" $R/test_gemm_$v.log | head -4
done
timeout 150 compute-sanitizer --tool racecheck $X/test_gemm_slice \
  --gtest_filter=GemmGpu.W4A4MatchesW4A16OnDecodedActivationsBitForBit > $R/racecheck_slice.log 2>&1
echo "racecheck slice rc=$?"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $R/racecheck_slice.log | head -3
timeout 150 compute-sanitizer --tool racecheck $X/test_gemm_e2 \
  --gtest_filter=GemmGpu.RingWithFewWarpsPerRowBlock > $R/racecheck_ring.log 2>&1
echo "racecheck ring rc=$?"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $R/racecheck_ring.log | head -3
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
for rep in 1 2 3; do
  for v in head e2 slice; do
    timeout 60 $X/fp4kit_$v bench gemm --shapes 8192x8192,down,gate_up,o,qkv,8192x28672 --m 1,2,9,16 --mode both \
      --graph --pdl --no-baseline --target-ms 30 --csv --output $R/${v}_r$rep.csv > /dev/null 2>&1 || echo "$v $rep rc=$?"
  done
done
python3 scripts/ab_table.py --base head $R/head_r*.csv $R/e2_r*.csv $R/slice_r*.csv
cd ${OUT:-/tmp} && tar czf w4a4dec.tgz w4a4dec && rm -rf w4a4dec
