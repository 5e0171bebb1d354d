#!/usr/bin/env python3
"""Where two runs of ptx_random.c on ptx_random.py's programs differ (their RAW.bin files, a
GPU's and the simulator's): for each program, its first instruction whose result differs for
some thread, with the operands that thread gave it (from the inputs and the results before it,
as the first run computed them). Prints a count by instruction, then each case.
Usage: ptx_random_compare.py DIR A.bin B.bin [A_NAME B_NAME]   (DIR holds programs.json, in.bin)
"""
import json
import struct
import sys
from collections import Counter


def main():
    d, a_path, b_path = sys.argv[1:4]
    names = sys.argv[4:6] if len(sys.argv) >= 6 else ["a", "b"]
    meta = json.load(open(f"{d}/programs.json"))
    threads, insts = meta["threads"], meta["instructions"]
    raw_in = open(f"{d}/in.bin", "rb").read()
    a, b = open(a_path, "rb").read(), open(b_path, "rb").read()
    per = threads * insts * 8
    assert len(a) == len(b) == per * len(meta["programs"]), (len(a), len(b))
    cases, by_op = [], Counter()
    for i, prog in enumerate(meta["programs"]):
        wa = struct.unpack_from(f"<{threads * insts}Q", a, i * per)
        wb = struct.unpack_from(f"<{threads * insts}Q", b, i * per)
        if wa == wb:
            continue
        if not any(wa):
            cases.append((i, None, f"{names[0]} wrote nothing (not loaded?)"))
            by_op["(not loaded)"] += 1
            continue
        for t in range(threads):
            regs = initial(raw_in, t)
            for k in range(8):
                regs[f"%h{k}"] = regs[f"%r{k}"] & 0xFFFF
            for j, inst in enumerate(prog):
                x, y = wa[j * threads + t], wb[j * threads + t]
                if x != y:
                    ops = ", ".join(f"{r}={show(regs.get(r), r)}" for r in inst["srcs"])
                    cases.append((i, t, f"{inst['text']}  [{ops}]  {names[0]} {show(x, inst['d'])}  {names[1]} {show(y, inst['d'])}"))
                    by_op[inst["text"].split()[0]] += 1
                    break
                regs[inst["d"]] = x
                for r in inst["also"]:
                    regs[r] = None
            else:
                continue
            break
    total = len(meta["programs"])
    print(f"{total} programs, {len(cases)} differ")
    for op, n in by_op.most_common():
        print(f"  {n:5d}  {op}")
    for i, t, text in cases:
        print(f"program {i} thread {t}: {text}")


def initial(raw, t):
    base = t * 192
    regs = {}
    for k in range(8):
        regs[f"%r{k}"] = struct.unpack_from("<I", raw, base + 4 * k)[0]
        regs[f"%rd{k}"] = struct.unpack_from("<Q", raw, base + 32 + 8 * k)[0]
        regs[f"%f{k}"] = struct.unpack_from("<I", raw, base + 96 + 4 * k)[0]
        regs[f"%fd{k}"] = struct.unpack_from("<Q", raw, base + 128 + 8 * k)[0]
    return regs


def show(v, reg):
    if v is None:
        return "?"
    if reg.startswith("%h"):
        return f"{v:#06x}"
    if reg.startswith("%fd"):
        return f"{v:#018x}({struct.unpack('<d', struct.pack('<Q', v))[0]!r})"
    if reg.startswith("%f"):
        return f"{v:#010x}({struct.unpack('<f', struct.pack('<I', v & 0xffffffff))[0]!r})"
    return f"{v:#x}"


if __name__ == "__main__":
    main()
