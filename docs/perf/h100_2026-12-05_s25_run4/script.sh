#!/usr/bin/env bash
# Session 25 run 4 (experiment build: env switches in per_entry.cu): per-entry kernel A rolling on/off and
# kernel B rolling / plain 1 / plain 2 row tiles, at T = 2..8 on Qwen3-30B, Qwen3.6, fi-256 (per-entry path).
set -u
R=/tmp/r4; mkdir -p $R; tar -xzf build-carry/fp4kit-binaries.tar.gz -C /tmp
F=/tmp/tools/fp4kit
run() {  # name env...
  local name=$1; shift
  env "$@" timeout 60 $F bench moe --preset qwen3-30b-a3b,qwen3.6-35b-a3b,fi-256 --t 2,4,8 --mode both --graph --pdl \
    --no-baseline --no-check --target-ms 15 --path per-entry --csv --output $R/$name.csv > $R/$name.log 2>&1 || echo "$name rc=$?"
}
for rep in 1 2; do
  run def_r$rep
  run a1_r$rep FP4KIT_X_PEA_ROLL=1
  run a0_r$rep FP4KIT_X_PEA_ROLL=0
  run br_r$rep FP4KIT_X_PEB=r
  run bp1_r$rep FP4KIT_X_PEB=p1
  run bp2_r$rep FP4KIT_X_PEB=p2
done
# correctness of the non-default combinations on small T (CPU reference)
FP4KIT_X_PEA_ROLL=1 FP4KIT_X_PEB=p2 timeout 60 $F bench moe --preset qwen3-30b-a3b,fi-256 --t 2,4 --mode both --no-baseline --path per-entry --target-ms 5 > $R/check1.log 2>&1; echo "check1 rc=$?"
FP4KIT_X_PEA_ROLL=0 FP4KIT_X_PEB=p1 timeout 60 $F bench moe --preset qwen3.6-35b-a3b --t 2,8 --mode both --no-baseline --path per-entry --target-ms 5 > $R/check2.log 2>&1; echo "check2 rc=$?"
python3 - <<'PY'
import csv,glob,statistics as st,collections
R='/tmp/r4'
d=collections.defaultdict(list)
for f in glob.glob(R+'/*_r[12].csv'):
    v=f.rsplit('/',1)[1].rsplit('_r',1)[0]
    for r in csv.DictReader(l for l in open(f) if not l.startswith('#')):
        if r['impl'].startswith('fp4kit'):
            d[(r['preset'],int(r['T']),r['impl'][7:],v)].append(float(r['graph_us']))
vs=['def','a1','a0','br','bp1','bp2']
print(f"{'preset':<17}{'T':>3} {'mode':<6}"+"".join(f"{v:>9}" for v in vs))
for k in sorted({k[:3] for k in d}):
    print(f"{k[0]:<17}{k[1]:>3} {k[2]:<6}"+"".join(f"{st.median(d[k+(v,)]):9.2f}" if d.get(k+(v,)) else f"{'-':>9}" for v in vs))
PY
grep -E "checks|RESULT" $R/check*.log
tar -C /tmp -czf $OUT/r4.tgz r4
