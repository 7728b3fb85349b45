#!/usr/bin/env bash
# Session 31 (prepared, not run: no device time left). The upper bound of per-row readiness flags for
# the per-entry W4A4 staging kernel (docs/MOE.md, way (1)): a DIAGNOSTIC build in which kernel A copies
# the staged rows without waiting for the staging grid (docs/wip/per-entry-no-stage-wait-bound.patch;
# the wait moves to the kernel's end, so the grids still complete in order). In a benchmark the
# previous replay's rows are there (x is the same each replay), so --no-check; the result is wrong by
# design and only its time counts. If fi-256 T = 4 W4A4 does not drop toward W4A16 (44.4 vs 45.6 us on
# the H100 of session 31 run 5), the flags are not worth building.
# Build: HEAD binary -> gpu-bin/s32a/fp4kit_base.xz; git apply docs/wip/per-entry-no-stage-wait-bound.patch;
#   ninja -C build tools/fp4kit; xz -T2 -c build/tools/fp4kit > gpu-bin/s32a/fp4kit_nowait.xz;
#   git apply -R docs/wip/per-entry-no-stage-wait-bound.patch; carry ["gpu-bin/s32a"] (~60 s of GPU).
set -u; R=$OUT/nowait; mkdir -p $R/moe; B=gpu-bin/s32a
for f in fp4kit_base fp4kit_nowait; do xz -dc $B/$f.xz > /tmp/$f; chmod +x /tmp/$f; done
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
MO="bench moe --preset fi-256,qwen3-30b-a3b,deepseek-v3,mixtral-8x7b --t 1,2,4 --mode both --graph --pdl --no-baseline --no-check --target-ms 20 --csv"
for rep in 1 2 3; do
  for v in base nowait; do timeout 60 /tmp/fp4kit_$v $MO --output $R/moe/${v}_r$rep.csv >/dev/null 2>&1 || echo "$v $rep rc=$?"; done
done
python3 scripts/ab_table.py --base base $R/moe/*_r*.csv > $R/moe.txt 2>&1; cat $R/moe.txt
tar -C $R -czf $R/raw.tgz moe && rm -rf $R/moe
