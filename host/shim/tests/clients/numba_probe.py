"""numba-cuda kernels beyond numba_kernels.py, each printed as a hash of its output's bytes, so
that a GPU's run and the simulator's can be compared word for word: local arrays, block votes
(`syncthreads_count/and/or`), warp matches (`match_any_sync`, `match_all_sync`), atomics
(max, min, inc, dec, exchange, a compare-and-swap loop, float max, min and add), xoroshiro128+
random numbers, libdevice math in float32 and float64, and float16 arithmetic.

Some libdevice functions use the GPU's approximate instructions (`ex2.approx`, `rcp.approx`,
`rsqrt.approx`) inside; the simulator computes those exactly, so those outputs may differ from
a GPU's in the last bits.

Usage: python numba_probe.py [--save FILE.npz] [--against DIR]
  --save     write every output array to FILE.npz
  --against  compare with DIR/numba_probe.txt (a GPU's lines) and DIR/numba_probe_approx.npz
             (that GPU's outputs of the approximate functions): every other line must be the
             same, and each approximate output within 2 ulp of the GPU's, word for word.
             Exits 1 otherwise.
"""

import math
import sys
import warnings

import numpy as np
from numba import cuda, float32, int32
from numba.cuda import fp16
from numba.cuda.random import create_xoroshiro128p_states, xoroshiro128p_uniform_float32, xoroshiro128p_normal_float64

warnings.simplefilter("ignore")

N = 4096


def fnv(a):
    h = 0xCBF29CE484222325
    for b in np.ascontiguousarray(a).view(np.uint8).tobytes():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


@cuda.jit
def local_sort(out):
    i = cuda.grid(1)
    v = cuda.local.array(8, dtype=int32)
    for k in range(8):
        v[k] = (i * 2654435761 + k * 40503) % 1000
    for k in range(1, 8):
        x = v[k]
        j = k - 1
        while j >= 0 and v[j] > x:
            v[j + 1] = v[j]
            j -= 1
        v[j + 1] = x
    for k in range(8):
        out[i * 8 + k] = v[k]


@cuda.jit
def votes(out):
    t = cuda.threadIdx.x
    b = cuda.blockIdx.x
    p = (t * 7 + b) % 5 == 0
    out[b * 3] = cuda.syncthreads_count(1 if p else 0)
    out[b * 3 + 1] = cuda.syncthreads_and(1 if t < 200 + b else 0)
    out[b * 3 + 2] = cuda.syncthreads_or(1 if t == b else 0)


