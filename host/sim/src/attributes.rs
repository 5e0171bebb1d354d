//! Device attributes: what the topology gives (compute capability, multiprocessors, PCI
//! address, pools and their handle types), and for every other attribute the value an H200
//! answered (`attributes/h200.txt`, from `docs/hardware/recorded/one-h200/attributes.txt`): the
//! simulated devices are H200-class whatever their name; but an attribute that promises calls
//! the simulator does not serve is 0 ([`PROMISES`]), so a program that asks before it calls
//! takes the way a GPU without them takes. The shim asks through
//! `SimDriver::device_get_attribute_raw` (`settings.rs`).

use super::topology::DeviceSpec;
use peerpool::driver::{DeviceAttribute, HandleKinds};
use std::collections::HashMap;
use std::sync::OnceLock;

/// What a simulated device answers for `attribute`: its spec where the topology gives it, else
/// what an H200 answered.
pub(super) fn of(d: &DeviceSpec, attribute: DeviceAttribute) -> i32 {
    use DeviceAttribute::*;
    match attribute {
        ComputeCapabilityMajor => d.compute_capability.0,
        ComputeCapabilityMinor => d.compute_capability.1,
        MultiprocessorCount => d.sms,
        PciBusId => d.pci_bus_id,
        MemoryPoolsSupported => d.pools_supported as i32,
        MempoolSupportedHandleTypes => d.pool_handle_types.0 as i32,
        HandleTypePosixFdSupported => d.pool_handle_types.contains(HandleKinds::POSIX_FD) as i32,
        HandleTypeFabricSupported => d.pool_handle_types.contains(HandleKinds::FABRIC) as i32,
        // The rest as an H200 answered.
        other => answered(other.raw()).expect("the H200 answered every attribute peerpool names"),
    }
}

/// Attributes (by number) that promise entry points, and those entry points as exported: each
/// is 0 here while the simulator serves none of its calls (the shim's tests hold the two lists
/// together).
pub const PROMISES: [(u32, &[&str]); 9] = [
    // CAN_USE_64_BIT_STREAM_MEM_OPS, CAN_USE_STREAM_WAIT_VALUE_NOR: the stream memory operations.
    (122, &["cuStreamWaitValue64_v2", "cuStreamWriteValue64_v2", "cuStreamBatchMemOp_v2"]),
    (123, &["cuStreamWaitValue32_v2", "cuStreamBatchMemOp_v2"]),
    // SPARSE_CUDA_ARRAY_SUPPORTED, DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED: CUDA arrays.
    (112, &["cuArrayGetSparseProperties", "cuMemMapArrayAsync"]),
    (121, &["cuMipmappedArrayCreate", "cuArray3DCreate_v2"]),
    // TIMELINE_SEMAPHORE_INTEROP_SUPPORTED: external semaphores.
    (114, &["cuImportExternalSemaphore"]),
    // DMA_BUF_SUPPORTED: a dma_buf of device memory.
    (124, &["cuMemGetHandleForAddressRange"]),
    // IPC_EVENT_SUPPORTED: events shared between processes.
    (125, &["cuIpcGetEventHandle", "cuIpcOpenEventHandle"]),
    // TENSOR_MAP_ACCESS_SUPPORTED: tensor maps.
    (127, &["cuTensorMapEncodeTiled"]),
    // MULTICAST_SUPPORTED: multicast objects.
    (132, &["cuMulticastCreate"]),
];

/// What the simulator answers for attribute number `raw`: 0 for a [`PROMISES`] attribute, else
/// the H200's answer, if it gave one.
pub(super) fn answered(raw: u32) -> Option<i32> {
    match PROMISES.iter().any(|&(attribute, _)| attribute == raw) {
        true => Some(0),
        false => recorded(raw),
    }
}

/// The H200's answer for attribute number `raw`, if it gave one.
pub(super) fn recorded(raw: u32) -> Option<i32> {
    static TABLE: OnceLock<HashMap<u32, i32>> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        include_str!("../attributes/h200.txt")
            .lines()
            .filter_map(|line| match line.split_whitespace().collect::<Vec<_>>()[..] {
                ["attribute", n, "value", v] => Some((n.parse().ok()?, v.parse().ok()?)),
                _ => None,
            })
            .collect()
    });
    table.get(&raw).copied()
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_h200_attribute_is_read() {
        assert_eq!(super::recorded(16), Some(132), "the multiprocessor count line");
        assert!((1..=147).all(|n| super::recorded(n).is_some()));
        assert_eq!(super::recorded(0), None);
        assert!(peerpool::driver::DeviceAttribute::ALL.iter().all(|a| super::recorded(a.raw()).is_some()));
    }
}
