//! What the driver reports about devices, peer pairs and each device's pools, gathered without
//! changing anything (no grant, no allocation, no kernel).

use crate::driver::{Access, DeviceAttribute, HandleKinds, P2pAttribute};
use crate::error::Result;
use crate::system::System;
use std::fmt::Write as _;

/// One device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceFacts {
    /// Ordinal.
    pub ordinal: usize,
    /// `cuDeviceGetName`.
    pub name: String,
    /// Compute capability, e.g. (9, 0).
    pub compute_capability: (i32, i32),
    /// Total memory in bytes.
    pub total_memory: u64,
    /// `CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED`.
    pub pools_supported: bool,
    /// `CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES`.
    pub pool_handle_types: HandleKinds,
    /// Whether the default pool is also the current pool.
    pub current_pool_is_default: bool,
    /// The default pool's access for every device, by ordinal.
    pub default_pool_access: Vec<Access>,
    /// The PCI address `(domain, bus, device)` (`CU_DEVICE_ATTRIBUTE_PCI_*`).
    pub pci_address: crate::links::PciAddress,
}

/// One ordered pair `from -> to` (`from`'s kernels reaching `to`'s memory).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerFacts {
    /// Accessing device.
    pub from: usize,
    /// Owning device.
    pub to: usize,
    /// `cuDeviceCanAccessPeer(from, to)`.
    pub can_access: bool,
    /// `CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED`.
    pub native_atomics: bool,
    /// `CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK` (lower is faster).
    pub performance_rank: i32,
    /// The link as NVML names it (`NV18`, `PIX`, `SYS`, ... [`crate::links`]); `None` without
    /// NVML (no driver, a simulated topology).
    pub link: Option<String>,
}

/// Everything [`System::facts`] reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Facts {
    /// The driver, described.
    pub driver: String,
    /// Each device.
    pub devices: Vec<DeviceFacts>,
    /// Each ordered pair of distinct devices.
    pub peers: Vec<PeerFacts>,
}

impl System {
    /// Reads devices, the peer matrix and default-pool access. Changes nothing.
    pub fn facts(&self) -> Result<Facts> {
        let driver = self.driver();
        let n = self.device_count();
        let mut devices = Vec::with_capacity(n);
        for ordinal in 0..n {
            let d = ordinal as i32;
            let attribute = |a| driver.device_get_attribute(d, a);
            let default = self.default_pool(ordinal)?;
            devices.push(DeviceFacts {
                ordinal,
                name: driver.device_get_name(d)?,
                compute_capability: (
                    attribute(DeviceAttribute::ComputeCapabilityMajor)?,
                    attribute(DeviceAttribute::ComputeCapabilityMinor)?,
                ),
                total_memory: driver.device_total_mem(d)?,
                pools_supported: attribute(DeviceAttribute::MemoryPoolsSupported)? != 0,
                pool_handle_types: HandleKinds(attribute(DeviceAttribute::MempoolSupportedHandleTypes)? as u32),
                current_pool_is_default: self.current_pool(ordinal)? == default,
                default_pool_access: self.pool_access_table(default)?,
                pci_address: (
                    attribute(DeviceAttribute::PciDomainId)? as u32,
                    attribute(DeviceAttribute::PciBusId)? as u32,
                    attribute(DeviceAttribute::PciDeviceId)? as u32,
                ),
            });
        }
        // A simulated driver's PCI addresses are made up: NVML is asked about real ones only.
        let description = driver.describe();
        let links = match description.starts_with("simulated") {
            true => None,
            false => crate::links::nvml_links(&devices.iter().map(|d| d.pci_address).collect::<Vec<_>>()).ok(),
        };
        let mut peers = Vec::new();
        for from in 0..n {
            for to in (0..n).filter(|&to| to != from) {
                let (f, t) = (from as i32, to as i32);
                peers.push(PeerFacts {
                    from,
                    to,
                    can_access: driver.device_can_access_peer(f, t)?,
                    native_atomics: driver.device_get_p2p_attribute(P2pAttribute::NativeAtomicSupported, f, t)? != 0,
                    performance_rank: driver.device_get_p2p_attribute(P2pAttribute::PerformanceRank, f, t)?,
                    link: links.as_ref().and_then(|l| l[from][to].clone()),
                });
            }
        }
        Ok(Facts { driver: description, devices, peers })
    }
}

