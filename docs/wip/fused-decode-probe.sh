#!/usr/bin/env bash
# Next-session experiment (docs/wip/fused-decode-probe.patch): where the fused-decode kernel's time goes.
# Build a binary with the patch applied (git apply docs/wip/fused-decode-probe.patch; ninja), carry it as
# $NEW and the committed binary as $OLD, run on the H100:
#   probe 0 = the kernel (hooks compiled in; compare with $OLD to see they cost nothing),
#   probe 1 = no FC1 -> FC2 waits, arrivals, split sums or finalize (checks FAIL: timing only),
#   probe 2 = the same weight loads in the same unit order, folded instead of decoded and multiplied,
#   probe 3 = nothing after griddepcontrol.wait (the permutation + launch in front),
#   probe 4 = the same weight bytes read in equal contiguous shares per warp (no units, no tail),
#   probe 5 = the kernel with FC2 units row-block-major instead of slot-major (correct results: checks ok),
#   probe 6 = the kernel with its weight loads under an L2 evict-first policy (correct results).
# t3 = floor of the launch + permutation; t2 - t3 = the weight stream's pattern alone (compare with
# active bytes / copy BW); t1 - t2 = decode + MMA; t0 - t1 = dependencies, fences, finalize.
set -u
OLD=${OLD:?committed fp4kit}; NEW=${NEW:?patched fp4kit}; L=${L:-/tmp/probe}; mkdir -p $L
P=qwen3.6-35b-a3b,fi-256,qwen3-30b-a3b,deepseek-v3
for rep in 1 2; do
  $OLD bench moe --preset $P --t 2,4,8,16 --mode w4a16 --path fused-decode --graph --no-baseline --target-ms 20 --csv --output $L/old_$rep.csv > /dev/null 2>&1
  for pr in 0 1 2 3 4 5 6; do
    FP4KIT_EXPERIMENT_FUSED_PROBE=$pr $NEW bench moe --preset $P --t 2,4,8,16 --mode w4a16 --path fused-decode --graph --no-baseline --target-ms 20 --csv --output $L/p${pr}_$rep.csv > /dev/null 2>&1
  done
done
python3 - "$L" <<'PY'
import csv,glob,sys
L=sys.argv[1]; res={}
for f in glob.glob(L+'/*_?.csv'):
    b=f.split('/')[-1].split('_')[0]
    for r in csv.reader(open(f)):
        if len(r)>14 and r[7].startswith('fp4kit'):
            res.setdefault((r[0],int(r[5])),{}).setdefault(b,[]).append((float(r[9]),float(r[12])))
print("preset T act_MB old p0 p1 p2 p3 p4 p5 p6 (graph us, min of 2)")
for k in sorted(res):
    v=res[k]; print(k[0][:12],k[1],v['old'][0][1],*[min(x[0] for x in v.get(b,[(0,0)])) for b in ("old","p0","p1","p2","p3","p4","p5","p6")])
PY
