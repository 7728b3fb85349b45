#!/usr/bin/env bash
# Session 32 run 4: test_gemm of HEAD + the new grouped test case; the wgmma width micro; a longer
# DeepSeek-V3 T = 4096 A/B of the per-tile width loops (fit3) against HEAD.
set -u; R=$OUT/s32d; mkdir -p $R/moe; B=gpu-bin/s32d
mkdir -p /tmp/b && tar -xJf $B/bin.tar.xz -C /tmp/b
for f in fp4kit_base fp4kit_fit3; do xz -dc $B/$f.xz > /tmp/$f; chmod +x /tmp/$f; done
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
timeout 120 /tmp/b/tests/test_gemm > $R/test_gemm.log 2>&1; echo "test_gemm rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)" $R/test_gemm.log
timeout 90 /tmp/b/bench/fp4kit_micro_wgmma_width | tee $R/micro_width.txt
timeout 90 /tmp/b/bench/fp4kit_micro_wgmma_width | tee $R/micro_width_2.txt
MO="bench moe --preset deepseek-v3 --t 4096 --mode both --no-baseline --no-check --no-reduced-check --target-ms 300 --warmup-ms 150 --csv"
for rep in 1 2 3; do for v in base fit3; do timeout 60 /tmp/fp4kit_$v $MO --output $R/moe/${v}_r$rep.csv > /dev/null 2>&1 || echo "$v $rep rc=$?"; done; done
python3 scripts/ab_table.py --col us --base base $R/moe/*_r*.csv > $R/moe.txt 2>&1; cat $R/moe.txt
tar -C $R -czf $R/raw.tgz moe && rm -rf $R/moe
