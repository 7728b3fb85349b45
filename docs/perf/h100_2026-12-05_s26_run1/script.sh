#!/usr/bin/env bash
# Session 26 run 1: W4A4 at 1..2 tokens with the per-slice in-kernel staging of A (stage_a_slice; up
# to 64 KB per CTA, so K > 4096 too) against HEAD c291d16 (staging kernel above K = 4096): test_gemm,
# racecheck / memcheck of the bit-for-bit test, A/B alternated 3x; then o / qkv M = 448 / 512 every
# tactic (wide wave model); gate_up M = 3..16 with the A ring at kw = 2 (FP4KIT_RING_MIN_KW=2) vs the arrangement.
set -u
R=/tmp/r1; mkdir -p $R; tar -xzf build-carry/r1.tgz -C /tmp
N=/tmp/new/fp4kit; O=/tmp/old/fp4kit
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.limit --format=csv > $R/smi.txt
timeout 120 /tmp/new/test_gemm --gtest_brief=1 > $R/test_gemm.log 2>&1; echo "test_gemm rc=$?"
grep -E "FAILED|PASSED|SKIPPED \]" $R/test_gemm.log | head -6
F='GemmGpu.W4A4MatchesW4A16OnDecodedActivationsBitForBit'
timeout 150 compute-sanitizer --tool racecheck /tmp/new/test_gemm --gtest_filter=$F > $R/racecheck.log 2>&1; echo "racecheck rc=$?"
grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" $R/racecheck.log | head -4
timeout 100 compute-sanitizer --tool memcheck /tmp/new/test_gemm --gtest_filter=$F > $R/memcheck.log 2>&1; echo "memcheck rc=$?"
grep -E "ERROR SUMMARY|PASSED|FAILED" $R/memcheck.log | head -3
for rep in 1 2 3; do
  for v in old new; do
    B=$O; [ $v = new ] && B=$N
    timeout 60 $B bench gemm --shapes 8192x8192,down,gate_up,o,qkv,8192x28672 --m 1,2 --mode both --graph --pdl --no-baseline --target-ms 30 --csv --output $R/ab_${v}_r$rep.csv > $R/ab_${v}_r$rep.log 2>&1 || echo "ab $v $rep rc=$?"
  done
done
python3 - <<'PY'
import csv,glob,statistics as st,collections
R='/tmp/r1'
d=collections.defaultdict(list); tac={}; chk=collections.Counter()
for f in glob.glob(f'{R}/ab_*_r*.csv'):
    v=f.split('/')[-1].split('_')[1]
    for r in csv.DictReader(l for l in open(f) if not l.startswith('#')):
        if not r['impl'].startswith('fp4kit'): continue
        k=(r['shape'],int(r['M']),r['impl'][7:])
        d[k+(v,)].append(float(r['graph_us'])); tac[k+(v,)]=r['tactic'].split(' ')[0]; chk[(v,r['check'])]+=1
print('checks',dict(chk))
for k in sorted({k[:3] for k in d}):
    o=st.median(d[k+('old',)]); n=st.median(d[k+('new',)])
    print(f"{k[0]:<18}{k[1]:>3} {k[2]:<6} old {o:7.2f} new {n:7.2f} {n/o:6.3f}  {tac[k+('old',)]} -> {tac[k+('new',)]}  spread old {max(d[k+('old',)])/min(d[k+('old',)]):.3f} new {max(d[k+('new',)])/min(d[k+('new',)]):.3f}")
PY
for rep in 1 2 3; do
  for v in kw8 kw2; do
    E=8; [ $v = kw2 ] && E=2
    FP4KIT_RING_MIN_KW=$E timeout 60 $N bench gemm --shapes gate_up --m 3,4,6,8,9,12,16 --mode both --graph --pdl --no-baseline --target-ms 30 --csv --output $R/kw_${v}_r$rep.csv > $R/kw_${v}_r$rep.log 2>&1 || echo "kw $v $rep rc=$?"
  done
done
python3 - <<'PY'
import csv,glob,statistics as st,collections
R='/tmp/r1'
d=collections.defaultdict(list); tac={}; chk=collections.Counter()
for f in glob.glob(f'{R}/kw_*_r*.csv'):
    v=f.split('/')[-1].split('_')[1]
    for r in csv.DictReader(l for l in open(f) if not l.startswith('#')):
        if not r['impl'].startswith('fp4kit'): continue
        k=(r['shape'],int(r['M']),r['impl'][7:])
        d[k+(v,)].append(float(r['graph_us'])); tac[k+(v,)]=r['tactic'].split(' ')[0]; chk[(v,r['check'])]+=1
print('checks',dict(chk))
for k in sorted({k[:3] for k in d}):
    o=st.median(d[k+('kw8',)]); n=st.median(d[k+('kw2',)])
    print(f"{k[0]:<18}{k[1]:>3} {k[2]:<6} kw8 {o:7.2f} kw2-ring {n:7.2f} {n/o:6.3f}  {tac[k+('kw8',)]}")
PY
timeout 150 $N bench gemm --shapes o,qkv --m 448,512 --mode both --tactic all --graph --pdl --no-baseline --no-check --warmup-ms 50 --target-ms 10 --csv --output $R/wide_all.csv > $R/wide_all.log 2>&1; echo "wide_all rc=$?"
python3 gpu-bin/sweep_table.py $R/wide_all.csv graph_us 2>&1 | cut -c1-260
tar -C /tmp -czf $OUT/r1.tgz r1
