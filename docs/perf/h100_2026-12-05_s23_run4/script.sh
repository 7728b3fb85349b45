#!/usr/bin/env bash
# Session 23 run 4 (H100): W4A4 on the NVFP4 ring (RingA4) vs the arrangement; diagnostic sweeps.
set -u
R=/tmp/r4; mkdir -p $R; tar -xzf build-carry/fp4kit-binaries.tar.gz -C /tmp
F=/tmp/tools/fp4kit
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $R/smi.txt
/tmp/tests/test_gemm --gtest_filter='GemmGpu.*:GemmApi*' --gtest_brief=1 > $R/test_gemm.log 2>&1; echo "test_gemm rc=$?" | tee -a $R/status.txt
grep -E "FAILED|PASSED|Failure" $R/test_gemm.log | head -20
timeout 240 compute-sanitizer --tool memcheck --error-exitcode 99 /tmp/tests/test_gemm --gtest_filter='GemmGpu.W4A4RaggedAllTactics' --gtest_brief=1 > $R/memcheck.log 2>&1; echo "memcheck rc=$?" | tee -a $R/status.txt
grep -m1 "ERROR SUMMARY" $R/memcheck.log
for rep in 1 2 3; do
  for v in 0 1; do
    FP4KIT_W4A4_RING=$v timeout 120 $F bench gemm --shapes all --m 3,4,5,6,8,9,12,16 --mode w4a4 --graph --pdl --target-ms 20 --csv --output $R/ab_v${v}_r$rep.csv > $R/ab_v${v}_r$rep.log 2>&1 || echo "bench v$v r$rep rc=$?"
  done
done
for t in 51 52 53 54; do
  timeout 90 $F bench gemm --shapes 8192x8192,down,8192x28672 --m 4,8,12,16 --mode w4a4 --tactic $t --graph --pdl --target-ms 10 --no-baseline --csv --output $R/forced_t$t.csv > $R/forced_t$t.log 2>&1 || echo "forced $t rc=$?"
done
for path in auto per-entry fused-decode; do
  timeout 60 $F bench moe --preset qwen3-30b-a3b,qwen3.6-35b-a3b --t 4,8 --mode both --graph --pdl --path $path --no-baseline --no-check --target-ms 20 --csv --output $R/moe_${path}.csv > $R/moe_${path}.log 2>&1 || echo "moe $path rc=$?"
done
python3 - <<'PY'
import csv,glob,statistics as st,collections
R='/tmp/r4'
def rows(f):
    with open(f) as fh:
        return [r for r in csv.DictReader(l for l in fh if not l.startswith('#'))]
d=collections.defaultdict(list); tac={}
for f in sorted(glob.glob(R+'/ab_v*_r*.csv')):
    v=f.split('_v')[1][0]
    for r in rows(f):
        key=(r['shape'],int(r['M']))
        if r['impl']=='fp4kit.w4a4':
            d[key+(v,)].append(float(r['graph_us'])); tac[key+(v,)]=r['tactic'].split(':')[0]
        elif r['impl'] in('cublas.bf16','cublas.fp8'):
            d[key+(r['impl'],)].append(float(r['graph_us']))
print(f"{'shape':<18}{'M':>3} {'arranged':>9} {'ring4':>9} {'delta':>7}  t0/t1  xBF16 xFP8")
for s,m in sorted({(k[0],k[1]) for k in d}):
    a=d.get((s,m,'0')); b=d.get((s,m,'1'))
    if not a or not b: continue
    ma,mb=st.median(a),st.median(b)
    bf=st.median(d[(s,m,'cublas.bf16')]); f8=st.median(d[(s,m,'cublas.fp8')])
    print(f"{s:<18}{m:>3} {ma:9.2f} {mb:9.2f} {100*(mb-ma)/ma:+6.1f}%  {tac[(s,m,'0')]}/{tac[(s,m,'1')]}  {bf/mb:5.2f} {f8/mb:5.2f}")
for t in (51,52,53,54):
    try: rr=rows(f'{R}/forced_t{t}.csv')
    except Exception: continue
    print(f"forced {t}: "+"  ".join(f"{r['shape'].split('.')[-1]} M{r['M']} {float(r['graph_us']):.2f}" for r in rr if r['impl']=='fp4kit.w4a4'))
for f in sorted(glob.glob(R+'/moe_*.csv')):
    try: rr=rows(f)
    except Exception: continue
    print(f.split('/')[-1], "  ".join(f"{r['preset'][:8]} T{r['T']} {r['graph_us']} {r['bw/copy']} {r['note'][:12]}" for r in rr if r['impl'].startswith('fp4kit')))
try:
    best=collections.defaultdict(list)
    for r in rows(R+'/all_down.csv'):
        if r['impl'].startswith('fp4kit') and r['graph_us'] not in ('','-'):
            best[r['M']].append((float(r['graph_us']),r['tactic']))
    for m in sorted(best,key=int):
        v=sorted(best[m]); print('down M',m,'auto',[x for x in v if 'auto' in x[1]][:1],'best',v[:3])
except Exception as e: print(e)
PY
