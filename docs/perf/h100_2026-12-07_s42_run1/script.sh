#!/usr/bin/env bash
# Session 42 run 1 (H100). Two builds, carried: HEAD (b76eb86 + docs: session 41's final code) in
# build-carry/, and HEAD + docs/wip/decode-m24-r32-partials-in-ring.patch ("lead") in build-carry/lead/.
# 1) test_gemm of both (the patch changes every W4A16 ring tile's dp reduction: partials in the rings);
# 2) compute-sanitizer memcheck: tactic 64 forced on ragged shapes, the rule's auto path (down / o M = 20),
#    tactic 65 (lead) forced on ragged shapes;
# 3) session 41's rule vs FP4KIT_DECODE_M24=0 on down / o at M = 17 / 20 / 24 (the changed choices), x2;
# 4) lead vs HEAD, auto, every shape at M = 3 / 4 / 8 / 12 / 16 (must be neutral), alternated x2;
# 5) tactic 65 forced (lead) vs HEAD auto at M = 17 / 20 / 24, every shape, alternated x2.
# 6) every tactic, both modes, M = 3 / 9 / 16 on 8192x8192 and down.
# Graph replay with PDL throughout; tables last.
set -u; R=$OUT/r1; mkdir -p $R; S=$R/summary.txt
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry || exit 3
mkdir -p build-carry/lead && tar -xJf build-carry/lead.tar.xz -C build-carry/lead || exit 3
H=build-carry/tools/fp4kit; L=build-carry/lead/tools/fp4kit
$H info > $R/info.txt 2>&1; $L info > $R/info_lead.txt 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.memory,power.limit,temperature.gpu --format=csv > $R/nvidia-smi.txt
t() { timeout 150 $1 > $R/$2.log 2>&1; echo "$2 rc=$? t=$SECONDS $(grep -E '^\[  (PASSED|FAILED) ' $R/$2.log | tr '\n' ' ')" >> $S; }
t build-carry/tests/test_gemm test_gemm; t build-carry/lead/tests/test_gemm test_gemm_lead
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
mc() { local name=$1 bin=$2; shift 2; timeout 90 $SAN --tool memcheck $bin bench gemm "$@" --mode both --reps 2 --warmup 1 --no-baseline > $R/$name.log 2>&1
  echo "$name rc=$? t=$SECONDS $(grep -E 'ERROR SUMMARY' $R/$name.log | tr '\n' ' ')" >> $S; }
mc memcheck_t64 $H --shapes 1008x4160,8208x1056 --m 13,17,24 --tactic 64
mc memcheck_auto $H --shapes down,o --m 20
mc memcheck_t65 $L --shapes 1008x4160,8208x1056 --m 13,17,24 --tactic 65
b() { local name=$1 bin=$2; shift 2; timeout 90 $bin bench gemm "$@" --mode both --graph --pdl --no-baseline --target-ms 30 --csv --output $R/$name.csv > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS" >> $S; }
for r in 1 2; do
  FP4KIT_DECODE_M24=0 b off_r$r $H --shapes down,o --m 17,20,24
  b rule_r$r $H --shapes down,o --m 17,20,24
done
for r in 1 2; do
  b head_r$r $H --shapes all --m 3,4,8,12,16
  b lead_r$r $L --shapes all --m 3,4,8,12,16
done
for r in 1 2; do
  b auto24_r$r $H --shapes all --m 17,20,24
  b t65_r$r $L --shapes all --m 17,20,24 --tactic 65
done
# 6) every tactic (both modes) at 3 / 9 / 16 tokens on 8192x8192 and down (the largest #5 a misses: tactic 20 / 21,
#    non-rolling, arranged A): does the heuristic leave a faster tile there?
timeout 150 $H bench gemm --shapes 8192x8192,down --m 3,9,16 --mode both --tactic all --graph --pdl --no-baseline --no-check --target-ms 10 --csv --output $R/all_small.csv > $R/all_small.log 2>&1; echo "all_small rc=$? t=$SECONDS" >> $S
python3 scripts/ab_table.py --col graph_us --base off $R/off_r*.csv $R/rule_r*.csv > $R/ab_rule.txt 2>&1
python3 scripts/ab_table.py --col graph_us --base head $R/head_r*.csv $R/lead_r*.csv > $R/ab_lead.txt 2>&1
python3 scripts/ab_table.py --col graph_us --base auto24 $R/auto24_r*.csv $R/t65_r*.csv > $R/ab_t65.txt 2>&1
cat $S; cat $R/ab_rule.txt; cat $R/ab_lead.txt | head -80; cat $R/ab_t65.txt | head -50
tar -C $OUT -czf $OUT/run1.tgz r1 && rm -rf $R
