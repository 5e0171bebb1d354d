"""numba-cuda kernels whose PTX is linked with other PTX by the driver's JIT linker, on every
GPU the driver shows: half-precision arithmetic (numba-cuda links its float16 functions), and
kernels calling device functions written in CUDA C (`numba_linked.cu`, compiled by NVRTC), one
of them with CUDA's double `sin` and `cos` beside numba-cuda's own `sin` (both images carry the
same internal helpers). Each result is checked against numpy, exactly where the operations are
IEEE operations rounded once, else within 1e-15 of each term, and printed with a checksum of its
bytes, as a line per kernel and GPU.

Usage: python numba_linked.py   (exits 1 if a result is wrong)
"""

import math
import os
import sys
import warnings
import zlib

import numpy as np
from numba import cuda, float64, int32

warnings.simplefilter("ignore")  # numba's performance and linker advice

N = 4096
SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "numba_linked.cu")

mix = cuda.declare_device("mix", int32(int32, int32))
scaled = cuda.declare_device("scaled", float64(float64, int32))
waves = cuda.declare_device("waves", float64(float64))


@cuda.jit
def half_add(x, y, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i] + y[i]


@cuda.jit
def half_mul(x, y, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i] * y[i]


@cuda.jit(link=[SOURCE])
def mixed(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = mix(a[i], b[i])


@cuda.jit(link=[SOURCE])
def scale(x, k, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = scaled(x[i], k[i])


@cuda.jit(link=[SOURCE])
def trig(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = waves(x[i]) + math.sin(7.0 * x[i])


def halves(rng):
    """Finite halves of every magnitude (subnormals too), either sign."""
    bits = rng.integers(0, 0x7C00, N, dtype=np.uint16) | (rng.integers(0, 2, N, dtype=np.uint16) << 15)
    return bits.view(np.float16)


def launch(kernel, want, *args, close=False):
    out = cuda.device_array(want.shape, dtype=want.dtype)
    kernel[(N + 127) // 128, 128](*[cuda.to_device(a) for a in args], out)
    got = out.copy_to_host()
    good = np.allclose(got, want, rtol=0, atol=3e-15) if close else (got.view(np.uint8) == want.view(np.uint8)).all()
    return bool(good), zlib.crc32(got.tobytes())


def run():
    rng = np.random.default_rng(7)
    x, y = halves(rng), halves(rng)
    with np.errstate(over="ignore", under="ignore"):
        yield "half_add", launch(half_add, x + y, x, y)
        yield "half_mul", launch(half_mul, x * y, x, y)
    a = rng.integers(-(2**31), 2**31, N, dtype=np.int64).astype(np.int32)
    b = rng.integers(-(2**31), 2**31, N, dtype=np.int64).astype(np.int32)
    want = ((a.astype(np.uint32) * np.uint32(2654435761)).astype(np.int32)) ^ (b >> 3)
    yield "mix", launch(mixed, want, a, b)
    d = rng.standard_normal(N) * 1e3
    k = rng.integers(-40, 40, N, dtype=np.int32)
    yield "scaled", launch(scale, np.ldexp(d, k) + d / 3.0, d, k)
    t = rng.uniform(-4.0, 4.0, N)
    yield "trig", launch(trig, np.sin(t) + np.cos(3.0 * t) + np.sin(7.0 * t), t, close=True)


def main():
    gpus = len(cuda.gpus)
    print(f"devices: {gpus}")
    ok = True
    for gpu in range(gpus):
        with cuda.gpus[gpu]:
            for name, (good, crc) in run():
                print(f"gpu {gpu} {name}: {'ok' if good else 'WRONG'} crc32 {crc:08x}")
                ok &= good
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
