#!/usr/bin/env bash
# Session 24 run 3: programmatic dependent launch in the wgmma family (weights of the first stages
# before the PDL wait). Correctness (GemmGpu.*, memcheck of the PDL chain test), A/B --pdl vs not.
set -u
R=/tmp/r3; mkdir -p $R; tar -xzf build-carry/fp4kit-binaries.tar.gz -C /tmp
F=/tmp/tools/fp4kit
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $R/smi.txt
/tmp/tests/test_gemm --gtest_filter='GemmGpu.*' --gtest_brief=1 > $R/test_gemm.log 2>&1; echo "test_gemm rc=$?"
grep -E "FAILED|PASSED|Failure|differs" $R/test_gemm.log | head -12
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 99 /tmp/tests/test_gemm --gtest_filter='GemmGpu.WgmmaChainWithPdlMatchesSerialized' --gtest_brief=1 > $R/memcheck.log 2>&1; echo "memcheck rc=$?"
grep -m2 "ERROR SUMMARY\|PASSED\|FAILED" $R/memcheck.log
for rep in 1 2; do
  for v in nopdl pdl; do
    flag=""; [ $v = pdl ] && flag="--pdl"
    timeout 60 $F bench gemm --shapes all --m 24,32,48,64,96,128,192,256 --mode both --graph $flag --no-baseline --no-check --target-ms 15 --csv --output $R/ab_${v}_r$rep.csv > $R/ab_${v}_r$rep.log 2>&1 || echo "bench $v r$rep rc=$?"
  done
done
timeout 120 $F bench gemm --shapes all --m 24,32,48,64,96,128,192,256,384,512,1024,1536 --mode both --graph --pdl --target-ms 30 --csv --output $R/accept_gemm_mid.csv > $R/accept_gemm_mid.log 2>&1; echo "gemm_mid rc=$?"
python3 - <<'PY'
import csv,glob,statistics as st,collections
d=collections.defaultdict(list)
for f in sorted(glob.glob('/tmp/r3/ab_*_r*.csv')):
    v=f.split('ab_')[1].split('_')[0]
    for r in csv.DictReader(l for l in open(f) if not l.startswith('#')):
        if r['impl'].startswith('fp4kit'):
            try: d[(r['shape'],r['impl'][7:],int(r['M']),v)].append(float(r['graph_us']))
            except: pass
keys=sorted({k[:3] for k in d})
for s,mode,m in keys:
    a=d.get((s,mode,m,'nopdl')); b=d.get((s,mode,m,'pdl'))
    if a and b:
        ma,mb=st.median(a),st.median(b); print(f"{s:<18}{mode:<6}{m:>4} {ma:8.2f} {mb:8.2f} {100*(mb-ma)/ma:+6.1f}%")
PY
