#!/usr/bin/env bash
# Session 25 run 5 (build: per-entry kernel B takes two plain row tiles over rolling single tiles when one
# tile per CTA would take more than a wave; env switches FP4KIT_X_PEA_ROLL / FP4KIT_X_PEB still in):
# auto vs forced per-entry on every preset at T = 1..16 (2 repetitions alternated), the kernel-A rolling
# combination, the old kernel-B choice at T = 1, and CPU-reference checks of the new per-entry configs.
set -u
R=/tmp/r5; mkdir -p $R; tar -xzf build-carry/fp4kit-binaries.tar.gz -C /tmp
F=/tmp/tools/fp4kit
B="bench moe --mode both --graph --pdl --no-baseline --no-check --target-ms 15 --csv"
for rep in 1 2; do
  timeout 120 $F $B --preset all --t 1,2,4,8,16 --output $R/auto_r$rep.csv > $R/auto_r$rep.log 2>&1 || echo "auto r$rep rc=$?"
  timeout 150 $F $B --preset all --t 2,4,8,16 --path per-entry --output $R/pe_r$rep.csv > $R/pe_r$rep.log 2>&1 || echo "pe r$rep rc=$?"
  FP4KIT_X_PEA_ROLL=1 timeout 60 $F $B --preset fi-256,qwen3.6-35b-a3b,qwen3-30b-a3b --t 2,4,8 --path per-entry --output $R/pea1_r$rep.csv > $R/pea1_r$rep.log 2>&1 || echo "pea1 r$rep rc=$?"
  FP4KIT_X_PEB=r timeout 60 $F $B --preset fi-256,deepseek-v3,fi-32 --t 1 --output $R/oldb_r$rep.csv > $R/oldb_r$rep.log 2>&1 || echo "oldb r$rep rc=$?"
done
timeout 90 $F bench moe --preset fi-256,qwen3.6-35b-a3b,qwen3-30b-a3b --t 1,3,4,8,16 --mode both --no-baseline --path per-entry --target-ms 5 > $R/check.log 2>&1; echo "check rc=$?"
grep -E "checks|RESULT" $R/check.log
python3 - <<'PY'
import csv,glob,statistics as st,collections
R='/tmp/r5'
d=collections.defaultdict(list); path={}
for f in glob.glob(R+'/*_r[12].csv'):
    v=f.rsplit('/',1)[1].rsplit('_r',1)[0]
    for r in csv.DictReader(l for l in open(f) if not l.startswith('#')):
        if r['impl'].startswith('fp4kit'):
            k=(r['preset'],int(r['T']),r['impl'][7:],v)
            d[k].append(float(r['graph_us'])); path[k]=r['note']
vs=['auto','pe','pea1','oldb']
print(f"{'preset':<17}{'T':>3} {'mode':<6}"+"".join(f"{v:>9}" for v in vs)+"  auto path")
for k in sorted({k[:3] for k in d}):
    print(f"{k[0]:<17}{k[1]:>3} {k[2]:<6}"+"".join(f"{st.median(d[k+(v,)]):9.2f}" if d.get(k+(v,)) else f"{'-':>9}" for v in vs)+"  "+path.get(k+('auto',),'')[:40])
PY
tar -C /tmp -czf $OUT/r5.tgz r5
