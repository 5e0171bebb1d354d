#!/usr/bin/env python3
"""Random PTX programs of exact instructions, for running on a GPU and on the simulator side by
side (ptx_random.c runs them; ptx_random_compare.py finds where two runs differ).

Each program is one kernel of INSTRUCTIONS instructions over registers that each thread loads
from its inputs (in.bin: values at the edges of each type). Every instruction's destination is
stored at once, so each result can be compared, and a later instruction reads earlier results.
Only instructions whose result PTX defines exactly are drawn (no .approx): a GPU and the
simulator must agree bit for bit on every one.

With --halves, the programs are of 16-bit floats instead (`f16`, `bf16` and their pairs), whose
32-bit inputs then hold two halves each.

Usage: ptx_random.py SEED PROGRAMS OUT_DIR [--halves]
       (writes programs.ptx, programs.json and in.bin)
"""
import json
import random
import struct
import sys

THREADS = 32
INSTRUCTIONS = 32
REGS = 8  # of each class: %r (32-bit), %rd (64-bit), %f (f32), %fd (f64)
ROUND_F = [".rn", ".rz", ".rm", ".rp"]
ROUND_I = [".rni", ".rzi", ".rmi", ".rpi"]

U32 = [0, 1, 2, 3, 7, 8, 15, 16, 31, 32, 33, 63, 64, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF,
       0x10000, 0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFF, 0xFFFFFFFE, 0x12345678, 0x55555555,
       0xAAAAAAAA, 0xDEADBEEF, 1000000007, 0x0F0F0F0F]
U64 = [0, 1, 2, 63, 64, 65, 0xFFFFFFFF, 0x100000000, 0x7FFFFFFFFFFFFFFF, 0x8000000000000000,
       0xFFFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFE, 0x123456789ABCDEF0, 0x5555555555555555,
       0x8000000080000000, 0x00000000FFFFFFFF, 0xFFFFFFFF00000000, 12345678901234567, 0x7FF8000000000000,
       0x3FF0000000000000, 0x0000000000000100, 0xFFFFFFFF80000000, 0x0010000000000000, 31, 32, 33,
       0x8000000000000001, 0xDEADBEEFCAFEBABE, 1 << 53, (1 << 53) + 1, 0xFFF0000000000000, 7]


