#!/usr/bin/env bash
# Session 43 run 2 (H100): two stages per consumer step (`_k128`) with deeper rings (run 1: the s8 pairs lost 1-7 %
# where the tile takes one pass over M, with 4 stages ahead of the consumer instead of 6) and on the 256-row tiles.
# 1) test_gemm; 2) memcheck of tactics 70..81 (a sample) on ragged shapes; 3) every small token tile one stage per
# step vs two (s8 / s12 / s16; 256-row: s12, 256x64 s10), forced, every shape at M = 24..128, alternated x2,
# graph replay with PDL, both modes, no check (test_gemm checks).
set -u; R=$OUT/r2; mkdir -p $R; S=$R/summary.txt
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry || exit 3
H=build-carry/tools/fp4kit; $H info > $R/info.txt 2>&1
timeout 200 build-carry/tests/test_gemm > $R/test_gemm.log 2>&1; echo "test_gemm rc=$? t=$SECONDS $(grep -E '^\[  (PASSED|FAILED) ' $R/test_gemm.log | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED' $R/test_gemm.log | head -20 >> $S
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for t in 71 76 78 79 80 81; do
  timeout 60 $SAN --tool memcheck $H bench gemm --shapes 1008x4160,8208x1056 --m 20,33,64 --tactic $t --mode both --reps 2 --warmup 1 --no-baseline > $R/memcheck_t$t.log 2>&1
  echo "memcheck_t$t rc=$? t=$SECONDS $(grep -E 'ERROR SUMMARY' $R/memcheck_t$t.log | tr '\n' ' ')" >> $S
done
b() { local name=$1; shift; timeout 100 $H bench gemm "$@" --shapes all --m 24,32,48,64,96,128 --mode both --graph --pdl --no-baseline --no-check --target-ms 30 --csv --output $R/$name.csv > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS" >> $S; }
for r in 1 2; do
  for t in 39 66 70 74 17 67 71 75 35 68 72 76 7 69 73 77 40 78 19 79 36 80 34 81; do
    b t${t}_r$r --tactic $t
  done
done
cat $S
python3 - "$R" <<'PY' > $R/ab.txt 2>&1
import csv, glob, statistics, sys, collections
R = sys.argv[1]
groups = {39: [66, 70, 74], 17: [67, 71, 75], 35: [68, 72, 76], 7: [69, 73, 77], 40: [78], 19: [79], 36: [80], 34: [81]}
t = collections.defaultdict(list)
for f in glob.glob(R + "/*.csv"):
    for r in csv.DictReader(l for l in open(f) if not l.startswith("#")):
        if not r["impl"].startswith("fp4kit") or r.get("graph_us") in (None, "", "-"): continue
        t[(r["shape"], int(r["M"]), r["impl"], int(r["tactic"].split(":")[0]))].append(float(r["graph_us"]))
print(f"{'shape':<18}{'M':>5} {'mode':<13}{'old':>4} {'old_us':>8}  new: ratio ...")
for old, news in groups.items():
    for (shape, m, impl, tid) in sorted(k for k in t if k[3] == old):
        mo = statistics.median(t[(shape, m, impl, tid)])
        cells = []
        for n in news:
            v = t.get((shape, m, impl, n))
            cells.append(f"{n}:{statistics.median(v)/mo:6.3f}" if v else f"{n}:  -   ")
        print(f"{shape:<18}{m:>5} {impl:<13}{old:>4} {mo:8.2f}  " + "  ".join(cells))
PY
tail -n +1 $R/ab.txt | head -400
tar -C $OUT -czf $OUT/run2.tgz r2 && rm -rf $R
