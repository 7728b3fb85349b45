#!/usr/bin/env bash
# Session 38 run 2 (same warm machine as run 1): with the coalesced partials (skc), the workspace split-K
# is cheaper; do one-pass token tiles with 4-way workspace splits now beat the two-pass tiles with 2-way
# cluster splits on the 4096-row layers (o, down)? Every tactic of skc at M = 48..256 (W4A16), auto of
# HEAD and skc beside.
set -u
D=gpu-bin/s38; R=$OUT/r2; mkdir -p $R
for f in fp4kit_skc; do [ -x /tmp/$f ] || { xz -dc $D/$f.xz > /tmp/$f && chmod +x /tmp/$f; } || exit 3; done
[ -x build-carry/tools/fp4kit ] || tar -xJf build-carry/fp4kit-binaries.tar.xz -C build-carry || exit 3
B=build-carry/tools/fp4kit; X=/tmp/fp4kit_skc; S=$R/summary.txt
gb() {  # gb NAME BIN TACTIC SHAPES MS MODE
  timeout 120 $2 bench gemm --shapes $4 --m $5 --mode $6 --tactic $3 --no-baseline --no-check --graph --pdl --target-ms 20 \
    --csv --output $R/g_$1.csv > /dev/null 2> $R/g_$1.err
  echo "g_$1 rc=$? t=$SECONDS" >> $S
}
gb auto_head $B auto llama8b.o,llama8b.down 48,64,96,128,192,256 both
gb auto_skc $X auto llama8b.o,llama8b.down 48,64,96,128,192,256 both
gb all_skc $X all llama8b.o,llama8b.down 48,64,96,128,192,256 w4a16
gb auto_head2 $B auto llama8b.o,llama8b.down 48,64,96,128,192,256 both
cat $S
python3 - $R <<'PY'
import csv, glob, os, sys
from collections import defaultdict
R = sys.argv[1]
def rows(f): return list(csv.DictReader(l for l in open(f) if not l.startswith("#")))
def t(r): return float(r['graph_us']) if r.get('graph_us') not in (None, '', '-') else float(r['us'])
best = defaultdict(list)
for r in rows(R + "/g_all_skc.csv"):
    if r['impl'].startswith('fp4kit') and not r['impl'].endswith('.best'):
        best[(r['shape'], r['M'])].append((t(r), r['tactic']))
auto = {}
for name in ("auto_head", "auto_skc", "auto_head2"):
    for r in rows(R + f"/g_{name}.csv"):
        if r['impl'].startswith('fp4kit') and not r['impl'].endswith('.best'):
            auto[(name, r['shape'], r['impl'], r['M'])] = (t(r), r['tactic'])
for k in sorted(best, key=lambda k: (k[0], int(k[1]))):
    b = sorted(best[k])[:3]
    h = auto.get(("auto_head", k[0], "fp4kit.w4a16", k[1])); h2 = auto.get(("auto_head2", k[0], "fp4kit.w4a16", k[1])); s = auto.get(("auto_skc", k[0], "fp4kit.w4a16", k[1]))
    print(k[0], k[1], "head", h, h2, "skc", s, "best3", b)
for k in sorted(auto):
    if k[2] == "fp4kit.w4a4" and k[0] != "auto_head2": print(k, auto[k])
PY
tar -C $OUT -czf $OUT/run2.tgz r2 && rm -rf $R
