#!/usr/bin/env bash
# Session 26 run 2: gpu-check (every carried test binary, the four acceptance sweeps) of the W4A16 ring
# from 2 warps per row block (kernels unchanged since c291d16; the tests also cover 528388e), then the
# ring at 4 warps per row block: 14336x4096 auto and 8192x8192's 16-row tiles forced, FP4KIT_RING_MIN_KW=8
# (arrangement) vs the default (ring), alternated twice.
set -u
mkdir -p /tmp/gc
OUT=/tmp/gc BUILD_DIR=build-carry BENCH=acceptance BUDGET=420 BENCH_TIMEOUT=200 \
  bash scripts/gpu-check.sh > /tmp/gc/console.txt 2>&1; echo "gpu-check rc=$?" > /tmp/gc/status.txt
tail -28 /tmp/gc/console.txt
F=build-carry/tools/fp4kit; [ -x $F ] || tar -xzf build-carry/fp4kit-binaries.tar.gz -C build-carry
R=/tmp/gc/kw4; mkdir -p $R
for rep in 1 2; do
  for v in 8 2; do
    FP4KIT_RING_MIN_KW=$v timeout 40 $F bench gemm --shapes 14336x4096 --m 6,8,12,16 --mode w4a16 --graph --pdl --no-baseline --target-ms 20 --csv --output $R/auto_kw${v}_r$rep.csv > /dev/null 2>&1 || echo "auto $v rc=$?"
    for t in 51 53; do
      FP4KIT_RING_MIN_KW=$v timeout 40 $F bench gemm --shapes 8192x8192 --m 6,8,12,16 --mode w4a16 --tactic $t --graph --pdl --no-baseline --target-ms 20 --csv --output $R/t${t}_kw${v}_r$rep.csv > /dev/null 2>&1 || echo "t$t $v rc=$?"
    done
  done
done
python3 - <<'PY'
import csv,glob,statistics as st,collections
d=collections.defaultdict(list); chk=collections.Counter()
for f in glob.glob('/tmp/gc/kw4/*.csv'):
    b=f.split('/')[-1][:-4].split('_'); arm=b[0]; v=b[1]
    for r in csv.DictReader(l for l in open(f) if not l.startswith('#')):
        if r['impl'].startswith('fp4kit'):
            d[(arm,r['shape'],int(r['M']),r['tactic'].split(' ')[0],v)].append(float(r['graph_us'])); chk[r['check']]+=1
print('checks',dict(chk))
for k in sorted({k[:4] for k in d}):
    a=st.median(d[k+('kw8',)]); b=st.median(d[k+('kw2',)])
    print(f"{k[0]:<5}{k[1]:<14}{k[2]:>3} {k[3]:<26} arranged {a:7.2f} ring {b:7.2f} {b/a:6.3f}")
PY
tar -C /tmp -czf $OUT/gc.tgz gc
