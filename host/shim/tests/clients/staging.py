"""A cuda.core client that stages bytes through host memory, as real code does: pinned buffers
from cuMemAllocHost (LegacyPinnedMemoryResource) and from a pool on the host
(PinnedMemoryResource), and managed buffers (ManagedMemoryResource). The host writes each
buffer directly, the device copies it into device memory and back, and the host checks the
bytes. One line per fact, for a test to compare with NVIDIA's driver; "fail ..." on anything
unexpected.
"""

import ctypes
import client

from cuda.core import (
    Device,
    DeviceMemoryResource,
    LegacyPinnedMemoryResource,
    ManagedMemoryResource,
    PinnedMemoryResource,
    PinnedMemoryResourceOptions,
)

SIZE = 1 << 16


def host_view(buffer):
    """The buffer's bytes as the host sees them at its address."""
    return (ctypes.c_ubyte * buffer.size).from_address(int(buffer.handle))


def round_trip(name, resource, device, stream):
    """Host writes, device copies there and back, host reads."""
    staged = resource.allocate(SIZE, stream=stream)
    stream.sync()
    view = host_view(staged)
    for i in range(0, SIZE, 4096):
        view[i] = (i // 4096) + 1
    on_device = DeviceMemoryResource(device).allocate(SIZE, stream=stream)
    staged.copy_to(on_device, stream=stream)
    back = resource.allocate(SIZE, stream=stream)
    on_device.copy_to(back, stream=stream)
    stream.sync()
    back_view = host_view(back)
    same = all(back_view[i] == (i // 4096) + 1 for i in range(0, SIZE, 4096))
    print(f"{name}: host_accessible {int(staged.is_host_accessible)} device_accessible "
          f"{int(staged.is_device_accessible)} round trip {int(same)}")
    for b in (staged, on_device, back):
        b.close(stream)
    stream.sync()


def main():
    device = Device(0)
    device.set_current()
    stream = device.create_stream()
    print(f"devices {len(Device.get_all_devices())}")
    round_trip("legacy pinned", LegacyPinnedMemoryResource(), device, stream)
    round_trip("pinned pool", PinnedMemoryResource(PinnedMemoryResourceOptions()), device, stream)
    round_trip("managed pool", ManagedMemoryResource(), device, stream)
    print("done")


if __name__ == "__main__":
    client.run(main)
