#!/usr/bin/env bash
# Session 27 run 5: ncu kernel durations (serialized, no PDL overlap) of the arrangement kernel and the
# GEMM, tactic 20 (dpf_m16_r16_u4) at down M = 16, W4A16 vs W4A4; and tactic 21 on 8192x8192.
set -u
R=$OUT/ncu; mkdir -p $R
F=build-carry/tools/fp4kit; [ -x $F ] || tar -xzf build-carry/fp4kit-binaries.tar.gz -C build-carry
for sh in "down 20" "8192x8192 21"; do
  set -- $sh
  for mode in w4a16 w4a4; do
    timeout 120 ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,sm__cycles_active.avg \
      -k regex:"arrange|decode" --launch-skip 6 --launch-count 16 --csv \
      $F bench gemm --shapes $1 --m 16 --mode $mode --tactic $2 --no-baseline --no-check --warmup 4 --reps 30 \
      > $R/${1}_$mode.csv 2> $R/${1}_$mode.err || echo "$1 $mode rc=$?"
  done
done
python3 - <<'PY'
import csv,glob,os,collections,statistics as st
for f in sorted(glob.glob(os.environ['OUT']+'/ncu/*.csv')):
    lines=[l for l in open(f) if l.startswith('"')]
    d=collections.defaultdict(list)
    for r in csv.DictReader(lines):
        k=r['Kernel Name'][:60]; d[(k,r['Metric Name'])].append(float(r['Metric Value'].replace(',','')))
    print(os.path.basename(f))
    for (k,m),v in sorted(d.items()): print(f"   {k:<60} {m:<28} {st.median(v):>12.1f} n={len(v)}")
PY
