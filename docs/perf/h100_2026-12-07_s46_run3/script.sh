#!/usr/bin/env bash
# Session 46 run 3 (an H100): `bash docs/wip/s46-run3.sh` with carry ["build-carry"] (the packs of run 2's script).
# 1) tests of the coalesced-partials build; 2) the 17..32-token 128-row rule (FP4KIT_WGMMA_PAIRS=0 = before, vs
#    default) at the acceptance's timing (200 ms samples after 100 ms of warm-up: run 1's 60 ms samples had the rule
#    ahead, its acceptance sweep had 8192x28672 M = 32 slower than session 43's), alternated x2, and nvidia-smi
#    (SM clock, power) sampled during 8192x28672 M = 32 of each arm; 3) the coalesced decode stream-K partials vs
#    HEAD (narrow layers; Mixtral's pipeline with FP4KIT_HBM_RICH=1, which takes the grouped decode's stream-K);
# 4) W4A4 M = 9 / 16 every tactic on the four >= 32 MB layers (#5 a's largest misses). One tarball, packed per step.
set -u; R=$OUT/r3; mkdir -p $R; S=$R/summary.txt
pack() { (cd $OUT && tar -czf r3.tgz r3); }
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry && tar -xJf build-carry/skc.tar.xz -C build-carry || exit 3
H=build-carry/tools/fp4kit; K=build-carry/tools/fp4kit_skc; $H info > $R/info.txt 2>&1; $K info > $R/info_skc.txt 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.memory,power.limit,temperature.gpu --format=csv > $R/nvidia-smi.txt
echo "gpu $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" >> $S
t() { local name=$1; shift; timeout 200 "$@" > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS $(grep -E '^\[  (PASSED|FAILED) ' $R/$name.log | tr '\n' ' ')" >> $S; }
t test_gemm_skc build-carry/tests/test_gemm_skc; t test_moe_skc build-carry/tests/test_moe_skc; pack
b() { local name=$1; timeout 100 $H bench gemm --shapes seed.8192x28672,8192x16384 --m 17,20,24,28,32 --mode both --graph --pdl --no-baseline --no-check --target-ms 200 --warmup-ms 100 --csv --output $R/$name.csv > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS" >> $S; }
for r in 1 2; do FP4KIT_WGMMA_PAIRS=0 b before_r$r; b rule_r$r; done
python3 scripts/ab_table.py --col graph_us --base before $R/before_r*.csv $R/rule_r*.csv > $R/ab_rule.txt 2>&1; pack
clk() { local name=$1 mode=$2
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv,noheader -lms 20 > $R/smi_$name.csv 2>&1 & local P=$!
  sleep 0.3; timeout 60 $H bench gemm --shapes 8192x28672 --m 32 --mode $mode --graph --pdl --no-baseline --no-check --target-ms 200 --warmup-ms 100 --csv --output $R/$name.csv > $R/$name.log 2>&1
  sleep 0.2; kill $P; wait $P 2>/dev/null
  python3 - "$R/smi_$name.csv" "$R/$name.csv" "$name" >> $S <<'PY'
import sys, csv, statistics as st
rows=[l.split(',') for l in open(sys.argv[1]) if l.count(',')>=5]
clk=[float(r[1].split()[0]) for r in rows if 'MHz' in r[1]]; pw=[float(r[3].split()[0]) for r in rows if 'W' in r[3]]
busy=[(c,p) for c,p in zip(clk,pw) if p>300]
res=[r for r in csv.DictReader(l for l in open(sys.argv[2]) if not l.startswith('#')) if r['impl'].startswith('fp4kit')]
g=res[0]['graph_us'] if res else '?'; tac=res[0].get('tactic','?') if res else '?'
print(f"{sys.argv[3]:14} graph_us {g:>7}  samples {len(busy):3}  sm_clock_median {st.median([c for c,_ in busy]) if busy else 0:6.0f} MHz  power_median {st.median([p for _,p in busy]) if busy else 0:5.0f} W  {tac}")
PY
}
for r in 1 2; do for mode in w4a16 w4a4; do FP4KIT_WGMMA_PAIRS=0 clk before_${mode}_r$r $mode; clk rule_${mode}_r$r $mode; done; done; pack
g() { local name=$1 bin=$2; timeout 60 $bin bench gemm --shapes 1024x4096,2048x4096,2048x14336,4096x2048 --m 1,2,4,8,12,16 --mode both --graph --pdl --no-baseline --no-check --target-ms 30 --csv --output $R/$name.csv > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS" >> $S; }
m() { local name=$1 bin=$2; FP4KIT_HBM_RICH=1 timeout 90 $bin bench moe --preset mixtral-8x7b --t 4,8,16,32 --path pipeline --mode both --graph --pdl --no-baseline --no-check --target-ms 30 --csv --output $R/$name.csv > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS" >> $S; }
for r in 1 2; do g ghead_r$r $H; g gskc_r$r $K; m mhead_r$r $H; m mskc_r$r $K; done
python3 scripts/ab_table.py --col graph_us --base ghead $R/ghead_r*.csv $R/gskc_r*.csv > $R/ab_skc_gemm.txt 2>&1
python3 scripts/ab_table.py --col graph_us --base mhead $R/mhead_r*.csv $R/mskc_r*.csv > $R/ab_skc_moe.txt 2>&1; pack
timeout 150 $H bench gemm --shapes seed.8192x28672,llama8b.gate_up,seed.8192x8192,llama8b.down --m 9,16 --mode w4a4 --tactic all --graph --pdl --no-baseline --no-check --target-ms 20 --csv --output $R/sweep_w4a4.csv > $R/sweep_w4a4.log 2>&1; echo "sweep rc=$? t=$SECONDS" >> $S; pack
cat $S; cat $R/ab_rule.txt; tail -4 $R/ab_skc_gemm.txt; grep -vE ' (0\.99|1\.00|1\.01)[0-9] ' $R/ab_skc_gemm.txt | head -30; cat $R/ab_skc_moe.txt | head -30
rm -rf $R; true
