"""A benchmark, not a test: the same numba-cuda elementwise kernel (axpy over 2^16 floats, 64
blocks of 256 threads, one element a thread) launched through peerpool's simulator and in
numba's own CUDA simulator (NUMBA_ENABLE_CUDASIM=1), one after the other on this machine. Prints
the seconds a launch took in each (the best of five, after one to compile) and their ratio.

Usage: python3 ci/numba-vs-cudasim.py PYTHON PEERPOOL   (PYTHON has numba-cuda; PEERPOOL is the
built `peerpool` command, whose shim is beside it)
"""

import os
import subprocess
import sys

KERNEL = r"""
import time, warnings
import numpy as np
from numba import cuda
warnings.simplefilter("ignore")

@cuda.jit
def axpy(a, x, y, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = a * x[i] + y[i]

n = 1 << 16
x, y = np.arange(n, dtype=np.float32), np.ones(n, dtype=np.float32)
dx, dy, out = cuda.to_device(x), cuda.to_device(y), cuda.device_array(n, dtype=np.float32)
axpy[1, 32](np.float32(2), dx, dy, out)  # compiles
best = float("inf")
for _ in range(5):
    start = time.perf_counter()
    axpy[n // 256, 256](np.float32(2), dx, dy, out)
    cuda.synchronize()
    best = min(best, time.perf_counter() - start)
assert (out.copy_to_host() == np.float32(2) * x + y).all()
print(best)
"""


def seconds(command, env):
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def main():
    python, peerpool = sys.argv[1], sys.argv[2]
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PEERPOOL_", "NUMBA_"))}
    simulated = seconds([peerpool, "sim", "--topology", "one_gpu", "--", python, "-c", KERNEL], base)
    cudasim = seconds([python, "-c", KERNEL], dict(base, NUMBA_ENABLE_CUDASIM="1"))
    print(f"axpy, 2^16 threads, best of 5 launches")
    print(f"peerpool sim (PTX on peerpool-ptx): {simulated:.4f} s")
    print(f"numba's CUDA simulator:             {cudasim:.4f} s")
    print(f"ratio (numba's / peerpool's):       {cudasim / simulated:.1f}")


if __name__ == "__main__":
    main()
