#!/usr/bin/env bash
# Session 26 run 6: racecheck of the A ring with 2 warps per row block (8192x1056: 17 chunks, 32-row
# tiles 52 / 54) and 4 (8192x2080: 33 chunks, 16-row tiles 51 / 53), one bench point each, few calls.
set -u
R=/tmp/r6; mkdir -p $R; tar -xzf build-carry/r3.tgz -C $R
for x in "8192x1056 7 52" "8192x1056 13 54" "8192x2080 7 51" "8192x2080 13 53"; do
  set -- $x
  timeout 95 compute-sanitizer --tool racecheck $R/fp4kit bench gemm --shapes $1 --m $2 --mode w4a16 --tactic $3 --no-baseline --warmup 1 --reps 2 --target-ms 1 > $R/race_$3.log 2>&1; echo "$1 M=$2 t$3 racecheck rc=$?"
  grep -E "RACECHECK SUMMARY|ERROR SUMMARY|rel_err|ok|FAIL" $R/race_$3.log | tail -3
done
rm -f $R/fp4kit $R/test_gemm
tar -C /tmp -czf $OUT/r6.tgz r6
