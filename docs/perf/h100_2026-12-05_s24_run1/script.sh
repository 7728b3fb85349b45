#!/usr/bin/env bash
# Session 24 run 1: gpu-check of HEAD (acceptance gemm_small + moe_small, memcheck), then the W4A4
# NVFP4-ring A/B (FP4KIT_W4A4_RING=1 vs 0, alternated, 3 repetitions) on the layers its rule covers.
set -u
OUT=/tmp/gc BUILD_DIR=build-carry BENCH=acceptance ACC_ONLY=gemm_small,moe_small SANITIZE=1 BUDGET=250 BENCH_TIMEOUT=150 \
  bash scripts/gpu-check.sh > /tmp/gc.log 2>&1; echo "gpu-check rc=$?" > /tmp/gc/status.txt
cp /tmp/gc.log /tmp/gc/console.txt
tail -25 /tmp/gc.log
R=/tmp/gc/ring_ab; mkdir -p $R; tar -xzf build-carry/fp4kit-binaries.tar.gz -C /tmp
F=/tmp/tools/fp4kit
for rep in 1 2 3; do
  for v in 0 1; do
    FP4KIT_W4A4_RING=$v timeout 60 $F bench gemm --shapes 8192x8192,8192x28672 --m 3,4,6,8 --mode w4a4 --graph --pdl --target-ms 20 --csv --output $R/ab_v${v}_r$rep.csv > $R/ab_v${v}_r$rep.log 2>&1 || echo "bench v$v r$rep rc=$?"
  done
done
python3 - <<'PY'
import csv,glob,statistics as st,collections
R='/tmp/gc/ring_ab'
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
print(f"{'shape':<18}{'M':>3} {'ring=0':>9} {'ring=1':>9} {'delta':>7}  t0/t1  xFP8(ring=1)")
for s,m in sorted({(k[0],k[1]) for k in d}):
    a=d.get((s,m,'0')); b=d.get((s,m,'1'))
    if not a or not b: continue
    ma,mb=st.median(a),st.median(b)
    f8=st.median(d[(s,m,'cublas.fp8')])
    print(f"{s:<18}{m:>3} {ma:9.2f} {mb:9.2f} {100*(mb-ma)/ma:+6.1f}%  {tac[(s,m,'0')]}/{tac[(s,m,'1')]}  {f8/mb:5.2f}")
PY

# Large-M tactic sweep: is any tactic (stream-K included) ahead of auto at M = 256..1024?
T=/tmp/gc/sweep; mkdir -p $T
timeout 240 $F bench gemm --shapes all --m 24,32,48,64,96,128,192,256,384,512,768,1024 --mode w4a16 --tactic all --no-baseline --no-check --target-ms 8 --csv --output $T/all_w4a16.csv > $T/all_w4a16.log 2>&1; echo "sweep rc=$?"
grep -E "^tactics:|gap:" $T/all_w4a16.log | head -60
python3 gpu-bin/sweep_table.py $T/all_w4a16.csv
# Small-M: CTA fill (gate_up's 16-token tiles: 224 CTAs on 264 slots) and every tactic at 9..16 tokens.
timeout 90 $F bench gemm --shapes 28672x4096,30720x4096,33792x4096 --m 8,12,16 --mode both --graph --pdl --target-ms 20 --no-baseline --no-check --csv --output $T/fill.csv > $T/fill.log 2>&1; echo "fill rc=$?"
python3 - <<'PY'
import csv
for r in csv.DictReader(l for l in open('/tmp/gc/sweep/fill.csv') if not l.startswith('#')):
    if r['impl'].startswith('fp4kit'):
        n,k,m=int(r['N']),int(r['K']),int(r['M']); g=float(r['graph_us'])
        print(f"{n}x{k} M={m:>2} {r['impl']:<13} {g:7.2f} us  {n*k*0.5625/g/1e6:6.3f} TB/s  {r['tactic']}")
PY
timeout 150 $F bench gemm --shapes 8192x28672,gate_up,8192x8192,down --m 9,16 --mode both --tactic all --graph --pdl --no-baseline --no-check --target-ms 8 --csv --output $T/small_all.csv > $T/small_all.log 2>&1; echo "small_all rc=$?"
grep -E "^tactics:|gap:" $T/small_all.log | head -30
python3 gpu-bin/sweep_table.py $T/small_all.csv graph_us
