"""A cuda.core client that shares a pool between processes with multiprocessing, as cuda.core's
own memory IPC tests do: the parent makes an IPC-enabled pool on gpu0 and a buffer from it
filled with a pattern, and sends both to a spawned child. In the child: the buffer's bytes
arrive, the imported pool grants no peer, and with a second GPU, gpu1's copy from it is refused
until the child grants gpu1, succeeds then, and is refused again after the child revokes. One
line per fact, for a test to compare with NVIDIA's driver; "fail ..." on anything unexpected.
"""

import ctypes
import multiprocessing as mp
import client

from cuda.bindings import driver
from cuda.core import Device, DeviceMemoryResource, DeviceMemoryResourceOptions

SIZE = 4096
PATTERN = 0x5D


def host_bytes(ptr, size):
    """`size` bytes at device address `ptr`, through cuMemcpyDtoH."""
    out = ctypes.create_string_buffer(size)
    (err,) = driver.cuMemcpyDtoH(ctypes.addressof(out), ptr, size)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuMemcpyDtoH: {err}")
    return out.raw


def copy_by(device, src, size):
    """`device`'s copy engine copies from `src` into its own memory: the driver's answer."""
    device.set_current()
    err, dst = driver.cuMemAlloc(size)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuMemAlloc: {err}")
    (err,) = driver.cuMemcpyDtoD(dst, src, size)
    moved = err == driver.CUresult.CUDA_SUCCESS and host_bytes(int(dst), size) == bytes([PATTERN]) * size
    driver.cuMemFree(dst)
    return err.name, int(moved)


def child(mr, buffer, out):
    try:
        devices = Device.get_all_devices()
        devices[0].set_current()
        lines = [f"child: mapped {int(mr.is_mapped)} peers {sorted(d.device_id for d in mr.peer_accessible_by)}"]
        lines.append(f"child: bytes arrived {int(host_bytes(int(buffer.handle), SIZE) == bytes([PATTERN]) * SIZE)}")
        if len(devices) > 1:
            lines.append("child: gpu1 copies before a grant: %s moved %d" % copy_by(devices[1], int(buffer.handle), SIZE))
            devices[0].set_current()
            mr.peer_accessible_by = [1]
            lines.append(f"child: granted, peers {sorted(d.device_id for d in mr.peer_accessible_by)}")
            lines.append("child: gpu1 copies after the grant: %s moved %d" % copy_by(devices[1], int(buffer.handle), SIZE))
            devices[0].set_current()
            mr.peer_accessible_by = []
            lines.append(f"child: revoked, peers {sorted(d.device_id for d in mr.peer_accessible_by)}")
            lines.append("child: gpu1 copies after the revoke: %s moved %d" % copy_by(devices[1], int(buffer.handle), SIZE))
        else:
            lines.append("child: one GPU, no peer to grant")
        devices[0].set_current()
        buffer.close()
        out.put("\n".join(lines))
    except Exception as e:
        out.put(f"child: fail {type(e).__name__}: {e}")


def main():
    device = Device(0)
    device.set_current()
    stream = device.create_stream()
    mr = DeviceMemoryResource(device, DeviceMemoryResourceOptions(ipc_enabled=True))
    buffer = mr.allocate(SIZE, stream=stream)
    buffer.fill(PATTERN, stream=stream)
    stream.sync()
    print(f"parent: devices {len(Device.get_all_devices())} pool ipc {int(mr.is_ipc_enabled)}")
    out = mp.Queue()
    process = mp.Process(target=child, args=(mr, buffer, out))
    process.start()
    print(out.get(timeout=120))
    process.join(timeout=120)
    print(f"child exit {process.exitcode}")
    print(f"parent: peers still {sorted(d.device_id for d in mr.peer_accessible_by)}")
    buffer.close(stream)
    stream.sync()
    mr.close()
    print("done")


if __name__ == "__main__":
    mp.set_start_method("spawn")  # CUDA does not survive fork
    client.run(main)
