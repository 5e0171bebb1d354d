//! Device attributes: what the topology gives (compute capability, multiprocessors, PCI
//! address, pools and their handle types), and for every other attribute the value an H200
//! answered (`attributes/h200.txt`, from `docs/hardware/recorded/one-h200/attributes.txt`): the
//! simulated devices are H200-class whatever their name.

use super::driver::SimDriver;
use super::topology::DeviceSpec;
use peerpool::CudaCode;
use peerpool::driver::{DeviceAttribute, DriverResult, HandleKinds};
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
        other => recorded(other.raw()).expect("the H200 answered every attribute peerpool names"),
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

impl SimDriver {
    /// `cuDeviceGetAttribute` for any attribute number: the topology's where it gives one, else
    /// what an H200 answered; a number the H200 did not answer is `CUDA_ERROR_INVALID_VALUE`.
    pub fn device_get_attribute_raw(&self, device: i32, raw: u32) -> DriverResult<i32> {
        if let Some(attribute) = DeviceAttribute::from_raw(raw) {
            return peerpool::driver::Driver::device_get_attribute(self, device, attribute);
        }
        self.run("cuDeviceGetAttribute", |s| {
            s.device(device)?;
            recorded(raw).ok_or_else(|| CudaCode::CUDA_ERROR_INVALID_VALUE.into())
        })
    }
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
