"""A cuda.core client that launches a kernel cooperatively, as code that synchronises its whole
grid does: the PTX executor's corpus kernel grid_sync (three grid.sync() calls, each block
reading what the others wrote), sized by the occupancy the driver reports, on every GPU. Each
output word is checked against numpy. One line per GPU; "fail ..." on anything unexpected.

Usage: python cooperative.py CORPUS_PTX   (exits 1 if a result is wrong)
"""

import sys

import numpy as np
from cuda.bindings import driver
from cuda.core import Device, LaunchConfig, ObjectCode, launch

BLOCK = 64


def inputs(n):
    """The corpus's input words (its README's hash)."""
    x = (np.arange(n, dtype=np.uint64) * 0x9E3779B9 ^ 0x5BD1E995) & 0xFFFFFFFF
    x ^= x >> 16
    x = (x * 0x85EBCA6B) & 0xFFFFFFFF
    x ^= x >> 13
    x = (x * 0xC2B2AE35) & 0xFFFFFFFF
    return (x ^ (x >> 16)).astype(np.uint32)


def expected(x, blocks):
    """What grid_sync writes (corpus.cu), computed in uint32 arithmetic."""
    n = blocks * BLOCK
    sums = x.reshape(blocks, BLOCK).sum(axis=1, dtype=np.uint64).astype(np.uint32)
    mixed = np.arange(n, dtype=np.uint32)
    for s in sums:
        mixed = (mixed * np.uint32(31) + s).astype(np.uint32)
    i = np.arange(n)
    passed = mixed[(i + BLOCK) % n] ^ sums[(i // BLOCK + 1) % blocks]
    last = np.uint32((int(passed[-1]) + blocks) & 0xFFFFFFFF)
    return np.concatenate([sums, mixed, passed, [last]]).astype(np.uint32)


def run(device, ptx):
    device.set_current()
    stream = device.create_stream()
    kernel = ObjectCode.from_ptx(ptx).get_kernel("grid_sync")
    per_sm = kernel.occupancy.max_active_blocks_per_multiprocessor(BLOCK, 0)
    # A grid the device holds at once: every multiprocessor's share, or 64 blocks if fewer.
    blocks = min(per_sm * device.properties.multiprocessor_count, 64)
    x = inputs(blocks * BLOCK)
    words = blocks + 2 * blocks * BLOCK + 1
    resource = device.memory_resource
    inp, out = resource.allocate(x.nbytes, stream=stream), resource.allocate(words * 4, stream=stream)
    stream.sync()
    driver.cuMemcpyHtoD(int(inp.handle), x.ctypes.data, x.nbytes)
    driver.cuMemsetD8(int(out.handle), 0, words * 4)
    config = LaunchConfig(grid=blocks, block=BLOCK, is_cooperative=True)
    launch(stream, config, kernel, inp, out, np.uint32(x.size))
    stream.sync()
    got = np.zeros(words, dtype=np.uint32)
    driver.cuMemcpyDtoH(got.ctypes.data, int(out.handle), got.nbytes)
    want = expected(x, blocks)
    wrong = np.flatnonzero(got != want)
    if wrong.size:
        print(f"fail gpu {device.device_id}: {wrong.size} words differ, the first at {wrong[0]}")
        return False
    print(f"gpu {device.device_id} grid_sync: {per_sm} blocks a multiprocessor, {blocks} launched, ok")
    return True


def main():
    with open(sys.argv[1], "rb") as f:
        ptx = f.read()
    driver.cuInit(0)
    _, count = driver.cuDeviceGetCount()
    print(f"devices: {count}")
    ok = all([run(Device(d), ptx) for d in range(count)])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
