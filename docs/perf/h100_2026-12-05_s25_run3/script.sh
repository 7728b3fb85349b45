#!/usr/bin/env bash
# Session 25 run 3: the mid-M acceptance sweep (and T = 4096 MoE) timed as before (--target-ms 30, right
# after the previous implementation) and with --target-ms 200 after --warmup-ms 100, clocks and power
# logged throughout; acceptance.py on each pair.
set -u
R=/tmp/r3; mkdir -p $R; tar -xzf build-carry/fp4kit-binaries.tar.gz -C /tmp
F=/tmp/tools/fp4kit
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -lms 100 > $R/smi_log.csv 2>&1 &
SMI=$!
M=24,32,48,64,96,128,192,256,384,512,1024,1536
date +%T > $R/times.txt
timeout 120 $F bench gemm --shapes all --m $M --mode both --graph --pdl --target-ms 30 --csv --output $R/mid_short.csv > $R/mid_short.log 2>&1; echo "mid short rc=$?"
date +%T >> $R/times.txt
timeout 280 $F bench gemm --shapes all --m $M --mode both --graph --pdl --target-ms 200 --warmup-ms 100 --csv --output $R/mid_long.csv > $R/mid_long.log 2>&1; echo "mid long rc=$?"
date +%T >> $R/times.txt
timeout 60 $F bench moe --preset all --t 4096 --mode both --no-reduced-check --target-ms 30 --csv --output $R/moe_large_short.csv > $R/moe_large_short.log 2>&1; echo "moe short rc=$?"
date +%T >> $R/times.txt
timeout 120 $F bench moe --preset all --t 4096 --mode both --no-reduced-check --target-ms 200 --warmup-ms 100 --csv --output $R/moe_large_long.csv > $R/moe_large_long.log 2>&1; echo "moe long rc=$?"
date +%T >> $R/times.txt
kill $SMI
cat $R/times.txt
python3 scripts/acceptance.py $R/mid_short.csv $R/moe_large_short.csv > $R/acc_short.txt 2>&1
python3 scripts/acceptance.py $R/mid_long.csv $R/moe_large_long.csv > $R/acc_long.txt 2>&1
grep -E "#[57] [c]:" $R/acc_short.txt $R/acc_long.txt
grep peak_TF $R/mid_short.csv $R/mid_long.csv
tar -C /tmp -czf $OUT/r3.tgz r3
