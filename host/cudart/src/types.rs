//! The runtime's handles and small structs, where they are the driver's or laid out as C has
//! them.

use crate::driver::cu;

/// `dim3`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct dim3 {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

/// `cudaStream_t`, `cudaEvent_t`, `cudaMemPool_t`, `cudaFunction_t`: the driver's handles.
pub type cudaStream_t = cu::CUstream;
pub type cudaEvent_t = cu::CUevent;
pub type cudaMemPool_t = cu::CUmemoryPool;
pub type cudaFunction_t = cu::CUfunction;

/// The runtime's special streams, as the driver's (same values).
pub const STREAM_LEGACY: usize = 0x1;
pub const STREAM_PER_THREAD: usize = 0x2;

/// Which default stream a call's null stream means: the legacy one, or (in a `_ptsz` call,
/// a program built with `--default-stream per-thread`) the thread's own.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Default {
    Legacy,
    PerThread,
}

/// The driver's stream for a runtime stream.
pub fn stream(s: cudaStream_t, default: Default) -> cu::CUstream {
    match (s.is_null(), default) {
        (true, Default::PerThread) => STREAM_PER_THREAD as cu::CUstream,
        _ => s,
    }
}

/// `cudaMemLocation` as a program passes it by value: its type a plain int until checked.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MemLocation {
    pub kind: i32,
    pub id: i32,
}

impl MemLocation {
    /// The driver's location, or `None` for a type the driver does not name.
    pub fn to_driver(self) -> Option<cu::CUmemLocation> {
        use cu::CUmemLocationType::*;
        let kind = [
            CU_MEM_LOCATION_TYPE_INVALID,
            CU_MEM_LOCATION_TYPE_DEVICE,
            CU_MEM_LOCATION_TYPE_HOST,
            CU_MEM_LOCATION_TYPE_HOST_NUMA,
            CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT,
        ]
        .into_iter()
        .find(|k| *k as i32 == self.kind)?;
        Some(cu::CUmemLocation { type_: kind, id: self.id })
    }
}

/// `cudaMemcpyAttributes`: the driver's layout, only passed on by pointer.
pub type MemcpyAttributes = cu::CUmemcpyAttributes;

/// `cudaChannelFormatDesc`: bits per component and their kind.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ChannelFormatDesc {
    pub x: i32,
    pub y: i32,
    pub z: i32,
    pub w: i32,
    pub kind: i32,
}

/// Served although arrays and textures are not: it only builds a value, returned by value (an
/// answer of `cudaErrorNotSupported` would not be the struct the caller reads).
#[unsafe(no_mangle)]
pub extern "C" fn cudaCreateChannelDesc(x: i32, y: i32, z: i32, w: i32, kind: i32) -> ChannelFormatDesc {
    ChannelFormatDesc { x, y, z, w, kind }
}
