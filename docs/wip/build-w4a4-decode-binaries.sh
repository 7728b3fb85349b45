#!/usr/bin/env bash
# Builds gpu-bin/w4a4dec/ for docs/wip/w4a4-decode-gpu-run.sh: fp4kit of the clean tree (head), fp4kit +
# test_gemm with docs/wip/w4a4-decode-e2m1x8.patch (e2), and fp4kit + test_gemm with
# docs/wip/w4a4-stage-per-warp-slice-e2m1x8.patch (slice). BUILD_DIR: a configured build folder
# (default build). Leaves the tree clean and the build folder at HEAD. ~7 min on 2 cores; ~30 MB with xz (the carry limit is 64 MiB with the tree).
set -eu
B=${BUILD_DIR:-build}; N=gpu-bin/w4a4dec
git diff --quiet -- src tests || { echo "src has local changes"; exit 1; }
mkdir -p $N
ninja -C $B tools/fp4kit > /dev/null && xz -6 -T2 -c $B/tools/fp4kit > $N/fp4kit_head.xz
for v in e2:w4a4-decode-e2m1x8 slice:w4a4-stage-per-warp-slice-e2m1x8; do
  name=${v%%:*}; patch=docs/wip/${v#*:}.patch
  git apply "$patch"
  ninja -C $B tools/fp4kit tests/test_gemm > /dev/null
  xz -6 -T2 -c $B/tools/fp4kit > $N/fp4kit_$name.xz
  xz -6 -T2 -c $B/tests/test_gemm > $N/test_gemm_$name.xz
  git apply -R "$patch"
done
ninja -C $B > /dev/null
cp docs/wip/w4a4-decode-gpu-run.sh gpu-bin/
ls -la $N
