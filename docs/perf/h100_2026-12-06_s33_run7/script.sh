#!/usr/bin/env bash
# Session 33 run 7: store warps (only for K <= 2048, kStoreWarpsMaxKChunks) for the grouped BN = 128 wgmma tiles' epilogue copy (new) vs HEAD
# durations of one T = 4096 layer, MoE A/B at T = 256, 1024, 4096 (eager).
set -u; S=$(date +%s); R=$OUT/r7; mkdir -p $R; B=gpu-bin/s33r7
left() { echo $(( 560 - ($(date +%s) - S) )); }
for f in fp4kit_base fp4kit_new; do xz -dc $B/$f.xz > /tmp/$f; chmod +x /tmp/$f; done
mkdir -p /tmp/t && tar -xJf $B/tests.tar.xz -C /tmp/t
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
timeout 60 /tmp/t/tests/test_gemm --gtest_filter='*Grouped*' > $R/test_gemm.log 2>&1; echo "test_gemm grouped rc=$?"
timeout 150 /tmp/t/tests/test_moe > $R/test_moe.log 2>&1; echo "test_moe rc=$?"
grep -hE "^\[  (PASSED|FAILED)|FAILED  \]" $R/test_gemm.log $R/test_moe.log | head
timeout 90 compute-sanitizer --tool memcheck /tmp/t/tests/test_gemm --gtest_filter='GroupedGemmGpu.RaggedGroupsEveryTactic' > $R/memcheck.log 2>&1; echo "memcheck rc=$?"; tail -1 $R/memcheck.log
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
for p in fi-256 qwen3.6-35b-a3b qwen3-30b-a3b deepseek-v3; do for v in base new; do
  timeout 60 $NCU --clock-control none --kernel-name regex:wgmma_gemm_kernel --metrics gpu__time_duration.sum --csv \
    /tmp/fp4kit_$v bench moe --preset $p --t 4096 --mode w4a16 --no-baseline --no-check --no-reduced-check --warmup 1 --reps 1 \
    > $R/dur_${p}_$v.csv 2>&1 || echo "$p $v rc=$?"
  python3 -c "
import csv,sys
L=[l for l in open('$R/dur_${p}_$v.csv') if l.startswith('\"')]
d=[(int(x['ID']),float(x['Metric Value'].replace(',',''))) for x in csv.DictReader(L)]
print('$p $v FC1 %.1f FC2 %.1f us' % (d[-2][1]/1000, d[-1][1]/1000))"
done; done
echo "($(left) s left)"
mkdir -p $R/large $R/mid
LG="bench moe --preset deepseek-v3,fi-256,qwen3.6-35b-a3b,qwen3-30b-a3b --t 4096 --mode both --no-check --no-reduced-check --target-ms 200 --warmup-ms 100 --csv"
for rep in 1 2; do for v in base new; do
  [ $(left) -lt 60 ] && break
  timeout 60 /tmp/fp4kit_$v $LG --output $R/large/${v}_r$rep.csv > /dev/null 2>&1 || echo "$v $rep rc=$?"
done; echo "large rep $rep ($(left) s left)"; done
python3 scripts/ab_table.py --col us --base base $R/large/*_r*.csv > $R/large.txt 2>&1; cat $R/large.txt
MD="bench moe --preset deepseek-v3,qwen3.6-35b-a3b,fi-256,mixtral-8x7b --t 64,256,1024 --mode w4a16 --no-baseline --no-check --no-reduced-check --target-ms 50 --csv"
for rep in 1 2; do for v in base new; do
  [ $(left) -lt 30 ] && break
  timeout 40 /tmp/fp4kit_$v $MD --output $R/mid/${v}_r$rep.csv > /dev/null 2>&1 || echo "mid $v rc=$?"
done; done
python3 scripts/ab_table.py --col us --base base $R/mid/*_r*.csv > $R/mid.txt 2>&1; cat $R/mid.txt
cp $R/large.txt $R/mid.txt $OUT/; tar -C $OUT -czf $OUT/r7.tgz r7 && rm -rf $R
echo "total $(( $(date +%s) - S )) s"
