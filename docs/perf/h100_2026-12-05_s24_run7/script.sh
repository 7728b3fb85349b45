#!/usr/bin/env bash
# Session 24 run 7: decode family's front kernels (W4A4 staging, arrangement) launched early (PDL, current)
# vs in plain stream order (FP4KIT_EXP_FRONT=0), GEMM with PDL either way. Alternated, 2 repetitions.
set -u
R=/tmp/r7; mkdir -p $R; tar -xzf build-carry/fp4kit-binaries.tar.gz -C /tmp
F=/tmp/tools/fp4kit
for rep in 1 2; do
  for v in 1 0; do
    FP4KIT_EXP_FRONT=$v timeout 50 $F bench gemm --shapes all --m 1,2,3,4,8,9,16,24,32 --mode both --graph --pdl --no-baseline --no-check --target-ms 10 --csv --output $R/ab_v${v}_r$rep.csv > $R/ab_v${v}_r$rep.log 2>&1 || echo "bench v$v r$rep rc=$?"
  done
done
python3 - <<'PY'
import csv,glob,statistics as st,collections
d=collections.defaultdict(list); tac={}
for f in sorted(glob.glob('/tmp/r7/ab_v*_r*.csv')):
    v=f.split('ab_v')[1][0]
    for r in csv.DictReader(l for l in open(f) if not l.startswith('#')):
        if r['impl'].startswith('fp4kit'):
            try:
                k=(r['shape'],r['impl'][7:],int(r['M'])); d[k+(v,)].append(float(r['graph_us'])); tac[k]=r['tactic'].split(':')[1].split(' ')[0]
            except: pass
for k in sorted(tac):
    a=d.get(k+('1',)); b=d.get(k+('0',))
    if a and b:
        ma,mb=st.median(a),st.median(b)
        if abs(mb-ma)/ma>0.004: print(f"{k[0]:<18}{k[1]:<6}{k[2]:>3} {tac[k]:<24}{ma:8.2f} {mb:8.2f} {100*(mb-ma)/ma:+6.1f}%")
PY
