#!/usr/bin/env python3
"""A/B table from `fp4kit bench gemm|moe --csv` files of alternated runs.

    python3 scripts/ab_table.py [--col graph_us] [--base ARM] FILE [FILE ...]

Each FILE is named ARM_rREP.csv (e.g. old_r1.csv, new_r2.csv; any directory): the runs of one arm
(binary or setting) and repetition. For every point (shape or preset, M or T, impl) measured by every
arm, prints the median over repetitions of each arm, its ratio to the base arm (default: the first arm
in sorted order), the tactic or path of each arm where they differ, and the spread (max / min over
repetitions) of the base arm. Rows whose check column is not "ok" (or "-") are counted and listed.
Only fp4kit rows are compared (cuBLASLt rows are the same code in every arm).
"""
import argparse
import collections
import csv
import os
import re
import statistics
import sys


def read_rows(path):
    with open(path) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def read_provenance(path):
    """(device, source) from the CSV's header comments ("# device ...", "# fp4kit ... source HASH")."""
    device = source = ""
    with open(path) as f:
        for line in f:
            if not line.startswith("#"):
                break
            if line.startswith("# device "):
                device = line[len("# device "):].split(" sms=")[0].strip()
            m = re.search(r"\bsource (\S+)", line)
            if line.startswith("# fp4kit") and m:
                source = m.group(1)
    return device, source


def point_key(r):
    if "preset" in r:  # bench moe
        return (r["preset"], r.get("routing", ""), "T=" + r["T"], r["impl"])
    return (r["shape"], "", "M=" + r["M"], r["impl"])


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--col", default="graph_us", help="time column (default graph_us; us for eager)")
    ap.add_argument("--base", help="arm the others are divided by (default: first in sorted order)")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args(argv)

    times = collections.defaultdict(list)  # (point, arm) -> [us]
    label = {}                             # (point, arm) -> tactic / path
    bad = []
    arms = set()
    provenance = collections.defaultdict(set)  # arm -> {(device, source)}
    for path in a.files:
        m = re.match(r"(.+)_r(\d+)\.csv$", os.path.basename(path))
        if not m:
            sys.exit(f"ab_table: {path}: expected ARM_rREP.csv")
        arm = m.group(1)
        arms.add(arm)
        provenance[arm].add(read_provenance(path))
        for r in read_rows(path):
            if not r.get("impl", "").startswith("fp4kit") or r["impl"].endswith(".best"):
                continue
            try:
                us = float(r[a.col])
            except (KeyError, ValueError):
                continue
            k = point_key(r)
            times[(k, arm)].append(us)
            label[(k, arm)] = (r.get("tactic") or r.get("note") or "").split(" ")[0].rstrip(";")
            if r.get("check", "ok") not in ("ok", "-", ""):
                bad.append(f"{arm} {' '.join(x for x in k if x)}: check {r['check']}")
    arms = sorted(arms)
    base = a.base or arms[0]
    if base not in arms:
        sys.exit(f"ab_table: no files of arm {base!r} (arms: {', '.join(arms)})")
    others = [x for x in arms if x != base]
    points = sorted({k for (k, arm) in times if all((k, x) in times for x in arms)})
    # Files of one arm from different binaries, or arms from different GPUs, are not an A/B (e.g. stale
    # CSVs of an earlier run in the same directory).
    warnings = [f"arm {arm}: files from {len(p)} builds or devices: " + "; ".join(f"{d or '?'} {s or '?'}" for d, s in sorted(p))
                for arm, p in sorted(provenance.items()) if len(p) > 1]
    devices = {d for p in provenance.values() for d, _ in p}
    if len(devices) > 1:
        warnings.append("arms measured on different devices: " + ", ".join(sorted(d or "?" for d in devices)))
    for w in warnings:
        print(f"ab_table: warning: {w}", file=sys.stderr)
        print(f"# warning: {w}")
    print(f"# {a.col}, medians over repetitions; ratio = arm / {base}")
    head = f"{'point':<44} {base:>10}" + "".join(f" {x:>10} {'ratio':>6}" for x in others) + "  spread  tactic"
    print(head)
    for k in points:
        b = statistics.median(times[(k, base)])
        line = f"{' '.join(x for x in k if x):<44} {b:10.2f}"
        for x in others:
            v = statistics.median(times[(k, x)])
            line += f" {v:10.2f} {v / b:6.3f}"
        sp = max(times[(k, base)]) / min(times[(k, base)])
        tac = [label[(k, x)] for x in [base] + others]  # base first, as the columns
        line += f"  {sp:6.3f}  {tac[0] if len(set(tac)) == 1 else ' -> '.join(tac)}"
        print(line)
    print(f"# {len(points)} points; {len(bad)} rows with a failed check")
    for b in bad:
        print("  " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
