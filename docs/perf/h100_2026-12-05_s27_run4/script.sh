#!/usr/bin/env bash
# Session 27 run 4: every tactic at the #5 a points that miss (the landed tree, f890717): W4A4 M = 1..16
# and W4A16 M = 2..16 on the 32+ MB layers, graph replay with PDL, 2 repetitions; table of auto vs best.
set -u
R=$OUT/all; mkdir -p $R
F=build-carry/tools/fp4kit; [ -x $F ] || tar -xzf build-carry/fp4kit-binaries.tar.gz -C build-carry
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
for rep in 1 2; do
  timeout 200 $F bench gemm --shapes 8192x8192,down,gate_up,8192x28672 --m 1,2,3,8,9,16 --mode w4a4 --tactic all \
    --graph --pdl --no-baseline --no-check --target-ms 10 --csv --output $R/w4a4_r$rep.csv > /dev/null 2>&1 || echo "w4a4 $rep rc=$?"
  timeout 120 $F bench gemm --shapes 8192x8192,down --m 2,8,9,16 --mode w4a16 --tactic all \
    --graph --pdl --no-baseline --no-check --target-ms 10 --csv --output $R/w4a16_r$rep.csv > /dev/null 2>&1 || echo "w4a16 $rep rc=$?"
done
python3 - <<'PY'
import csv,glob,statistics as st,collections,os
R=os.environ['OUT']+'/all'
d=collections.defaultdict(list)
for f in glob.glob(R+'/*.csv'):
    for r in csv.DictReader(l for l in open(f) if not l.startswith('#')):
        if not r['impl'].startswith('fp4kit'): continue
        try: g=float(r['graph_us'])
        except: continue
        d[(r['shape'],r['impl'][7:],int(r['M']),r['tactic'])].append(g)
pts=collections.defaultdict(dict)
for (s,mo,m,t),v in d.items(): pts[(s,mo,m)][t]=st.median(v)
for k in sorted(pts):
    v=pts[k]; auto=[t for t in v if 'auto' in t or 'best' in t]
    ranked=sorted(((g,t) for t,g in v.items() if 'best' not in t and 'auto' not in t))
    a=[(t,v[t]) for t in auto]
    print(k[0][:15],k[1],k[2],' auto:',' '.join(f"{t.split(' ')[0]}={g:.2f}" for t,g in a),' top:',' '.join(f"{t.split(' ')[0]}={g:.2f}" for g,t in ranked[:4]))
PY
cd $OUT && tar czf all.tgz all && rm -rf all
