#!/usr/bin/env bash
# Session 46 run 4 (H100 or H200): `bash docs/wip/s46-run4.sh` with carry ["build-carry"]: fp4kit-binaries.tar.xz =
# HEAD before (f0f75e4: tools/fp4kit, tests/test_gemm, tests/test_moe), new.tar.xz = f04ff06 (tools/fp4kit_new,
# tests/test_*_new): decode stream-K with coalesced partials, batched fix-up loads and each warp's range >= N
# units (FP4KIT_DECODE_SK_MIN_UNITS, default 8). 1) tests + memcheck of the new decode stream-K; 2) narrow layers
# (the heuristic's stream-K decode) M = 1..16: before vs new at N = 1 / 4 / 8 / 16, alternated x2; 3) every tactic
# on two narrow layers (is stream-K the right family there?); 4) Mixtral's pipeline (grouped decode stream-K with
# FP4KIT_HBM_RICH=1). One tarball, packed per step.
set -u; R=$OUT/r4; mkdir -p $R; S=$R/summary.txt
pack() { (cd $OUT && tar -czf r4.tgz r4); }
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry && tar -xJf build-carry/new.tar.xz -C build-carry || exit 3
H=build-carry/tools/fp4kit; N=build-carry/tools/fp4kit_new; $N info > $R/info_new.txt 2>&1; $H info > $R/info.txt 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.memory,power.limit,temperature.gpu --format=csv > $R/nvidia-smi.txt
echo "gpu $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" >> $S
cuobjdump --dump-resource-usage $N 2>/dev/null | grep -A1 'decode_gemm_kernel' | grep -o 'REG:[0-9]* STACK:[0-9]* SHARED:[0-9]* LOCAL:[0-9]*' | sort | uniq -c > $R/decode_sk_resources.txt
echo "decode_gemm_kernel resource lines: $(wc -l < $R/decode_sk_resources.txt), with LOCAL>0: $(grep -vc 'LOCAL:0$' $R/decode_sk_resources.txt)" >> $S
t() { local name=$1; shift; timeout 150 "$@" > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS $(grep -E '^\[  (PASSED|FAILED) ' $R/$name.log | tr '\n' ' ')" >> $S; }
t test_gemm_new build-carry/tests/test_gemm_new; t test_moe_new build-carry/tests/test_moe_new; pack
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tac in 0 3 6; do
  timeout 60 $SAN --tool memcheck $N bench gemm --shapes 1008x4160,2064x1056 --m 1,13,16 --mode both --tactic $tac --reps 2 --warmup 1 --no-baseline > $R/memcheck_t$tac.log 2>&1
  echo "memcheck tactic $tac rc=$? t=$SECONDS $(grep -E 'ERROR SUMMARY' $R/memcheck_t$tac.log | tr '\n' ' ') $(grep -cE ' ok ' $R/memcheck_t$tac.log) ok rows" >> $S
done; pack
g() { local name=$1 bin=$2; timeout 60 $bin bench gemm --shapes 1024x4096,2048x4096,4096x2048,512x2048,2048x14336 --m 1,2,4,8,12,16 --mode both --graph --pdl --no-baseline --no-check --target-ms 30 --csv --output $R/$name.csv > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS" >> $S; }
for r in 1 2; do g before_r$r $H; for u in 1 4 8 16; do FP4KIT_DECODE_SK_MIN_UNITS=$u g u${u}_r$r $N; done; done
for u in 1 4 8 16; do python3 scripts/ab_table.py --col graph_us --base before $R/before_r*.csv $R/u${u}_r*.csv > $R/ab_u$u.txt 2>&1; done; pack
timeout 120 $N bench gemm --shapes 1024x4096,4096x2048 --m 1,8,16 --mode w4a16 --tactic all --graph --pdl --no-baseline --no-check --target-ms 20 --csv --output $R/sweep_narrow.csv > $R/sweep_narrow.log 2>&1; echo "sweep rc=$? t=$SECONDS" >> $S; pack
m() { local name=$1 bin=$2; FP4KIT_HBM_RICH=1 timeout 60 $bin bench moe --preset mixtral-8x7b --t 4,8,16 --path pipeline --mode both --graph --pdl --no-baseline --target-ms 30 --csv --output $R/$name.csv > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS $(grep -c ',ok' $R/$name.csv) ok" >> $S; }
for r in 1 2; do m mbefore_r$r $H; m mnew_r$r $N; done
python3 scripts/ab_table.py --col graph_us --base mbefore $R/mbefore_r*.csv $R/mnew_r*.csv > $R/ab_moe.txt 2>&1; pack
cat $S; for u in 1 4 8 16; do echo "== min units $u"; grep -E 'M=(1|8|16) ' $R/ab_u$u.txt | grep w4a16; done
python3 - $R/sweep_narrow.csv <<'PY'
import sys, csv
rows=[r for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith('#')) if r['impl'].startswith('fp4kit') and r.get('graph_us') not in (None,'','-')]
from collections import defaultdict
d=defaultdict(list)
for r in rows: d[(r['shape'],r['M'])].append((float(r['graph_us']), r['tactic']))
for k,v in sorted(d.items()): v.sort(); print(k, ' | '.join(f"{t:.2f} {n}" for t,n in v[:5]))
PY
cat $R/ab_moe.txt
rm -rf $R; true
