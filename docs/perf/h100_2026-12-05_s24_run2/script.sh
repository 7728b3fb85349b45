#!/usr/bin/env bash
# Session 24 run 2: two-pass token-tile fit + split-unit cost in the wide model (o, down), gemm_mid
# acceptance sweep, gate_up CTA-fill probe, #5 b per-call recheck.
set -u
R=/tmp/r2; mkdir -p $R; tar -xzf build-carry/fp4kit-binaries.tar.gz -C /tmp
F=/tmp/tools/fp4kit
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $R/smi.txt
/tmp/tests/test_gemm --gtest_filter='GemmGpu.*:GemmHeuristic*' --gtest_brief=1 > $R/test_gemm.log 2>&1; echo "test_gemm rc=$?"
grep -E "FAILED|PASSED" $R/test_gemm.log | head -5
timeout 120 $F bench gemm --shapes all --m 24,32,48,64,96,128,192,256,384,512,1024,1536 --mode both --graph --pdl --target-ms 30 --csv --output $R/accept_gemm_mid.csv > $R/accept_gemm_mid.log 2>&1; echo "gemm_mid rc=$?"
timeout 60 $F bench gemm --shapes o,qkv --m 1,2,3,4,5,6,8,9,12,16 --mode both --graph --pdl --target-ms 30 --csv --output $R/small_oqkv.csv > $R/small_oqkv.log 2>&1; echo "small_oqkv rc=$?"
timeout 220 $F bench gemm --shapes o,down --m 40,48,72,80,96,136,144,160,176,192,208,224,416,448,480,512 --mode both --tactic all --graph --pdl --no-baseline --no-check --target-ms 8 --csv --output $R/fit_all.csv > $R/fit_all.log 2>&1; echo "fit_all rc=$?"
for t in 52 54 21; do
  timeout 40 $F bench gemm --shapes 28672x4096,30720x4096,33792x4096 --m 8,16 --mode w4a16 --tactic $t --graph --pdl --no-baseline --no-check --target-ms 20 --csv --output $R/fill_t$t.csv > $R/fill_t$t.log 2>&1; echo "fill t$t rc=$?"
done
python3 - <<'PY'
import csv,glob
for f in sorted(glob.glob('/tmp/r2/fill_t*.csv')):
    for r in csv.DictReader(l for l in open(f) if not l.startswith('#')):
        if r['impl'].startswith('fp4kit'):
            n,k,m=int(r['N']),int(r['K']),int(r['M']); g=float(r['graph_us'])
            print(f"{n}x{k} M={m:>2} {g:7.2f} us {n*k*0.5625/g/1e6:6.3f} TB/s {r['tactic']}")
PY
grep -E "^# *tactics:|gap:" $R/fit_all.log | head -40
