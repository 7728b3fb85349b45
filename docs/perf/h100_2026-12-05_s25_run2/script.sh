#!/usr/bin/env bash
# Session 25 run 2 (HEAD 143d9c1 binaries, no code change): (1) MoE path A/B at T = 2..16 on the three
# presets with #7 a misses (pipeline / per-entry / fused-decode, 2 repetitions alternated);
# (2) fi-256 T = 4 pipeline over grouped decode tactics; (3) clocks and power while the large-M W4A16
# and W4A4 GEMMs run (why W4A16 is 5-12 % slower than W4A4 on the same wgmma tactic).
set -u
R=/tmp/r2; mkdir -p $R; tar -xzf build-carry/fp4kit-binaries.tar.gz -C /tmp
F=/tmp/tools/fp4kit
for rep in 1 2; do
  for p in pipeline per-entry fused-decode; do
    timeout 100 $F bench moe --preset qwen3-30b-a3b,qwen3.6-35b-a3b,fi-256 --t 2,4,8,16 --mode both --graph --pdl \
      --no-baseline --no-check --target-ms 15 --path $p --csv --output $R/path_${p}_r$rep.csv > $R/path_${p}_r$rep.log 2>&1 || echo "path $p r$rep rc=$?"
  done
done
for t1 in 8 9 13 14 0 1; do
  timeout 40 $F bench moe --preset fi-256 --t 4 --mode w4a16 --graph --pdl --no-baseline --no-check --target-ms 15 \
    --path pipeline --fc1-tactic $t1 --csv --output $R/fi_fc1_$t1.csv > $R/fi_fc1_$t1.log 2>&1 || echo "fc1 $t1 rc=$?"
done
for t2 in 8 9 13 14 0 1; do
  timeout 40 $F bench moe --preset fi-256 --t 4 --mode w4a16 --graph --pdl --no-baseline --no-check --target-ms 15 \
    --path pipeline --fc2-tactic $t2 --csv --output $R/fi_fc2_$t2.csv > $R/fi_fc2_$t2.log 2>&1 || echo "fc2 $t2 rc=$?"
done
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -lms 50 > $R/smi_log.csv 2>&1 &
SMI=$!
timeout 120 $F bench gemm --shapes seed.8192x28672,seed.8192x8192 --m 1024,1536 --mode both --no-check --target-ms 300 --verbose \
  --csv --output $R/power_gemm.csv > $R/power_gemm.log 2>&1; echo "power gemm rc=$?"
kill $SMI
python3 - <<'PY'
import csv,glob,statistics as st,collections
R='/tmp/r2'
def rows(f):
    with open(f) as fh:
        return [r for r in csv.DictReader(l for l in fh if not l.startswith('#'))]
d=collections.defaultdict(list)
for f in glob.glob(R+'/path_*_r*.csv'):
    p=f.split('path_')[1].rsplit('_r',1)[0]
    for r in rows(f):
        if r.get('impl','').startswith('fp4kit'):
            d[(r['preset'],int(r['T']),r['impl'],p)].append(float(r['graph_us'] or r['us']))
keys=sorted({k[:3] for k in d})
print(f"{'preset':<17}{'T':>3} {'impl':<13} {'pipeline':>9} {'per-entry':>9} {'fused':>9}")
for k in keys:
    v=[d.get(k+(p,)) for p in ('pipeline','per-entry','fused-decode')]
    print(f"{k[0]:<17}{k[1]:>3} {k[2]:<13} "+" ".join(f"{st.median(x):9.2f}" if x else f"{'-':>9}" for x in v))
for kind in ('fc1','fc2'):
    for f in sorted(glob.glob(R+f'/fi_{kind}_*.csv')):
        for r in rows(f):
            if r.get('impl','').startswith('fp4kit'): print(kind, f.rsplit('_',1)[1][:-4], r['graph_us'], r['us'])
PY
head -3 $R/smi_log.csv; wc -l $R/smi_log.csv
grep -E "fp4kit|cublas" $R/power_gemm.csv | cut -d, -f1-7,15 | head -20
tar -C /tmp -czf $OUT/r2.tgz r2
