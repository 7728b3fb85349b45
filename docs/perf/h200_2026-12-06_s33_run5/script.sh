#!/usr/bin/env bash
# Session 33 run 5 (probe, wrong results by design): the grouped wgmma kernels with the vec epilogue's
# shared->global store phase removed (FP4KIT_PROBE_NO_EPI_STORE in the grouped TUs) vs HEAD's code:
# per-kernel durations of one MoE layer at T = 4096 W4A16 (ncu), i.e. what moving that phase off the
# consumers (store warps) could save at most.
set -u; R=$OUT; B=gpu-bin/s33r5
for f in fp4kit_base fp4kit_probe; do xz -dc $B/$f.xz > /tmp/$f; chmod +x /tmp/$f; done
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
for p in fi-256 qwen3.6-35b-a3b qwen3-30b-a3b deepseek-v3; do for v in base probe; do
  timeout 60 $NCU --clock-control none --kernel-name regex:wgmma_gemm_kernel --metrics gpu__time_duration.sum,sm__cycles_elapsed.max --csv \
    /tmp/fp4kit_$v bench moe --preset $p --t 4096 --mode w4a16 --no-baseline --no-check --no-reduced-check --warmup 1 --reps 1 \
    > $R/dur_${p}_$v.csv 2>&1 || echo "$p $v rc=$?"
  python3 - $R/dur_${p}_$v.csv $p $v <<'PY'
import csv,sys
L=[l for l in open(sys.argv[1]) if l.startswith('"')]
r=[x for x in csv.DictReader(L)]
d=[(int(x['ID']),x['Metric Name'],float(x['Metric Value'].replace(',',''))) for x in r]
ids=sorted(set(i for i,_,_ in d))[-2:]
out=[]
for i in ids:
    t=[v for j,m,v in d if j==i and m=='gpu__time_duration.sum'][0]; c=[v for j,m,v in d if j==i and m=='sm__cycles_elapsed.max'][0]
    out.append("%.1f us / %.3f Mcyc"%(t/1000,c/1e6))
print(sys.argv[2], sys.argv[3], "FC1", out[0], "FC2", out[1])
PY
done; done
