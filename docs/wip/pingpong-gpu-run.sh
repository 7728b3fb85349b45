#!/usr/bin/env bash
# GPU run for docs/wip/wgmma-pingpong.patch (run: bash gpu-bin/pingpong-gpu-run.sh, carry ["gpu-bin"];
# binaries from docs/wip/build-pingpong-binaries.sh). ~5 min on an H100:
#  1. test_gemm GroupedGemmGpu.* (every grouped tactic, ragged groups) and memcheck of the ragged test;
#  2. bench moe at T = 4096 (W4A16, eager us, reduced-variant checks on) with FC1/FC2 forced to the
#     cooperative 128x128 (5), the ping-pong 128x128 (14; 15 = two wgmma batches in flight), the
#     ping-pong 64x144 (17), and the default (128x144 = 11 / 256x128); then FC2 alone on 14. Every CSV goes to $OUT; table last.
set -u
S=gpu-bin/pp; L=$OUT
for b in head pp; do gunzip -c $S/fp4kit_$b.gz > /tmp/fp4kit_$b; chmod +x /tmp/fp4kit_$b; done
gunzip -c $S/test_gemm_pp.gz > /tmp/test_gemm_pp; chmod +x /tmp/test_gemm_pp
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 200 /tmp/test_gemm_pp --gtest_filter='GroupedGemmGpu.*' > $L/test_grouped.log 2>&1; echo "test_gemm GroupedGemmGpu.* rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/test_grouped.log | tr '\n' ' ') t=$SECONDS"
grep -E "Failure|FAILED  \]" -A4 $L/test_grouped.log | head -20
timeout 150 compute-sanitizer --tool memcheck /tmp/test_gemm_pp --gtest_filter='GroupedGemmGpu.RaggedGroupsEveryTactic' > $L/memcheck.log 2>&1; echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' $L/memcheck.log) t=$SECONDS"
P=qwen3.6-35b-a3b,fi-256,qwen3-30b-a3b,deepseek-v3
run() {  # name binary flags...
  local n=$1 b=$2; shift 2
  timeout 100 /tmp/fp4kit_$b bench moe --preset $P --t 4096 --mode w4a16 --no-baseline --check-max-t 0 "$@" --csv --output $L/pp_${n}.csv > $L/pp_${n}.log 2>&1
  echo "$n rc=$? ok=$(grep -c ',ok,' $L/pp_${n}.csv) $(grep -E 'RESULT|checks:' $L/pp_${n}.log | tr '\n' ' ') t=$SECONDS"
}
for rep in 1 2 3; do
  run default_$rep head
  run coop_$rep pp --fc1-tactic 5 --fc2-tactic 5
  run pp_$rep pp --fc1-tactic 14 --fc2-tactic 14
  run pptwo_$rep pp --fc1-tactic 15 --fc2-tactic 15
  run pp144_$rep pp --fc1-tactic 17 --fc2-tactic 17
  run fc2pp_$rep pp --fc2-tactic 14
done
python3 - "$L" <<'PY'
import csv,glob,sys
res={}
for f in glob.glob(sys.argv[1]+'/pp_*_?.csv'):
    n=f.split('/')[-1][3:-6]
    for r in csv.reader(open(f)):
        if len(r)>14 and r[7].startswith('fp4kit') and r[8] != '-':
            res.setdefault(r[0],{}).setdefault(n,[]).append(float(r[8]))
names=['default','coop','pp','pptwo','pp144','fc2pp']
print('preset T=4096 | eager us (min of 3): '+' '.join(names)+' | pp/coop pptwo/coop pp144/default fc2pp/default')
for k in sorted(res):
    v=res[k]; m=[min(v.get(n,[0])) for n in names]
    print(k[:16],'|',*m,'|',*[round(m[i]/m[j],3) if m[j] else '-' for i,j in ((2,1),(3,1),(4,0),(5,0))])
PY
