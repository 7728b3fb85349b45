#!/usr/bin/env bash
# Session 33 run 4: the per-call (eager) time of o W4A4 at M = 3..12, which run 3's acceptance sweep
# measured ~5 us above session 32's (graph replay unchanged; GEMM SASS identical): base (39dfa1c's
# SASS) vs new (HEAD), alternated, the acceptance's own bench command restricted to o and qkv.
set -u; R=$OUT; B=gpu-bin/s33r4; mkdir -p $R/ab
for f in fp4kit_base fp4kit_new; do xz -dc $B/$f.xz > /tmp/$f; chmod +x /tmp/$f; done
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
C="bench gemm --shapes o,qkv --m 1,2,3,4,6,8,9,12,16 --mode w4a4 --graph --pdl --target-ms 30 --no-baseline --csv"
for rep in 1 2 3; do for v in base new; do
  timeout 60 /tmp/fp4kit_$v $C --output $R/ab/${v}_r$rep.csv > /dev/null 2>&1 || echo "$v $rep rc=$?"
done; done
python3 scripts/ab_table.py --col us --base base $R/ab/*_r*.csv > $R/eager.txt 2>&1; cat $R/eager.txt
python3 scripts/ab_table.py --col graph_us --base base $R/ab/*_r*.csv > $R/graph.txt 2>&1; cat $R/graph.txt
tar -C $R -czf $R/ab.tgz ab && rm -rf $R/ab
