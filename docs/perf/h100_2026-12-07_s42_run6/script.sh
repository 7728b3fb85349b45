#!/usr/bin/env bash
# Session 42 run 6 (H100): why does the W4A16 ring variant of the 32-row 24-token tile (tactic 65) slow down on
# 8192x28672 under sustained load (run 4) while wgmma 256x24 (40) and its W4A4 variant do not? nvidia-smi samples
# SM clock, power and throttle reasons every 20 ms during 200 ms samples (after 100 ms of warm-up) of each arm,
# M = 24, graph replay with PDL; twice, alternated. Binary: a1fb7e3.
set -u; R=$OUT/r6; mkdir -p $R; S=$R/summary.txt
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry || exit 3
H=build-carry/tools/fp4kit
arm() { local name=$1 mode=$2 tac=$3
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv,noheader -lms 20 > $R/smi_$name.csv 2>&1 & local P=$!
  sleep 0.3; timeout 60 $H bench gemm --shapes 8192x28672 --m 24 --mode $mode --tactic $tac --graph --pdl --no-baseline --no-check --target-ms 200 --warmup-ms 100 --csv --output $R/$name.csv > $R/$name.log 2>&1
  sleep 0.2; kill $P; wait $P 2>/dev/null
  python3 - "$R/smi_$name.csv" "$R/$name.csv" "$name" >> $S <<'PY'
import sys, csv, statistics as st
rows=[l.split(',') for l in open(sys.argv[1]) if l.count(',')>=5]
clk=[float(r[1].split()[0]) for r in rows if 'MHz' in r[1]]; pw=[float(r[3].split()[0]) for r in rows if 'W' in r[3]]
busy=[(c,p) for c,p in zip(clk,pw) if p>300]
res=[r for r in csv.DictReader(l for l in open(sys.argv[2]) if not l.startswith('#')) if r['impl'].startswith('fp4kit')]
g=res[0]['graph_us'] if res else '?'
print(f"{sys.argv[3]:10} graph_us {g:>7}  samples {len(busy):3}  sm_clock_median {st.median([c for c,_ in busy]) if busy else 0:6.0f} MHz  power_median {st.median([p for _,p in busy]) if busy else 0:5.0f} W  reasons {sorted(set(r[5].strip() for r in rows))[:4]}")
PY
}
for r in 1 2; do arm t40_w16_r$r w4a16 40; arm t65_w16_r$r w4a16 65; arm t65_w4_r$r w4a4 65; done
cat $S
tar -C $OUT -czf $OUT/run6.tgz r6 && rm -rf $R
