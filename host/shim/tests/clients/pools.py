"""A cuda.core client that knows nothing of peerpool: for every GPU it makes a new pool
(DeviceMemoryResource), gives it to every peer that can reach it (peer_accessible_by, set
semantics), reads the set back, and moves bytes from the pool into each peer's memory with
Buffer.copy_to, checking them on the host. One line per fact, for a test to compare with the
simulated topology; "fail ..." on anything unexpected.
"""

import ctypes
import client

from cuda.bindings import driver
from cuda.core import Device, DeviceMemoryResource, DeviceMemoryResourceOptions

SIZE = 4096


def host_bytes(buffer):
    """The buffer's bytes, read back through cuMemcpyDtoH."""
    out = ctypes.create_string_buffer(SIZE)
    (err,) = driver.cuMemcpyDtoH(ctypes.addressof(out), int(buffer.handle), SIZE)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuMemcpyDtoH: {err}")
    return out.raw


def main():
    devices = Device.get_all_devices()
    print(f"devices {len(devices)}")
    for owner in devices:
        owner.set_current()
        stream = owner.create_stream()
        pool = DeviceMemoryResource(owner, DeviceMemoryResourceOptions())
        reach = sorted(d.device_id for d in devices if d is not owner and d.can_access_peer(owner))
        # The owner in the list is silently dropped, as the H200s' cuda.core does.
        pool.peer_accessible_by = reach + [owner.device_id]
        seen = sorted(d.device_id for d in pool.peer_accessible_by)
        print(f"pool {owner.device_id} reach {reach} peers {seen}")
        source = pool.allocate(SIZE, stream=stream)
        source.fill(owner.device_id + 1, stream=stream)
        stream.sync()
        for peer in reach:
            # The peer's engine reads the owner's pool: what the grant allows.
            devices[peer].set_current()
            on_peer = devices[peer].create_stream()
            target = DeviceMemoryResource(devices[peer]).allocate(SIZE, stream=on_peer)
            source.copy_to(target, stream=on_peer)
            on_peer.sync()
            moved = host_bytes(target) == bytes([owner.device_id + 1]) * SIZE
            print(f"copy {owner.device_id}->{peer} moved {int(moved)}")
            target.close(on_peer)
            on_peer.sync()
        owner.set_current()
        pool.peer_accessible_by = []
        print(f"pool {owner.device_id} after revoke {sorted(d.device_id for d in pool.peer_accessible_by)}")
        source.close(stream)
        stream.sync()
    print("done")


if __name__ == "__main__":
    client.run(main)