impl Facts {
    /// The pair `from -> to`, if both exist and differ.
    pub fn peer(&self, from: usize, to: usize) -> Option<&PeerFacts> {
        self.peers.iter().find(|p| p.from == from && p.to == to)
    }

    /// A plain-text report: devices, the peer matrix (`nvidia-smi topo -m` style) and each
    /// default pool's access table.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "driver: {}", self.driver);
        let _ = writeln!(out, "devices: {}", self.devices.len());
        for d in &self.devices {
            let _ = writeln!(
                out,
                "  GPU{} {}  sm_{}{}  {} MiB  pools {}  pool handle types {}",
                d.ordinal,
                d.name,
                d.compute_capability.0,
                d.compute_capability.1,
                d.total_memory >> 20,
                if d.pools_supported { "yes" } else { "no" },
                handle_types(d.pool_handle_types),
            );
        }
        if self.devices.len() > 1 {
            let _ = writeln!(
                out,
                "\npeer capability (row reads column's memory: P = can access peer, A = native atomics, r = performance rank, then the link NVML names):"
            );
            let _ = write!(out, "{:>12}", "");
            for d in &self.devices {
                let _ = write!(out, "{:>12}", format!("GPU{}", d.ordinal));
            }
            let _ = writeln!(out);
            for from in &self.devices {
                let _ = write!(out, "{:>12}", format!("GPU{}", from.ordinal));
                for to in &self.devices {
                    let cell = match self.peer(from.ordinal, to.ordinal) {
                        None => "X".to_string(),
                        Some(p) if !p.can_access => "-".to_string(),
                        Some(p) => {
                            let link = p.link.as_deref().map_or(String::new(), |l| format!(" {l}"));
                            format!("P{} r{}{link}", if p.native_atomics { "A" } else { "" }, p.performance_rank)
                        }
                    };
                    let _ = write!(out, "{cell:>12}");
                }
                let _ = writeln!(out);
            }
        }
        if !self.devices.is_empty() {
            let _ = writeln!(
                out,
                "\ndefault pool access (row's pool, column's device; peer capability does not grant pool access):"
            );
            for d in &self.devices {
                let cells: Vec<String> =
                    d.default_pool_access.iter().enumerate().map(|(i, a)| format!("GPU{i} {}", access(*a))).collect();
                let current = if d.current_pool_is_default {
                    "current pool = default"
                } else {
                    "current pool differs from default"
                };
                let _ = writeln!(out, "  GPU{} default pool: {}  ({current})", d.ordinal, cells.join(", "));
            }
        }
        out
    }
}

/// `"rw"`, `"r"` or `"none"`.
pub fn access(a: Access) -> &'static str {
    match a {
        Access::ReadWrite => "rw",
        Access::Read => "r",
        Access::None => "none",
    }
}

/// `"posix-fd|fabric"`, or `"none"`.
pub fn handle_types(h: HandleKinds) -> String {
    let mut names = Vec::new();
    if h.contains(HandleKinds::POSIX_FD) {
        names.push("posix-fd".to_string());
    }
    if h.contains(HandleKinds::FABRIC) {
        names.push("fabric".to_string());
    }
    let other = h.0 & !(HandleKinds::POSIX_FD.0 | HandleKinds::FABRIC.0);
    if other != 0 {
        names.push(format!("{other:#x}"));
    }
    if names.is_empty() { "none".into() } else { names.join("|") }
}
