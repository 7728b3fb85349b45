#!/usr/bin/env bash
# Session 24 run 4: wgmma PDL variants (FP4KIT_EXP_WG_PDL 0 none, 1 W4A16 only, 2 both), one binary, alternated.
set -u
R=/tmp/r5; mkdir -p $R; tar -xzf build-carry/fp4kit-binaries.tar.gz -C /tmp
F=/tmp/tools/fp4kit
for rep in 1 2; do
  for v in 0 2 3 4; do
    FP4KIT_EXP_WG_PDL=$v timeout 60 $F bench gemm --shapes all --m 24,48,64,96,128,192,256 --mode w4a4 --graph --pdl --no-baseline --no-check --target-ms 12 --csv --output $R/ab_v${v}_r$rep.csv > $R/ab_v${v}_r$rep.log 2>&1 || echo "bench v$v r$rep rc=$?"
  done
done
python3 - <<'PY'
import csv,glob,statistics as st,collections
d=collections.defaultdict(list); tac={}
for f in sorted(glob.glob('/tmp/r5/ab_v*_r*.csv')):
    v=f.split('ab_v')[1][0]
    for r in csv.DictReader(l for l in open(f) if not l.startswith('#')):
        if r['impl'].startswith('fp4kit'):
            try:
                k=(r['shape'],r['impl'][7:],int(r['M'])); d[k+(v,)].append(float(r['graph_us'])); tac[k]=r['tactic'].split(':')[1].split(' ')[0]
            except: pass
for k in sorted(tac):
    a=d.get(k+('0',)); b=d.get(k+('2',)); c=d.get(k+('3',)); e=d.get(k+('4',))
    if a and b:
        ma,mb,mc,me=st.median(a),st.median(b),st.median(c),st.median(e)
        print(f"{k[0]:<18}{k[1]:<6}{k[2]:>4} {tac[k]:<26} old {ma:7.2f} new {mb:7.2f} ({100*(mb-ma)/ma:+5.1f}%)  both {mc:7.2f} none {me:7.2f}")
PY
