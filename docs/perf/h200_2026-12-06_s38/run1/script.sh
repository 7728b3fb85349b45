#!/usr/bin/env bash
# Session 38 run 1: coalesced workspace partials of the wgmma split-K / stream-K fix-up ([kPer/4][256
# threads] float4s instead of per-thread rows of kPer floats; exp binary fp4kit_skc) against HEAD 35bbcd1.
# (1) test_gemm of skc: the all-tactic W4A16 test (stream-K tactics included) and the workspace split-K
# path forced; (2) o / down M = 64, 256 with the workspace split-K forced (FP4KIT_NO_CLUSTER_SPLITK=1); (3) the stream-K tactics (29 = 128x256, 27 = 128x128 s4) against the
# data-parallel tiles (10, 9) at qkv / gate_up M = 192, 512, 1024: session 24 measured them at 1.2-3.4x.
set -u
D=gpu-bin/s38; R=$OUT/r1; mkdir -p $R build-carry
tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry || exit 3
for f in fp4kit_skc test_gemm_skc; do xz -dc $D/$f.xz > /tmp/$f && chmod +x /tmp/$f || exit 3; done
B=build-carry/tools/fp4kit; X=/tmp/fp4kit_skc
S=$R/summary.txt
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,driver_version --format=csv > $S
timeout 100 /tmp/test_gemm_skc --gtest_filter='GemmGpu.W4A16LargeMRaggedAllTactics' > $R/test_gemm_skc.txt 2>&1
echo "test_gemm_skc rc=$? t=$SECONDS" >> $S; tail -3 $R/test_gemm_skc.txt >> $S
FP4KIT_NO_CLUSTER_SPLITK=1 timeout 60 /tmp/test_gemm_skc --gtest_filter='GemmGpu.TwoWayClusterSplitRagged' > $R/test_gemm_skc_ws.txt 2>&1
echo "test_gemm_skc workspace split-K rc=$? t=$SECONDS" >> $S; tail -3 $R/test_gemm_skc_ws.txt >> $S
gb() {  # gb NAME BIN TACTIC SHAPES MS MODE
  timeout 60 $2 bench gemm --shapes $4 --m $5 --mode $6 --tactic $3 --no-baseline --no-check --graph --pdl --target-ms 20 \
    --csv --output $R/g_$1.csv > /dev/null 2> $R/g_$1.err
  echo "g_$1 rc=$? t=$SECONDS" >> $S
}
export FP4KIT_NO_CLUSTER_SPLITK=1  # the workspace split-K path forced (the auto tiles split K in clusters here)
gb ws_head $B auto llama8b.o,llama8b.down 64,256 w4a16
gb ws_skc $X auto llama8b.o,llama8b.down 64,256 w4a16
unset FP4KIT_NO_CLUSTER_SPLITK
gb auto $B auto llama8b.qkv,llama8b.gate_up 192,256,384,512,1024 w4a16
gb dp10 $B 10 llama8b.qkv,llama8b.gate_up 192,256,384,512,1024 w4a16
for t in 29 27 28; do
  gb head_sk$t $B $t llama8b.qkv,llama8b.gate_up 192,256,384,512,1024 w4a16
  gb skc_sk$t $X $t llama8b.qkv,llama8b.gate_up 192,256,384,512,1024 w4a16
done
cat $S
python3 - $R <<'PY'
import csv, glob, os, sys
R = sys.argv[1]
for f in sorted(glob.glob(R + "/g_*.csv")):
    rows = list(csv.DictReader(l for l in open(f) if not l.startswith("#")))
    print(os.path.basename(f)[:-4], " ".join(f"{r['shape'].split('.')[-1]}/{r['impl'][7:]}/{r['M']}:{r.get('graph_us') or r['us']}" for r in rows if r['impl'].startswith('fp4kit')))
PY
tar -C $OUT -czf $OUT/run1.tgz r1 && rm -rf $R
