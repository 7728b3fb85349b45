#!/usr/bin/env python3
"""What a kernel does between its PDL wait and its first loads, from its SASS, without a GPU.

    python3 scripts/sass_wait_path.py OBJECT_OR_BINARY [OBJECT ...] [--kernel REGEX] [--min 0]

With programmatic dependent launch the instructions right after `griddepcontrol.wait` (SASS ACQBULK)
lie on the critical path between the previous kernel and this one: anything that needs no memory
written by the previous kernel belongs before the wait. For every function with an ACQBULK this
prints, per wait:
  * `to_load`: instructions from the wait to the first global load after it (LDG, LDGSTS, LD.E);
  * `slow`: long-latency instructions among them (MUFU, CALL: a division's slow path, I2F / F2I);
  * `chain`: whether that first load's result is used before the next global load is issued,
    i.e. two dependent memory latencies on the path (session 30: the per-entry staging kernel read
    the global scale, divided, then loaded x; H = 2048 presets 2.5-2.9 % faster once x came first).
ptxas places address arithmetic after the wait when only code after the wait uses it, whatever the
source order (docs/wip/README.md, session 30); a large `to_load` says where to look.

cuobjdump as in scripts/sass_loops.py (CUOBJDUMP, PATH, or the pinned wheels in .deps/cuobjdump).
"""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sass_loops import demangle, find_cuobjdump, functions, opcode  # noqa: E402

LOAD = re.compile(r"^(LDG|LDGSTS|LD)(\.|$)")
SLOW = re.compile(r"^(MUFU|CALL|I2F|F2I)(\.|$)")


def dest_regs(text):
    """Registers written by a load: R4 for LDG.E, R4..R7 for LDG.E.128 (the width suffix)."""
    body = re.sub(r"^@!?U?P\w+\s+", "", text)
    parts = body.split(None, 1)
    if len(parts) < 2:
        return set()
    m = re.match(r"R(\d+)", parts[1])
    if not m:
        return set()
    width = 4 if ".128" in parts[0] else 2 if ".64" in parts[0] else 1
    return {f"R{int(m.group(1)) + i}" for i in range(width)}


def reads(text, regs):
    """Whether an instruction reads any of regs (its operands after the destination)."""
    body = re.sub(r"^@!?U?P\w+\s+", "", text)
    parts = body.split(None, 1)
    if len(parts) < 2:
        return False
    srcs = parts[1].split(",", 1)[1] if "," in parts[1] else ""
    if opcode(body).startswith(("ST", "RED", "ATOM")):  # stores read their first operand too
        srcs = parts[1]
    return any(re.search(rf"\b{r}\b", srcs) for r in regs)


def wait_paths(ins):
    """[(wait address, instructions to the first load, slow ops, chain, first load text)]."""
    out = []
    for i, (addr, text) in enumerate(ins):
        if opcode(text) != "ACQBULK":
            continue
        first = next((j for j in range(i + 1, len(ins)) if LOAD.match(opcode(ins[j][1]))), None)
        if first is None:
            out.append((addr, None, 0, False, ""))
            continue
        slow = sum(1 for _, t in ins[i + 1:first] if SLOW.match(opcode(t)))
        regs = dest_regs(ins[first][1])
        chain = False
        for _, t in ins[first + 1:]:
            if LOAD.match(opcode(t)):
                break
            if reads(t, regs):
                chain = True
                break
        out.append((addr, first - i - 1, slow, chain, ins[first][1]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("objects", nargs="+")
    ap.add_argument("--kernel", default="", help="regex on the demangled (or mangled) name")
    ap.add_argument("--min", type=int, default=0, help="report waits with at least this many instructions to the load")
    a = ap.parse_args()
    exe, env = find_cuobjdump()
    pattern = re.compile(a.kernel)
    rows = []
    for obj in a.objects:
        run = subprocess.run([exe, "--dump-sass", obj], capture_output=True, text=True, env=env)
        if run.returncode != 0:
            sys.exit(f"sass_wait_path.py: cuobjdump failed on {obj}: {run.stderr.strip()}")
        funcs = functions(run.stdout)
        names = demangle(list(funcs))
        for mangled, ins in funcs.items():
            if a.kernel and not pattern.search(names[mangled]) and not pattern.search(mangled):
                continue
            for addr, dist, slow, chain, load in wait_paths(ins):
                if dist is None or dist >= a.min:
                    rows.append((dist if dist is not None else -1, slow, chain, names[mangled], addr, load))
    rows.sort(key=lambda r: -r[0])
    for dist, slow, chain, name, addr, load in rows:
        d = "none" if dist < 0 else str(dist)
        print(f"to_load {d:>4}  slow {slow:2d}  chain {'yes' if chain else 'no ':3s}  {name[:150]}  (wait 0x{addr:x}; {load[:40]})")
    if not rows:
        print("sass_wait_path.py: no wait found" + (f" in functions matching {a.kernel!r}" if a.kernel else ""))


if __name__ == "__main__":
    main()
