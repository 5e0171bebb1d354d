"""numba-cuda kernels on every GPU the driver shows: a grid-stride elementwise kernel, a
shared-memory block reduction with an atomic total, a warp-shuffle reduction, a kernel that
calls a device function with a data-dependent loop, and one whose grid synchronises
(`cg.this_grid().sync()`, for which numba-cuda links the device runtime and launches
cooperatively). Each result is checked against numpy,
exactly (the operations are exact in float32 or integer arithmetic), and printed as a line per
kernel and GPU.

numba compiles to PTX with NVVM. On the simulator it links through the driver's JIT linker, so
the kernels run from their PTX: where the nvJitLink wheel is installed, `peerpool sim` has
cuda-python find the shim in its place, without nvJitLink's entry points. NVVM must not be newer
than the driver's CUDA (13.0 on the simulator and the H200s).

Usage: python numba_kernels.py   (exits 1 if a result is wrong)
"""

import sys
import warnings

import numpy as np
from numba import cuda, int32
from numba.cuda import cg

warnings.simplefilter("ignore")  # numba's performance and linker advice

N = 10_000


@cuda.jit
def axpy(a, x, y, out):
    start, stride = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, x.size, stride):
        out[i] = a * x[i] + y[i]


@cuda.jit
def block_sum(x, total):
    tile = cuda.shared.array(256, dtype=int32)
    i = cuda.grid(1)
    t = cuda.threadIdx.x
    tile[t] = x[i] if i < x.size else 0
    cuda.syncthreads()
    half = 128
    while half > 0:
        if t < half:
            tile[t] += tile[t + half]
        cuda.syncthreads()
        half //= 2
    if t == 0:
        cuda.atomic.add(total, 0, tile[0])


@cuda.jit
def warp_sums(x, out):
    i = cuda.grid(1)
    v = x[i] if i < x.size else 0
    offset = 16
    while offset > 0:
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
        offset //= 2
    if cuda.laneid == 0:
        out[i // 32] = v


def collatz_host(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


# The same function, compiled for the device.
collatz_steps = cuda.jit(device=True)(collatz_host)


@cuda.jit
def collatz(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = collatz_steps(x[i])


@cuda.jit
def grid_sum(x, totals, out):
    # Twice: every thread adds, then the grid waits before any reads what all added.
    grid = cg.this_grid()
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(totals, 0, x[i])
    grid.sync()
    if i < x.size:
        cuda.atomic.add(totals, 1, totals[0] - x[i])
    grid.sync()
    if i < x.size:
        out[i] = totals[1]


def run():
    results = []
    x = (np.arange(N, dtype=np.float32) * np.float32(0.5)) + np.float32(0.25)
    y = (np.arange(N, dtype=np.float32) % 97) / np.float32(4)
    out = cuda.device_array(N, dtype=np.float32)
    axpy[8, 128](np.float32(1.75), cuda.to_device(x), cuda.to_device(y), out)
    want = np.float32(1.75) * x + y
    results.append(("axpy", bool((out.copy_to_host() == want).all())))

    ints = (np.arange(N, dtype=np.int32) % 1000) - 300
    total = cuda.to_device(np.zeros(1, dtype=np.int32))
    block_sum[(N + 255) // 256, 256](cuda.to_device(ints), total)
    results.append(("block_sum", int(total.copy_to_host()[0]) == int(ints.sum())))

    blocks = (N + 255) // 256
    warps = cuda.device_array(blocks * 256 // 32, dtype=np.int32)  # a word for every warp launched
    warp_sums[blocks, 256](cuda.to_device(ints), warps)
    padded = np.zeros(len(warps) * 32, dtype=np.int32)
    padded[:N] = ints
    results.append(("warp_sums", bool((warps.copy_to_host() == padded.reshape(-1, 32).sum(axis=1)).all())))

    starts = np.arange(1, 513, dtype=np.int64)
    steps = cuda.device_array(512, dtype=np.int32)
    collatz[4, 128](cuda.to_device(starts), steps)
    results.append(("collatz", steps.copy_to_host().tolist() == [collatz_host(int(n)) for n in starts]))

    wide = ints.astype(np.int64)
    totals = cuda.to_device(np.zeros(2, dtype=np.int64))
    sums = cuda.device_array(N, dtype=np.int64)
    grid_sum[(N + 255) // 256, 256](cuda.to_device(wide), totals, sums)
    whole = int(wide.sum())
    results.append(("grid_sum", bool((sums.copy_to_host() == (N - 1) * whole).all())))
    return results


def main():
    gpus = len(cuda.gpus)
    print(f"devices: {gpus}")
    ok = True
    for gpu in range(gpus):
        with cuda.gpus[gpu]:
            for name, good in run():
                print(f"gpu {gpu} {name}: {'ok' if good else 'WRONG'}")
                ok &= good
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
