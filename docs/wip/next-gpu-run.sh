#!/usr/bin/env bash
# Prepared in session 10 for the next GPU session (carry ["gpu-bin"] only; binaries of HEAD 3ad4892+docs
# and of the two docs/wip patches, built on the dev machine):
#  1. the no-gather patch: test_moe (all) + memcheck of the fused-decode tests;
#  2. the probe: time decomposition of the fused-decode kernel (docs/wip/fused-decode-probe.sh);
#  3. the no-gather patch vs HEAD, W4A16, fused-decode forced and auto, two repetitions;
#  4. the route-in-kernel patch (FP4KIT_EXPERIMENT_ROUTE_IN_KERNEL=1: no permutation kernel, a memset of the
#     counters, every CTA ranks the ids) vs HEAD, same points (bench CPU-reference checks cover correctness).
set -u
N=gpu-bin/next; L=/tmp/r146; mkdir -p $L
for b in head probe no-gather route; do gunzip -c $N/fp4kit_$b.gz > /tmp/fp4kit_$b; done; gunzip -c $N/test_moe_no-gather.gz > /tmp/test_moe_ng; chmod +x /tmp/fp4kit_* /tmp/test_moe_ng
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 240 /tmp/test_moe_ng > $L/test_moe_ng.log 2>&1; echo "test_moe(no-gather) rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/test_moe_ng.log | tr '\n' ' ')"; grep -E "Failure" -A4 $L/test_moe_ng.log | head -12
timeout 200 compute-sanitizer --tool memcheck /tmp/test_moe_ng --gtest_filter='MoeGpu.FusedDecode*:MoeGpu.NonLocal*' > $L/memcheck_ng.log 2>&1; echo "memcheck(no-gather) rc=$? $(grep -E 'ERROR SUMMARY' $L/memcheck_ng.log)"
OLD=/tmp/fp4kit_head NEW=/tmp/fp4kit_probe L=$L/probe timeout 300 bash docs/wip/fused-decode-probe.sh
for rep in 1 2; do for b in head no-gather; do for path in fused-decode auto; do
  timeout 60 /tmp/fp4kit_$b bench moe --preset qwen3.6-35b-a3b,fi-256,qwen3-30b-a3b,deepseek-v3,fi-32 --t 2,4,8,16 --mode w4a16 --path $path --graph --no-baseline --target-ms 20 --csv --output $L/ng_${b}_${path}_$rep.csv > /dev/null 2>&1; echo "$b $path $rep rc=$? ok=$(grep -c ',ok,' $L/ng_${b}_${path}_$rep.csv)"
done; done; done
for rep in 1 2; do for path in fused-decode auto; do
  FP4KIT_EXPERIMENT_ROUTE_IN_KERNEL=1 timeout 60 /tmp/fp4kit_route bench moe --preset qwen3.6-35b-a3b,fi-256,qwen3-30b-a3b,deepseek-v3,fi-32 --t 2,4,8,16 --mode w4a16 --path $path --graph --no-baseline --target-ms 20 --csv --output $L/ng_route_${path}_$rep.csv > /dev/null 2>&1; echo "route $path $rep rc=$? ok=$(grep -c ',ok,' $L/ng_route_${path}_$rep.csv)"
done; done
python3 - <<'PY'
import csv,glob
res={}
for f in glob.glob('/tmp/r146/ng_*_?.csv'):
    _,b,path,_=f.split('/')[-1].split('_')
    for r in csv.reader(open(f)):
        if len(r)>14 and r[7].startswith('fp4kit'):
            res.setdefault((path,r[0],int(r[5])),{}).setdefault(b,[]).append((float(r[9]),r[14],r[-1][:12]))
print('path preset T | head us bw | no-gather us bw ratio | route us bw ratio  (graph, min of 2)')
for k in sorted(res):
    v=res[k]; h=min(v['head']); n=min(v.get('no-gather',[(0,'-','')])); r=min(v.get('route',[(0,'-','')]))
    print(k[0][:6],k[1][:12],k[2],'|',h[0],h[1],'|',n[0],n[1],round(n[0]/h[0],3),'|',r[0],r[1],round(r[0]/h[0],3),r[2])
PY
tar -C /tmp -czf $OUT/r146.tgz r146