@cuda.jit
def matches(out):
    i = cuda.grid(1)
    v = (i * 13) % 7
    out[i * 3] = cuda.match_any_sync(0xFFFFFFFF, v)
    m, p = cuda.match_all_sync(0xFFFFFFFF, i // 64)
    out[i * 3 + 1] = m
    out[i * 3 + 2] = p


@cuda.jit
def atomics(ints, counters, floats):
    i = cuda.grid(1)
    k = i % 16
    cuda.atomic.max(ints, k, (i * 37) % 1009)
    cuda.atomic.min(ints, 16 + k, (i * 53) % 1013)
    cuda.atomic.inc(counters, k, 1 << 20)
    cuda.atomic.dec(counters, 16 + k, 1 << 20)
    cuda.atomic.exch(ints, 64, 7)
    cuda.atomic.max(floats, k, float32(i) * float32(0.37))
    cuda.atomic.min(floats, 16 + k, float32(i) * float32(-0.61))
    cuda.atomic.add(floats, 32 + k, float32(0.5))
    # A sum by compare-and-swap: whatever the order, the total.
    old = ints[80 + k]
    while True:
        seen = cuda.atomic.cas(ints, 80 + k, old, old + i)
        if seen == old:
            break
        old = seen


@cuda.jit
def random_draws(states, out32, out64):
    i = cuda.grid(1)
    out32[i] = xoroshiro128p_uniform_float32(states, i)
    out64[i] = xoroshiro128p_normal_float64(states, i)


def unary(fn):
    @cuda.jit
    def kernel(x, out):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = fn(x[i])

    return kernel


@cuda.jit
def binary(x, y, out):
    # Compiled once for float32 and once for float64.
    i = cuda.grid(1)
    if i < x.size:
        out[i * 4] = math.pow(x[i], y[i])
        out[i * 4 + 1] = math.atan2(x[i], y[i])
        out[i * 4 + 2] = math.fmod(x[i], y[i])
        out[i * 4 + 3] = math.hypot(x[i], y[i])


@cuda.jit
def halves(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        x, y = a[i], b[i]
        out[i * 6] = fp16.hadd(x, y)
        out[i * 6 + 1] = fp16.hsub(x, y)
        out[i * 6 + 2] = fp16.hmul(x, y)
        out[i * 6 + 3] = fp16.hfma(x, y, x)
        out[i * 6 + 4] = fp16.hneg(x)
        out[i * 6 + 5] = fp16.habs(y)


FUNCTIONS = [
    ("sin", math.sin), ("cos", math.cos), ("tan", math.tan), ("exp", math.exp), ("log", math.log),
    ("log2", math.log2), ("log10", math.log10), ("sqrt", math.sqrt), ("tanh", math.tanh),
    ("erf", math.erf), ("atan", math.atan), ("asin", math.asin), ("expm1", math.expm1),
    ("log1p", math.log1p), ("floor", math.floor),
]


def run():
    lines, arrays = [], {}

    def add(name, arr):
        a = arr.copy_to_host() if hasattr(arr, "copy_to_host") else arr
        arrays[name] = a
        lines.append(f"{name}: {a.size} words fnv {fnv(a):016x}")

    out = cuda.device_array(N * 8, dtype=np.int32)
    local_sort[N // 128, 128](out)
    add("local_sort", out)

    out = cuda.device_array(16 * 3, dtype=np.int32)
    votes[16, 256](out)
    add("votes", out)

    out = cuda.device_array(N * 3, dtype=np.uint32)
    matches[N // 128, 128](out)
    add("matches", out)

    ints = np.zeros(96, dtype=np.int32)
    ints[16:32] = 1 << 30
    counters = np.zeros(32, dtype=np.uint32)
    counters[16:] = 5
    floats = np.zeros(48, dtype=np.float32)
    floats[16:32] = 1e30
    di, dc, df = cuda.to_device(ints), cuda.to_device(counters), cuda.to_device(floats)
    atomics[N // 128, 128](di, dc, df)
    add("atomics_int", di)
    add("atomics_counters", dc)
    add("atomics_float", df)

    states = create_xoroshiro128p_states(N, seed=20261203)
    o32 = cuda.device_array(N, dtype=np.float32)
    o64 = cuda.device_array(N, dtype=np.float64)
    random_draws[N // 128, 128](states, o32, o64)
    add("random_uniform32", o32)
    add("random_normal64", o64)

    rng = np.random.default_rng(7)
    x32 = (rng.random(N, dtype=np.float32) * np.float32(20) - np.float32(10)).astype(np.float32)
    x32[::7] = np.abs(x32[::7]) + np.float32(0.01)
    x64 = x32.astype(np.float64) * 1.37
    for name, fn in FUNCTIONS:
        for dtype, x in ((np.float32, x32), (np.float64, x64)):
            domain = np.abs(x) + 0.5 if name in ("log", "log2", "log10", "sqrt", "log1p") else x
            if name == "asin":
                domain = np.clip(x / 11, -1, 1)
            domain = domain.astype(dtype)
            out = cuda.device_array(N, dtype=dtype)
            unary(fn)[N // 128, 128](cuda.to_device(domain), out)
            add(f"{name}{'32' if dtype == np.float32 else '64'}", out)

    y32 = (rng.random(N, dtype=np.float32) * np.float32(6) - np.float32(3)).astype(np.float32)
    out = cuda.device_array(N * 4, dtype=np.float32)
    binary[N // 128, 128](cuda.to_device(np.abs(x32)), cuda.to_device(y32), out)
    add("binary32", out)
    out = cuda.device_array(N * 4, dtype=np.float64)
    binary[N // 128, 128](cuda.to_device(np.abs(x64)), cuda.to_device(y32.astype(np.float64)), out)
    add("binary64", out)

    a = (rng.random(N, dtype=np.float32) * 8 - 4).astype(np.float16)
    b = (rng.random(N, dtype=np.float32) * 8 - 4).astype(np.float16)
    out = cuda.device_array(N * 6, dtype=np.float16)
    halves[N // 128, 128](cuda.to_device(a), cuda.to_device(b), out)
    add("halves", out)
    return lines, arrays


MAX_ULP = 2


def ulps(a, b):
    """Each pair of floats' distance in units in the last place (as ordered integers)."""
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    low = np.iinfo(bits).min

    def ordered(v):
        v = v.view(bits).astype(object)
        return [low - x if x < 0 else x for x in v]

    return [abs(x - y) for x, y in zip(ordered(a), ordered(b))]


def against(lines, arrays, record):
    want = dict(line.split(": ", 1) for line in open(f"{record}/numba_probe.txt").read().splitlines())
    approx = np.load(f"{record}/numba_probe_approx.npz")
    ok = True
    for line in lines:
        name, rest = line.split(": ", 1)
        if name in approx.files:
            d = ulps(arrays[name], approx[name])
            good = max(d) <= MAX_ULP
            differ = sum(1 for x in d if x)
            print(f"{name}: {differ} of {len(d)} words differ, by at most {max(d)} ulp"
                  f"{'' if good else f' (more than {MAX_ULP})'}")
        else:
            good = want.get(name) == rest
            print(f"{name}: {'as on the GPU' if good else f'DIFFERS: {rest}, the GPU {want.get(name)}'}")
        ok &= good
    missing = set(want) - {line.split(": ", 1)[0] for line in lines}
    for name in sorted(missing):
        print(f"{name}: MISSING")
    return ok and not missing


def main():
    args = sys.argv[1:]
    lines, arrays = run()
    if "--save" in args:
        np.savez_compressed(args[args.index("--save") + 1], **arrays)
    if "--against" in args:
        return 0 if against(lines, arrays, args[args.index("--against") + 1]) else 1
    for line in lines:
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
