#!/usr/bin/env bash
# Session 29 (prepared, not run): (1) test_gemm of a build with docs/wip/tests-shared-device-buffer.patch
# (the tests' DeviceBuffer from tests/common/device_buffer.h); (2) ncu kernel times of the per-entry path at fi-256 T = 4, W4A16 vs W4A4 (the one
# #7 a miss), eager calls, serialized by ncu; (3) the early-trigger A/B (below).
set -u; R=$OUT/r3; mkdir -p $R
tar -xzf build-carry/fp4kit-binaries.tar.gz -C build-carry
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
timeout 90 build-carry/tests/test_gemm --gtest_brief=1 > $R/test_gemm.log 2>&1; echo "test_gemm rc=$?"; grep -E "PASSED|FAILED|SKIPPED|Failure" $R/test_gemm.log | head -8
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1); echo "ncu: $NCU"
for mode in w4a16 w4a4; do
  timeout 150 $NCU --clock-control none --metrics gpu__time_duration.sum --csv \
    build-carry/tools/fp4kit bench moe --preset fi-256 --t 4 --mode $mode --no-baseline --no-check --warmup 2 --reps 4 > $R/ncu_$mode.csv 2> $R/ncu_$mode.err
  echo "ncu $mode rc=$?"
  python3 - $R/ncu_$mode.csv <<'PY'
import csv, sys, collections, statistics
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
hdr = rows[0]; ki = hdr.index("Kernel Name"); vi = hdr.index("Metric Value")
t = collections.defaultdict(list)
for r in rows[1:]:
    t[r[ki].split("(")[0].split("<")[0][-40:]].append(float(r[vi].replace(",", "")))
ui = hdr.index("Metric Unit") if "Metric Unit" in hdr else None
print("  unit:", rows[1][ui] if ui is not None and len(rows) > 1 else "?")
for k, v in t.items(): print(f"  {k:42s} n={len(v):3d} median {statistics.median(v):10.1f}")
PY
done
# (3) with docs/wip/per-entry-stage-early-trigger.patch in the build: the per-entry W4A4 points with
# the staging kernel in front, FP4KIT_EXP_STAGE_EARLY_TRIGGER 0 / 1 alternated (without the patch both
# arms are HEAD).
mkdir -p $R/et
M="bench moe --preset all --t 1,2,4 --mode w4a4 --path per-entry --graph --pdl --no-baseline --no-check --target-ms 30 --csv"
for rep in 1 2 3; do
  for v in 0 1; do
    FP4KIT_EXP_STAGE_EARLY_TRIGGER=$v timeout 90 build-carry/tools/fp4kit $M --output $R/et/e${v}_r$rep.csv >/dev/null 2>&1 || echo "early-trigger $v rep $rep rc=$?"
  done
done
python3 scripts/ab_table.py --base e0 $R/et/e*_r*.csv | tee $R/et_ab.txt
tar -C $OUT -czf $OUT/r3.tgz r3; rm -rf $R
