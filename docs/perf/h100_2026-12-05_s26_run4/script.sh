#!/usr/bin/env bash
# Session 26 run 3 (H100) / 4 (H200): the final W4A16 ring rule (warps per row block x row tiles >= 4):
# test_gemm, then auto / forced tiles with FP4KIT_RING_MIN_KW=8 (the rule before: arrangement below 8
# warps) vs the default, alternated twice: gate_up (kw 2, 32-row tiles), 14336x4096 (kw 4 on 32 rows, kw 2
# on 16 rows: arrangement either way), 8192x8192's 16-row tiles forced (kw 4).
set -u
R=/tmp/r3; mkdir -p $R/kw; tar -xzf build-carry/r3.tgz -C $R
F=$R/fp4kit
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $R/smi.txt
timeout 120 $R/test_gemm --gtest_brief=1 > $R/test_gemm.log 2>&1; echo "test_gemm rc=$?"
grep -E "FAILED|PASSED|SKIPPED \]" $R/test_gemm.log | head -4
for rep in 1 2; do
  for v in 8 1; do
    FP4KIT_RING_MIN_KW=$v timeout 40 $F bench gemm --shapes gate_up,14336x4096 --m 6,8,9,12,16 --mode w4a16 --graph --pdl --no-baseline --target-ms 20 --csv --output $R/kw/auto_kw${v}_r$rep.csv > /dev/null 2>&1 || echo "auto $v rc=$?"
    for t in 51 53; do
      FP4KIT_RING_MIN_KW=$v timeout 40 $F bench gemm --shapes 8192x8192 --m 6,8,12,16 --mode w4a16 --tactic $t --graph --pdl --no-baseline --target-ms 20 --csv --output $R/kw/t${t}_kw${v}_r$rep.csv > /dev/null 2>&1 || echo "t$t $v rc=$?"
    done
  done
done
python3 - <<'PY'
import csv,glob,statistics as st,collections
d=collections.defaultdict(list); chk=collections.Counter()
for f in glob.glob('/tmp/r3/kw/*.csv'):
    b=f.split('/')[-1][:-4].split('_'); arm=b[0]; v=b[1]
    for r in csv.DictReader(l for l in open(f) if not l.startswith('#')):
        if r['impl'].startswith('fp4kit'):
            d[(arm,r['shape'],int(r['M']),r['tactic'].split(' ')[0],v)].append(float(r['graph_us'])); chk[r['check']]+=1
print('checks',dict(chk))
for k in sorted({k[:4] for k in d}):
    a=st.median(d[k+('kw8',)]); b=st.median(d[k+('kw1',)])
    print(f"{k[0]:<5}{k[1]:<16}{k[2]:>3} {k[3]:<26} kw8-rule {a:7.2f} new-rule {b:7.2f} {b/a:6.3f}")
PY
rm -f $R/fp4kit $R/test_gemm
tar -C /tmp -czf $OUT/r3.tgz r3
