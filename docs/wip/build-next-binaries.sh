#!/usr/bin/env bash
# Rebuilds gpu-bin/next/ (the binaries docs/wip/next-gpu-run.sh, a.k.a. gpu-bin/run146.sh, carries) from a
# clean checkout: HEAD, and HEAD plus each of the session-10 patches. BUILD_DIR: a configured build folder
# (scripts/test.sh makes one). Leaves the working tree clean and the build folder at HEAD.
set -eu
B=${BUILD_DIR:-build-lead}; N=gpu-bin/next
git diff --quiet -- src || { echo "src has local changes"; exit 1; }
mkdir -p $N
ninja -C $B tools/fp4kit tests/test_moe > /dev/null && gzip -1 -c $B/tools/fp4kit > $N/fp4kit_head.gz
for p in probe no-gather route-in-kernel; do
  git apply docs/wip/fused-decode-$p.patch
  ninja -C $B tools/fp4kit tests/test_moe > /dev/null
  name=$p; [ $p = route-in-kernel ] && name=route
  gzip -1 -c $B/tools/fp4kit > $N/fp4kit_$name.gz
  [ $p = no-gather ] && gzip -1 -c $B/tests/test_moe > $N/test_moe_no-gather.gz
  git checkout -- src
done
ninja -C $B > /dev/null
cp docs/wip/next-gpu-run.sh gpu-bin/run146.sh
ls -la $N
