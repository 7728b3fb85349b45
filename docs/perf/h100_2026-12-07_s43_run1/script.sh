#!/usr/bin/env bash
# Session 43 run 1 (H100): two stages (128 K) per consumer step on the 128-row small token tiles (tactics 66..69,
# `_k128`: 128x24 / 128x32 / 128x48 / 128x64) against the same tiles one stage per step (39 / 17 / 35 / 7).
# 1) test_gemm (every tactic on ragged shapes); 2) memcheck of the new tactics forced on ragged shapes (K = 4160: an
# odd chunk count, the last pair reaches past K); 3) old vs new forced on every shape at M = 24..128, alternated x2,
# graph replay with PDL, W4A16 and W4A4, no check (test_gemm checks).
set -u; R=$OUT/r1; mkdir -p $R; S=$R/summary.txt
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry || exit 3
H=build-carry/tools/fp4kit; $H info > $R/info.txt 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.memory,power.limit,temperature.gpu --format=csv > $R/nvidia-smi.txt
timeout 200 build-carry/tests/test_gemm > $R/test_gemm.log 2>&1; echo "test_gemm rc=$? t=$SECONDS $(grep -E '^\[  (PASSED|FAILED) ' $R/test_gemm.log | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED' $R/test_gemm.log | head -20 >> $S
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for t in 66 67 68 69; do
  timeout 60 $SAN --tool memcheck $H bench gemm --shapes 1008x4160,8208x1056 --m 20,33,64 --tactic $t --mode both --reps 2 --warmup 1 --no-baseline > $R/memcheck_t$t.log 2>&1
  echo "memcheck_t$t rc=$? t=$SECONDS $(grep -E 'ERROR SUMMARY' $R/memcheck_t$t.log | tr '\n' ' ')" >> $S
done
b() { local name=$1; shift; timeout 100 $H bench gemm "$@" --shapes all --m 24,32,48,64,96,128 --mode both --graph --pdl --no-baseline --no-check --target-ms 30 --csv --output $R/$name.csv > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS" >> $S; }
for r in 1 2; do
  for p in "39 66" "17 67" "35 68" "7 69"; do
    set -- $p
    b old$1_r$r --tactic $1
    b new$2_r$r --tactic $2
  done
done
cat $S
python3 - "$R" <<'PY' > $R/ab.txt 2>&1
import csv, glob, statistics, sys, collections
R = sys.argv[1]
pairs = {39: 66, 17: 67, 35: 68, 7: 69}
t = collections.defaultdict(list)
for f in glob.glob(R + "/*.csv"):
    for r in csv.DictReader(l for l in open(f) if not l.startswith("#")):
        if not r["impl"].startswith("fp4kit") or r.get("graph_us") in (None, "", "-"): continue
        tid = int(r["tactic"].split(":")[0])
        t[(r["shape"], int(r["M"]), r["impl"], tid)].append(float(r["graph_us"]))
print(f"{'shape':<18}{'M':>5} {'mode':<13}{'old':>4}{'new':>4} {'old_us':>8} {'new_us':>8}  ratio")
for (shape, m, impl, tid) in sorted(t):
    if tid not in pairs: continue
    o = t[(shape, m, impl, tid)]; n = t.get((shape, m, impl, pairs[tid]))
    if not n: continue
    mo, mn = statistics.median(o), statistics.median(n)
    print(f"{shape:<18}{m:>5} {impl:<13}{tid:>4}{pairs[tid]:>4} {mo:8.2f} {mn:8.2f}  {mn/mo:6.3f}")
PY
cat $R/ab.txt
tar -C $OUT -czf $OUT/run1.tgz r1 && rm -rf $R