def f32(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f64(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


F32 = [f32(v) for v in [0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, 3.0, 0.1, -0.1, 3.14159265, 1e10, -1e-10,
                        2.0**31, 2.0**32, -(2.0**31), 2.0**63, 2.0**64, 4294967295.0, 16777217.0,
                        1e30, -1e30, 65504.0, 0.3333333]] + [
    0x80000000, 0x00000001, 0x00400000, 0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000,
    0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001, 0x3F7FFFFF, 0x4B000001]
F64 = [f64(v) for v in [0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, 3.0, 0.1, -0.1, 3.141592653589793, 1e300,
                        -1e-300, 2.0**31, 2.0**32, -(2.0**31), 2.0**63, 2.0**64, 4294967295.5, 1e16,
                        2.0**53 + 1, 1e-40, 3.4028235677973366e38, 3.4028236e38, 1.401298464324817e-45,
                        7.006492321624085e-46, 1.1754942e-38]] + [
    0x8000000000000000, 0x0000000000000001, 0x000FFFFFFFFFFFFF, 0x7FEFFFFFFFFFFFFF, 0x7FF0000000000000,
    0xFFF0000000000000, 0x7FF8000000000000, 0xFFF8000000000001, 0x7FF0000000000001, 0x3FEFFFFFFFFFFFFF]

# 16-bit floats' edge values as bits, f16's and bf16's: zeros, subnormals, the smallest normal,
# ones, the largest finite, infinities, quiet and signalling NaNs.
HALF = [0x0000, 0x8000, 0x0001, 0x03FF, 0x0400, 0x3C00, 0xBC00, 0x3555, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00,
        0x7E00, 0x7C01, 0xFE01, 0x3800, 0x3E00, 0x4100, 0x0200, 0x3F80, 0xBF80, 0x7F80, 0xFF80, 0x7FC0,
        0x7F81, 0x007F, 0x0080, 0x7F7F, 0x3F00, 0x4049, 0x3DCD, 0xC2F7]

ITYPES32 = [".u32", ".s32"]
ITYPES64 = [".u64", ".s64"]


class Gen:
    def __init__(self, rng, halves=False):
        self.rng = rng
        self.halves = halves

    def pick(self, xs):
        return self.rng.choice(xs)

    def reg(self, cls):
        return f"%{cls}{self.rng.randrange(REGS)}"

    def ints(self):
        """An integer type and its register class."""
        t = self.pick(ITYPES32 + ITYPES64)
        return t, ("r" if "32" in t else "rd")

    def inst(self):
        """One instruction: (text, destination register, its class, the registers it reads)."""
        if self.halves:
            return self.half()
        r = self.rng
        kind = r.randrange(24)
        if kind == 0:
            t, c = self.ints()
            op = self.pick(["add", "sub", "min", "max", "mul.lo", "mul.hi", "div", "rem"])
            return self.binary(f"{op}{t}", c, c, c)
        if kind == 1:
            op = self.pick(["add.sat.s32", "sub.sat.s32", "mul24.lo.u32", "mul24.hi.u32", "mul24.lo.s32",
                            "mul24.hi.s32"])
            return self.binary(op, "r", "r", "r")
        if kind == 2:
            t, c = self.ints()
            op = self.pick(["mad.lo", "mad.hi", "sad"])
            return self.ternary(f"{op}{t}", c, c, c, c)
        if kind == 3:
            t = self.pick([".u32", ".s32"])
            op = self.pick(["mul.wide", "mad.wide"])
            if op == "mul.wide":
                return self.binary(f"{op}{t}", "rd", "r", "r")
            return self.ternary(f"{op}{t}", "rd", "r", "r", "rd")
        if kind == 4:
            t, c = self.pick([(".s32", "r"), (".s64", "rd")])
            op = self.pick(["abs", "neg"])
            return self.unary(f"{op}{t}", c, c)
        if kind == 5:
            b, c = self.pick([(".b32", "r"), (".b64", "rd")])
            op = self.pick(["and", "or", "xor"])
            if r.randrange(3) == 0:
                return self.unary(self.pick(["not", "cnot"]) + b, c, c)
            return self.binary(op + b, c, c, c)
        if kind == 6:
            # shl takes bit types only; shr of a signed type is arithmetic.
            t, c = self.pick([(".b32", "r"), (".b64", "rd"), (".u32", "r"), (".s32", "r"), (".u64", "rd"),
                              (".s64", "rd")])
            op = self.pick(["shl", "shr"]) if t.startswith(".b") else "shr"
            return self.binary(f"{op}{t}", c, c, "r")
        if kind == 7:
            t, c = self.pick([(".b32", "r"), (".b64", "rd")])
            op = self.pick(["popc", "clz", "brev"])
            return self.unary(f"{op}{t}", "r" if op != "brev" else c, c)
        if kind == 8:
            t, c = self.pick([(".u32", "r"), (".s32", "r"), (".u64", "rd"), (".s64", "rd")])
            return self.ternary(f"bfe{t}", c, c, "r", "r")
        if kind == 9:
            t, c = self.pick([(".b32", "r"), (".b64", "rd")])
            d = self.reg(c)
            a, b, p, n = self.reg(c), self.reg(c), self.reg("r"), self.reg("r")
            return f"bfi{t} {d}, {a}, {b}, {p}, {n};", d, c, [a, b, p, n]
        if kind == 10:
            mode = self.pick(["", ".f4e", ".b4e", ".rc8", ".ecl", ".ecr", ".rc16"])
            return self.ternary(f"prmt.b32{mode}", "r", "r", "r", "r")
        if kind == 11:
            return self.ternary(f"shf.{self.pick(['l', 'r'])}.{self.pick(['wrap', 'clamp'])}.b32", "r", "r", "r", "r")
        if kind == 12:
            t, c = self.pick([(".u32", "r"), (".s32", "r"), (".u64", "rd"), (".s64", "rd")])
            return self.unary(f"bfind{self.pick(['', '.shiftamt'])}{t}", "r", c)
        if kind == 13:
            op = self.pick(["dp4a", "dp2a.lo", "dp2a.hi"])
            return self.ternary(f"{op}{self.pick(ITYPES32)}{self.pick(ITYPES32)}", "r", "r", "r", "r")
        if kind == 14:
            # Integer conversions, with saturation where they narrow.
            dt, dc = self.ints()
            st = self.pick([".u8", ".s8", ".u16", ".s16", ".u32", ".s32", ".u64", ".s64"])
            sc = "rd" if "64" in st else "r"
            sat = self.pick(["", ".sat"])
            return self.unary(f"cvt{sat}{dt}{st}", dc, sc)
        if kind == 15:
            # Float arithmetic, every rounding.
            t, c = self.floats()
            ftz = self.ftz(t)
            sat = self.pick(["", ".sat"]) if t == ".f32" else ""
            op = self.pick(["add", "sub", "mul", "fma", "div", "sqrt", "rcp"])
            rnd = self.pick(ROUND_F)
            if op == "fma":
                return self.ternary(f"fma{rnd}{ftz}{sat}{t}", c, c, c, c)
            if op in ("sqrt", "rcp"):
                return self.unary(f"{op}{rnd}{ftz}{t}", c, c)
            if op == "div":
                return self.binary(f"div{rnd}{ftz}{t}", c, c, c)
            return self.binary(f"{op}{rnd}{ftz}{sat}{t}", c, c, c)
        if kind == 16:
            t, c = self.floats()
            ftz = self.ftz(t)
            op = self.pick(["min", "max"])
            nan = self.pick(["", ".NaN"]) if t == ".f32" else ""
            if r.randrange(3) == 0:
                return self.unary(f"{self.pick(['abs', 'neg'])}{ftz}{t}", c, c)
            if r.randrange(4) == 0:
                return self.binary(f"copysign{t}", c, c, c)
            return self.binary(f"{op}{ftz}{nan}{t}", c, c, c)
        if kind == 17:
            # Float to integer, every rounding, saturating as cvt does.
            ft, fc = self.floats()
            dt, dc = self.ints()
            return self.unary(f"cvt{self.pick(ROUND_I)}{self.ftz(ft)}{dt}{ft}", dc, fc)
        if kind == 18:
            # Integer to float.
            ft, fc = self.floats()
            st, sc = self.ints()
            return self.unary(f"cvt{self.pick(ROUND_F)}{ft}{st}", fc, sc)
        if kind == 19:
            # Between floats, and to an integral float.
            if r.randrange(2):
                return self.unary(f"cvt{self.pick(ROUND_F)}{self.pick(['', '.ftz'])}{self.pick(['', '.sat'])}.f32.f64", "f", "fd")
            if r.randrange(2):
                return self.unary(f"cvt{self.pick(['', '.ftz'])}{self.pick(['', '.sat'])}.f64.f32", "fd", "f")
            t, c = self.floats()
            return self.unary(f"cvt{self.pick(ROUND_I)}{self.ftz(t)}{t}{t}", c, c)
        if kind == 20:
            # Comparisons into a select.
            if r.randrange(2):
                t, c = self.floats()
                cmp = self.pick(["eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"])
                head = f"setp.{cmp}{self.ftz(t)}{t}"
            else:
                t, c = self.ints()
                cmp = self.pick(["eq", "ne", "lt", "le", "gt", "ge"] + (["lo", "ls", "hi", "hs"] if t[1] == "u" else []))
                head = f"setp.{cmp}{t}"
            a, b = self.reg(c), self.reg(c)
            d, x, y = self.reg("r"), self.reg("r"), self.reg("r")
            p = f"%p{r.randrange(4)}"
            return f"{head} {p}, {a}, {b};\n\tselp.b32 {d}, {x}, {y}, {p};", d, "r", [a, b, x, y]
        if kind == 21:
            t, c = self.floats()
            test = self.pick(["finite", "infinite", "number", "notanumber", "normal", "subnormal"])
            a, d, x, y = self.reg(c), self.reg("r"), self.reg("r"), self.reg("r")
            p = f"%p{r.randrange(4)}"
            return f"testp.{test}{t} {p}, {a};\n\tselp.b32 {d}, {x}, {y}, {p};", d, "r", [a, x, y]
        if kind == 22:
            # slct: a or b by the sign of c.
            dt, dc = self.pick([(".b32", "r"), (".s32", "r"), (".u32", "r"), (".f32", "f")])
            ct, cc = self.pick([(".s32", "r"), (".f32", "f")])
            ftz = self.pick(["", ".ftz"]) if ct == ".f32" else ""
            return self.ternary(f"slct{ftz}{dt}{ct}", dc, dc, dc, cc)
        # A carry chain of two.
        t, c = self.pick([(".u32", "r"), (".u64", "rd")])
        op = self.pick(["add", "sub"])
        d, e = self.reg(c), self.reg(c)
        a, b, x, y = (self.reg(c) for _ in range(4))
        while e == d:
            e = self.reg(c)
        text = f"{op}.cc{t} {d}, {a}, {b};\n\t{op}c{t} {e}, {x}, {y};"
        return text, e, c, [a, b, x, y], d

    def half(self):
        """One instruction of 16-bit floats: a half in `%h`, a pair in `%r`."""
        r = self.rng
        kind = r.randrange(10)
        f16 = r.randrange(2) == 0
        pair = r.randrange(2) == 0
        t = (".f16" if f16 else ".bf16") + ("x2" if pair else "")
        c = "r" if pair else "h"
        mods = (self.pick(["", ".ftz"]) + self.pick(["", ".sat"])) if f16 else ""
        if kind == 0:
            op = self.pick(["add", "sub", "mul"])
            return self.binary(f"{op}.rn{mods}{t}", c, c, c)
        if kind == 1:
            relu = self.pick(["", ".relu"]) if ".sat" not in mods else ""
            return self.ternary(f"fma.rn{mods}{relu}{t}", c, c, c, c)
        if kind == 2:
            ftz = self.pick(["", ".ftz"]) if f16 else ""
            op = self.pick(["min", "max"])
            return self.binary(f"{op}{ftz}{self.pick(['', '.NaN'])}{t}", c, c, c)
        if kind == 3:
            ftz = self.pick(["", ".ftz"]) if f16 else ""
            return self.unary(f"{self.pick(['neg', 'abs'])}{ftz}{t}", c, c)
        if kind == 4:
            # To and from f32 and f64.
            h = ".f16" if f16 else ".bf16"
            if r.randrange(2):
                src, sc = self.pick([(".f32", "f"), (".f64", "fd")])
                return self.unary(f"cvt{self.pick(ROUND_F)}{h}{src}", "h", sc)
            dst, dc = self.pick([(".f32", "f"), (".f64", "fd")])
            return self.unary(f"cvt{dst}{h}", dc, "h")
        if kind == 5:
            # Two f32s into a pair.
            h = ".f16x2" if f16 else ".bf16x2"
            return self.binary(f"cvt.rn{self.pick(['', '.relu'])}{h}.f32", "r", "f", "f")
        if kind == 6:
            # To and from integers.
            h = ".f16" if f16 else ".bf16"
            it, ic = self.pick([(".s32", "r"), (".u32", "r"), (".s64", "rd"), (".u64", "rd"), (".s16", "h"),
                                (".u16", "h")])
            if r.randrange(2):
                return self.unary(f"cvt{self.pick(ROUND_I)}{it}{h}", ic, "h")
            return self.unary(f"cvt{self.pick(ROUND_F)}{h}{it}", "h", ic)
        if kind == 7:
            # Comparisons of halves into a select.
            h = ".f16" if f16 else ".bf16"
            ftz = self.pick(["", ".ftz"]) if f16 else ""
            cmp = self.pick(["eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"])
            a, b, d, x, y = self.reg("h"), self.reg("h"), self.reg("r"), self.reg("r"), self.reg("r")
            p = f"%p{r.randrange(4)}"
            return f"setp.{cmp}{ftz}{h} {p}, {a}, {b};\n\tselp.b32 {d}, {x}, {y}, {p};", d, "r", [a, b, x, y]
        if kind == 8:
            # Between f16 and bf16 through f32.
            a, f, d = self.reg("h"), self.reg("f"), self.reg("h")
            src, dst = (".f16", ".bf16") if f16 else (".bf16", ".f16")
            text = f"cvt.f32{src} {f}, {a};\n\tcvt{self.pick(ROUND_F)}{dst}.f32 {d}, {f};"
            return text, d, "h", [a], f
        # A pair's halves apart and together.
        a, lo, hi, d = self.reg("r"), self.reg("h"), self.reg("h"), self.reg("r")
        while hi == lo:
            hi = self.reg("h")
        return f"mov.b32 {{{lo}, {hi}}}, {a};\n\tmov.b32 {d}, {{{hi}, {lo}}};", d, "r", [a], lo, hi

    def floats(self):
        return self.pick([(".f32", "f"), (".f64", "fd")])

    def ftz(self, t):
        return self.pick(["", ".ftz"]) if t == ".f32" else ""

    def unary(self, op, dc, ac):
        d, a = self.reg(dc), self.reg(ac)
        return f"{op} {d}, {a};", d, dc, [a]

    def binary(self, op, dc, ac, bc):
        d, a, b = self.reg(dc), self.reg(ac), self.reg(bc)
        return f"{op} {d}, {a}, {b};", d, dc, [a, b]

    def ternary(self, op, dc, ac, bc, cc):
        d, a, b, c = self.reg(dc), self.reg(ac), self.reg(bc), self.reg(cc)
        return f"{op} {d}, {a}, {b}, {c};", d, dc, [a, b, c]


STORE = {"r": "b32", "rd": "b64", "f": "b32", "fd": "b64", "h": "b16"}


def program(rng, halves):
    g = Gen(rng, halves)
    lines = [".version 8.0", ".target sm_90", ".address_size 64",
             ".visible .entry k(.param .u64 in, .param .u64 out)", "{",
             f"\t.reg .b32 %r<{REGS}>;", f"\t.reg .b64 %rd<{REGS}>;", f"\t.reg .f32 %f<{REGS}>;",
             f"\t.reg .f64 %fd<{REGS}>;", "\t.reg .pred %p<4>;", "\t.reg .b64 %in, %out, %t;",
             "\t.reg .b32 %tx;",
             "\tld.param.u64 %in, [in];", "\tld.param.u64 %out, [out];", "\tmov.u32 %tx, %tid.x;",
             "\tmul.wide.u32 %t, %tx, 192;", "\tadd.s64 %in, %in, %t;",
             "\tmul.wide.u32 %t, %tx, 8;", "\tadd.s64 %out, %out, %t;"]
    for k in range(REGS):
        lines.append(f"\tld.global.u32 %r{k}, [%in+{4 * k}];")
        lines.append(f"\tld.global.u64 %rd{k}, [%in+{32 + 8 * k}];")
        lines.append(f"\tld.global.f32 %f{k}, [%in+{96 + 4 * k}];")
        lines.append(f"\tld.global.f64 %fd{k}, [%in+{128 + 8 * k}];")
    if halves:
        # Each half register starts as the low half of its 32-bit one.
        lines.insert(9, f"\t.reg .b16 %h<{REGS}>;")
        lines += [f"\tcvt.u16.u32 %h{k}, %r{k};" for k in range(REGS)]
    meta = []
    for j in range(INSTRUCTIONS):
        text, d, c, srcs, *also = g.inst()
        lines.append(f"\t{text}")
        lines.append(f"\tst.global.{STORE[c]} [%out+{j * THREADS * 8}], {d};")
        # `also`: a register it writes besides, whose value is not stored.
        meta.append({"text": text.replace("\n\t", " "), "d": d, "class": c, "srcs": srcs, "also": also})
    lines += ["\tret;", "}", ""]
    return "\n".join(lines), meta


def inputs(rng, halves):
    """Each thread's 8 u32 (with `halves`, two halves each), 8 u64, 8 f32, 8 f64, drawn from the
    edge values."""
    out = bytearray()
    for _ in range(THREADS):
        if halves:
            out += struct.pack("<8I", *(rng.choice(HALF) | rng.choice(HALF) << 16 for _ in range(REGS)))
        else:
            out += struct.pack("<8I", *(rng.choice(U32) for _ in range(REGS)))
        out += struct.pack("<8Q", *(rng.choice(U64) for _ in range(REGS)))
        out += struct.pack("<8I", *(rng.choice(F32) for _ in range(REGS)))
        out += struct.pack("<8Q", *(rng.choice(F64) for _ in range(REGS)))
    return bytes(out)


def main():
    seed, count, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    halves = "--halves" in sys.argv[4:]
    rng = random.Random(seed)
    texts, metas = [], []
    for _ in range(count):
        text, meta = program(rng, halves)
        texts.append(text)
        metas.append(meta)
    with open(f"{out}/programs.ptx", "w") as f:
        f.write("\0".join(texts))
    with open(f"{out}/programs.json", "w") as f:
        json.dump({"threads": THREADS, "instructions": INSTRUCTIONS, "halves": halves, "programs": metas}, f)
    with open(f"{out}/in.bin", "wb") as f:
        f.write(inputs(rng, halves))


if __name__ == "__main__":
    main()
