#!/usr/bin/env bash
# Builds gpu-bin/pp/ for docs/wip/pingpong-gpu-run.sh: fp4kit and test_gemm with
# docs/wip/wgmma-pingpong.patch applied (grouped tactics 13-17: 128x64 pp, 128x128 pp, 128x128
# pp with two wgmma batches in flight, 64x128 pp, 64x144 pp), and fp4kit
# of the clean tree. BUILD_DIR: a configured build folder (scripts/test.sh makes one). Leaves the
# tree clean and the build folder at HEAD (the last step rebuilds it; ~2 min on 2 cores).
set -eu
B=${BUILD_DIR:-build-lead}; N=gpu-bin/pp
git diff --quiet -- src tests || { echo "src has local changes"; exit 1; }
mkdir -p $N
ninja -C $B tools/fp4kit > /dev/null && gzip -1 -c $B/tools/fp4kit > $N/fp4kit_head.gz
git apply docs/wip/wgmma-pingpong.patch
ninja -C $B tools/fp4kit tests/test_gemm > /dev/null
gzip -1 -c $B/tools/fp4kit > $N/fp4kit_pp.gz
gzip -1 -c $B/tests/test_gemm > $N/test_gemm_pp.gz
git apply -R docs/wip/wgmma-pingpong.patch
ninja -C $B > /dev/null
cp docs/wip/pingpong-gpu-run.sh gpu-bin/
ls -la $N
