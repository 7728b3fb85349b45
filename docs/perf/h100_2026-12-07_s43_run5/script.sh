#!/usr/bin/env bash
# Session 43 run 5 (H100): the review's fix — two-stage-step tactics take the one-stage tile's split-K factor (from
# chunks, at most one split per pair) instead of one computed from pairs (which halved the splits at K <= 2048),
# and the rule needs >= 16 chunks per unit. 1) test_gemm; 2) memcheck of tactic 66 forced where its split now
# takes the workspace path (2048x1024 M = 48: 4 splits of 32 tiles) and of 67 on 1024x1024 M = 32 (4-CTA clusters).
set -u; R=$OUT/r5; mkdir -p $R; S=$R/summary.txt
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry || exit 3
H=build-carry/tools/fp4kit; $H info > $R/info.txt 2>&1
timeout 100 build-carry/tests/test_gemm > $R/test_gemm.log 2>&1; echo "test_gemm rc=$? t=$SECONDS $(grep -E '^\[  (PASSED|FAILED) ' $R/test_gemm.log | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED' $R/test_gemm.log | head -20 >> $S
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 40 $SAN --tool memcheck $H bench gemm --shapes 2048x1024 --m 40,48 --tactic 66 --mode both --reps 2 --warmup 1 --no-baseline > $R/memcheck_t66.log 2>&1
echo "memcheck_t66 rc=$? t=$SECONDS $(grep -E 'ERROR SUMMARY' $R/memcheck_t66.log | tr '\n' ' ')" >> $S
timeout 40 $SAN --tool memcheck $H bench gemm --shapes 1024x1024 --m 20,32 --tactic 67 --mode both --reps 2 --warmup 1 --no-baseline > $R/memcheck_t67.log 2>&1
echo "memcheck_t67 rc=$? t=$SECONDS $(grep -E 'ERROR SUMMARY' $R/memcheck_t67.log | tr '\n' ' ')" >> $S
for f in $R/memcheck*.log; do tail -3 $f > $f.t && mv $f.t $f; done
cat $S
tar -C $OUT -czf $OUT/run5.tgz r5 && rm -rf $R
