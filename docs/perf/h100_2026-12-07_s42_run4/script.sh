#!/usr/bin/env bash
# Session 42 run 4 (H100): run 3's acceptance sweep read 8192x28672 M = 24 on tactic 65 at 60.4 / 58.6 us (graph,
# W4A16 / W4A4) where run 2's A/B (30 ms samples) read 55.3 / 53.5. The rule vs FP4KIT_DECODE_M24_R32=0 again, at
# the acceptance sweep's settings (200 ms samples after 100 ms of warm-up), on the layers where it changes the
# choice, alternated x2 (9b5169d's binary).
set -u; R=$OUT/r4; mkdir -p $R; S=$R/summary.txt
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry || exit 3
H=build-carry/tools/fp4kit; $H info > $R/info.txt 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.memory,power.limit,temperature.gpu --format=csv > $R/nvidia-smi.txt
b() { local name=$1; shift; timeout 120 $H bench gemm --shapes seed,qkv,gate_up --m 17,20,24 --mode both --graph --pdl --no-baseline --target-ms 200 --warmup-ms 100 --csv --output $R/$name.csv > $R/$name.log 2>&1; echo "$name rc=$? t=$SECONDS" >> $S; }
for r in 1 2; do FP4KIT_DECODE_M24_R32=0 b off_r$r; b rule_r$r; done
python3 scripts/ab_table.py --col graph_us --base off $R/off_r*.csv $R/rule_r*.csv > $R/ab_graph.txt 2>&1
python3 scripts/ab_table.py --col us --base off $R/off_r*.csv $R/rule_r*.csv > $R/ab_us.txt 2>&1
cat $S; cat $R/ab_graph.txt; cat $R/ab_us.txt | head -30
tar -C $OUT -czf $OUT/run4.tgz r4 && rm -rf $R
