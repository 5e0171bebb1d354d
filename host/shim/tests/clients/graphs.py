"""cuda.core's graphs on gpu0: a GraphBuilder capturing three launches of an NVRTC kernel,
completed (instantiated with the user object cuda.core keeps the kernel alive with), uploaded
and launched twice, then a builder split over two streams and joined; each result copied back.
One line per fact, the same on any GPU, so that a run through the shim can be compared with
NVIDIA's driver."""

import ctypes

import numpy as np
from cuda.core import Device, LaunchConfig, LegacyPinnedMemoryResource, Program, ProgramOptions, launch
from cuda.core.graph import GraphBuilder

dev = Device(0)
dev.set_current()
s = dev.create_stream()
code = r"""extern "C" __global__ void add(unsigned *p, unsigned n, unsigned v) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] += v;
}"""
arch = "sm_" + "".join(str(x) for x in dev.compute_capability)
kernel = Program(code, "c++", ProgramOptions(arch=arch)).compile("ptx").get_kernel("add")
n = 256
buf = dev.memory_resource.allocate(n * 4, stream=s)
pinned = LegacyPinnedMemoryResource().allocate(n * 4)
host = (ctypes.c_uint * n).from_address(int(pinned.handle))
cfg = LaunchConfig(grid=n // 64, block=64)


def read_back():
    buf.copy_to(pinned, stream=s)
    s.sync()
    return host[0], host[n - 1]


ctypes.memset(int(pinned.handle), 0, n * 4)
pinned.copy_to(buf, stream=s)
s.sync()

gb = s.create_graph_builder()
gb.begin_building()
print("building:", gb.is_building)
for v in (1, 2, 3):
    launch(gb, cfg, kernel, buf, np.uint32(n), np.uint32(v))
gb.end_building()
print("after three captured launches:", read_back())
graph = gb.complete()
graph.upload(s)
graph.launch(s)
print("launched once:", read_back())
graph.launch(s)
print("launched twice:", read_back())

split = s.create_graph_builder()
split.begin_building()
launch(split, cfg, kernel, buf, np.uint32(n), np.uint32(100))
left, right = split.split(2)
launch(left, cfg, kernel, buf, np.uint32(n // 2), np.uint32(10))
launch(right, cfg, kernel, buf, np.uint32(n), np.uint32(1000))
joined = GraphBuilder.join(left, right)
joined.end_building()
forked = joined.complete()
forked.launch(s)
print("split and joined, launched:", read_back())
graph.close()
forked.close()
print("done")
