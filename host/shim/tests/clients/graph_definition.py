"""cuda.core's GraphDefinition on gpu0: a graph built node by node (an allocation that gpu1 may
touch, a memset, a kernel, a child graph, a copy to pinned memory, a host callback, an event
record and the free), instantiated and launched twice; a graph updated from one of the same
shape with another kernel argument; a graph whose allocation outlives its launch, added
to by a kernel on gpu1 and freed after; captures in each mode. One line per fact, the same on
any machine whose gpu1 has a peer link to gpu0, so that a run through the shim can be compared
with NVIDIA's driver."""

import ctypes

from cuda.bindings import driver
from cuda.core import (
    Device,
    GraphMemoryResource,
    LaunchConfig,
    LegacyPinnedMemoryResource,
    Program,
    ProgramOptions,
    launch,
)
from cuda.core.graph import GraphDefinition

dev = Device(0)
dev.set_current()
# gpu1 where there is one: on a one-GPU machine the allocations name no peer, and what gpu1
# would do is left out (one line says so).
(err, count) = driver.cuDeviceGetCount()
peers = [1] if count > 1 else []
s = dev.create_stream()
code = r"""extern "C" __global__ void add(unsigned *p, unsigned n, unsigned v) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] += v;
}"""


def compiled(device):
    arch = "sm_" + "".join(str(x) for x in device.compute_capability)
    return Program(code, "c++", ProgramOptions(arch=arch)).compile("ptx").get_kernel("add")


kernel = compiled(dev)
n = 256
pinned = LegacyPinnedMemoryResource().allocate(n * 4)
host = (ctypes.c_uint * n).from_address(int(pinned.handle))
cfg = LaunchConfig(grid=n // 64, block=64)
calls = []


def defined(v):
    """The whole graph: allocate (gpu1 may touch it), set 5, add v, a child adds 10, copy out,
    a callback, an event recorded, free."""
    g = GraphDefinition()
    a = g.allocate(n * 4, peer_access=peers)
    child = GraphDefinition()
    child.launch(cfg, kernel, a.dptr, n, 10)
    node = a.memset(a.dptr, 5, n * 4).launch(cfg, kernel, a.dptr, n, v).embed(child)
    node = node.memcpy(pinned, a.dptr, n * 4).callback(lambda: calls.append(1))
    node.record(dev.create_event()).deallocate(a.dptr)
    return g, a


g, a = defined(1)
print("allocation:", a.bytesize, "bytes on", a.device_id, "peers", tuple(a.peer_access))
graph = g.instantiate()
for launch_no in (1, 2):
    host[0] = host[n - 1] = 0
    graph.launch(s)
    s.sync()
    print(f"launch {launch_no}:", (host[0] & 0xFF, host[n - 1] & 0xFF), "callbacks", len(calls))
graph.close()

# Updated from a graph of the same shape whose kernel adds another value.
buf = dev.memory_resource.allocate(n * 4, stream=s)
s.sync()


def plain(v):
    g = GraphDefinition()
    g.memset(buf, 5, n * 4).launch(cfg, kernel, buf, n, v).memcpy(pinned, buf, n * 4)
    return g


graph = plain(1).instantiate()
graph.launch(s)
s.sync()
print("plain, launched:", host[0] & 0xFF)
graph.update(plain(100))
graph.launch(s)
s.sync()
print("updated, launched:", host[0] & 0xFF)
graph.close()
buf.close(s)

# An allocation left to the caller: gpu1's kernel adds to it, the owner reads it, then frees it.
g3 = GraphDefinition()
kept = g3.allocate(n * 4, peer_access=peers)
kept.memset(kept.dptr, 7, n * 4)
graph3 = g3.instantiate()
graph3.launch(s)
s.sync()
if peers:
    other = Device(1)
    other.set_current()
    s1 = other.create_stream()
    launch(s1, cfg, compiled(other), kept.dptr, n, 3)
    s1.sync()
    dev.set_current()
else:
    print("no gpu1: the kept allocation is left as set")
(err,) = driver.cuMemcpyDtoH(pinned.handle, kept.dptr, n * 4)
print("the kept allocation read back:", err.name, host[0] & 0xFF)
(err,) = driver.cuMemFreeAsync(kept.dptr, s.handle)
s.sync()
print("freed:", err.name)
graph3.close()

# Captured in each mode: an allocation, a kernel and a copy out, freed in the graph.
for mode in ("global", "thread_local", "relaxed"):
    b = s.create_graph_builder().begin_building(mode)
    buf = GraphMemoryResource(dev).allocate(n * 4, stream=b)
    buf.fill(1, stream=b)
    launch(b, cfg, kernel, buf, n, 2)
    buf.copy_to(pinned, stream=b)
    buf.close(b)
    captured = b.end_building().complete()
    host[0] = 99
    captured.launch(s)
    s.sync()
    print(f"captured {mode}:", host[0] & 0xFF)
    captured.close()
print("done")
