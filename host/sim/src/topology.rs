//! [`Topology`]: the simulated machine. Devices, the ordered-pair peer matrix and link faults,
//! read from TOML (the catalog in `host/sim/topologies/`) or built in code.
//!
//! The TOML form keeps large machines short: device groups (`count = 16`), one default link
//! for every ordered pair, NVLink islands, then per-pair overrides, applied in that order.

use peerpool::driver::HandleKinds;
use serde::Deserialize;
use std::collections::BTreeMap;

/// The most devices a topology may have. Each simulated device gets its own 256 GiB address
/// range below the virtual-memory reservations (`memory.rs`), laid out for this many.
pub const MAX_DEVICES: usize = 1024;

/// Why a topology could not be read; shown with both parts escaped (`peerpool::text`), since
/// either may hold what the file said.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("topology {}: {}", peerpool::text::clipped(source_name, 400), peerpool::text::escaped(message))]
pub struct TopologyError {
    /// The file, or `"<string>"`.
    pub source_name: String,
    /// What is wrong.
    pub message: String,
}

/// One simulated GPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceSpec {
    /// `cuDeviceGetName`.
    pub name: String,
    /// `cuDeviceTotalMem`, bytes: also the cap on live allocations.
    pub total_memory: u64,
    /// `CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT`.
    pub sms: i32,
    /// Compute capability (major, minor).
    pub compute_capability: (i32, i32),
    /// `CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED`: without it `cuMemPoolCreate` is refused.
    pub pools_supported: bool,
    /// `CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES`.
    pub pool_handle_types: HandleKinds,
    /// `CU_DEVICE_ATTRIBUTE_PCI_BUS_ID`.
    pub pci_bus_id: i32,
}

impl DeviceSpec {
    /// One H200 of the recorded machine, as its driver reports it (`docs/hardware/2026-11-30-foundation/peerpool.txt`).
    pub fn h200() -> DeviceSpec {
        DeviceSpec {
            name: "NVIDIA H200".into(),
            total_memory: 150_109_880_320, // 143155.9375 MiB, as cuDeviceTotalMem reports
            sms: 132,
            compute_capability: (9, 0),
            pools_supported: true,
            pool_handle_types: HandleKinds(0x9),
            pci_bus_id: 0,
        }
    }
}

/// What one device can do with another's memory: `from`'s kernels reaching `to`'s memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    /// `cuDeviceCanAccessPeer(from, to)` and `CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED`.
    #[serde(default = "yes")]
    pub access: bool,
    /// `CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED`.
    #[serde(default = "yes")]
    pub atomics: bool,
    /// `CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK` (lower is faster).
    #[serde(default)]
    pub rank: i32,
}

fn yes() -> bool {
    true
}

impl Link {
    /// Peer access with native atomics, rank 0 (NVLink, NVSwitch).
    pub const NVLINK: Link = Link { access: true, atomics: true, rank: 0 };
    /// No peer path.
    pub const NONE: Link = Link { access: false, atomics: false, rank: 0 };
}

impl Default for Link {
    fn default() -> Link {
        Link::NVLINK
    }
}

/// What a faulty link does to the bytes it carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// Affected bytes arrive XORed with the fault's mask.
    Corrupt,
    /// Affected bytes never arrive: a write leaves the destination's old byte, a read sees 0.
    Drop,
}

/// A fault on one direction of data flow (`from`'s memory or kernel sending bytes to `to`).
///
/// The affected bytes are those at offsets 0, `period`, 2 × `period`, … of each copy, and of
/// each allocation a kernel reaches over the link, so a test knows where to look and repeats
/// exactly, whether the kernel is peerpool's or runs from PTX. Atomics are the exception: from
/// PTX each atomic's updated bytes cross on their own, while peerpool's kernels, run natively,
/// send a launch's atomics as one transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkFault {
    /// Corrupt or drop.
    pub kind: FaultKind,
    /// Distance between affected bytes (1 affects every byte).
    pub period: u64,
    /// XOR mask for [`FaultKind::Corrupt`] (never 0).
    pub xor: u8,
}

impl LinkFault {
    /// Flips the low bit of one byte in every 4096.
    pub fn corrupt() -> LinkFault {
        LinkFault { kind: FaultKind::Corrupt, period: 4096, xor: 0x01 }
    }

    /// Loses one byte in every 4096.
    pub fn drop_bytes() -> LinkFault {
        LinkFault { kind: FaultKind::Drop, period: 4096, xor: 0x01 }
    }
}

/// The simulated machine: devices, the peer matrix (one [`Link`] per ordered pair, possibly
/// asymmetric) and per-direction [`LinkFault`]s. Deserialises from the catalog's TOML form
/// (`topology_file.rs`, which also reads it from a string or a file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    /// Shown by `describe()`: `"simulated: <name>"`.
    pub name: String,
    /// What the topology stands for.
    pub description: String,
    /// The real machine it stands for (or why it stands for none: a synthetic case).
    pub stands_for: String,
    /// `cuDriverGetVersion`.
    pub driver_version: i32,
    /// How long one kernel launch may run, in seconds of this machine's time, before the
    /// simulated driver stops it with `CUDA_ERROR_LAUNCH_TIMEOUT` (a kernel that waits for what
    /// never comes would hang a GPU); 0: no limit but the instruction budget.
    pub kernel_timeout_s: u64,
    /// The devices, by ordinal.
    pub devices: Vec<DeviceSpec>,
    /// `links[from * n + to]`; the diagonal is unused.
    links: Vec<Link>,
    /// Faulty directions of data flow, `(from, to)`.
    faults: BTreeMap<(usize, usize), LinkFault>,
    /// Each ordinal's index on the whole machine: the identity itself unless the topology is
    /// what a process sees of the machine (`CUDA_VISIBLE_DEVICES`, [`Topology::visible`]).
    physical: Vec<usize>,
}

/// How long a kernel launch runs before the simulated driver stops it, unless a topology or
/// `peerpool sim --kernel-timeout` says otherwise (seconds).
pub const KERNEL_TIMEOUT_S: u64 = 120;

/// The CUDA version a simulated driver answers unless its topology or `peerpool sim
/// --driver-version` says another: the newest whose PTX ISA peerpool's executor reads (13.5,
/// ISA 9.5), so that what a current toolkit builds loads.
pub const DRIVER_VERSION: i32 = 13_050;

impl Topology {
    /// `n` copies of `device`, every ordered pair joined by `link`.
    ///
    /// # Panics
    /// When `n` exceeds [`MAX_DEVICES`], the most a topology may hold (a file with more is
    /// refused as bad input; in code it is a caller's bug).
    pub fn uniform(name: &str, n: usize, device: DeviceSpec, link: Link) -> Topology {
        assert!(n <= MAX_DEVICES, "a topology holds at most {MAX_DEVICES} devices, not {n}");
        let devices = (0..n).map(|i| DeviceSpec { pci_bus_id: bus_id(i), ..device.clone() }).collect();
        Topology {
            name: name.into(),
            description: String::new(),
            stands_for: String::new(),
            driver_version: DRIVER_VERSION,
            kernel_timeout_s: KERNEL_TIMEOUT_S,
            devices,
            links: vec![link; n * n],
            faults: BTreeMap::new(),
            physical: (0..n).collect(),
        }
    }

    /// The recorded machine: 2 × NVIDIA H200 joined by NV18, peer access and native atomics both
    /// ways, performance rank 0, CUDA 13.0 (measured 2026-11-30: `docs/hardware/2026-11-30-foundation`).
    pub fn two_h200() -> Topology {
        let mut t = Topology::uniform("2 x H200 (NV18)", 2, DeviceSpec::h200(), Link::NVLINK);
        t.description = "Two H200s over 18 NVLinks, peer access and atomics both ways.".into();
        t.stands_for = concat!(
            "The recorded 2 x H200 machine: 2 x NVIDIA H200 joined by NV18, ",
            "driver 580.159.04, measured in docs/hardware/"
        )
        .into();
        t
    }

    /// `devices` with `link` on every ordered pair, no faults (what the TOML form starts from).
    pub(super) fn with_links(
        name: String,
        description: String,
        driver_version: i32,
        devices: Vec<DeviceSpec>,
        link: Link,
    ) -> Topology {
        let n = devices.len();
        Topology {
            name,
            description,
            stands_for: String::new(),
            driver_version,
            kernel_timeout_s: KERNEL_TIMEOUT_S,
            devices,
            links: vec![link; n * n],
            faults: BTreeMap::new(),
            physical: (0..n).collect(),
        }
    }

    /// The devices at `ordinals`, in that order, renumbered from 0, with the links and faults
    /// among them: what a process that sees only those devices sees. Each keeps its identity
    /// on the machine ([`Topology::physical`], its UUID and bus id).
    ///
    /// # Panics
    /// On an ordinal out of range (a caller's bug: [`Topology::visible`] checks its input).
    pub(crate) fn subset(&self, ordinals: &[usize]) -> Topology {
        let n = ordinals.len();
        let mut links = vec![Link::NONE; n * n];
        for (i, &from) in ordinals.iter().enumerate() {
            for (j, &to) in ordinals.iter().enumerate() {
                links[i * n + j] = self.link(from, to);
            }
        }
        let place = |d: usize| ordinals.iter().position(|&o| o == d);
        let faults =
            self.faults.iter().filter_map(|(&(from, to), &fault)| Some(((place(from)?, place(to)?), fault))).collect();
        Topology {
            devices: ordinals.iter().map(|&o| self.devices[o].clone()).collect(),
            links,
            faults,
            physical: ordinals.iter().map(|&o| self.physical[o]).collect(),
            ..self.clone()
        }
    }

    /// `ordinal`'s index on the whole machine (itself, unless this is a process's view).
    pub fn physical(&self, ordinal: usize) -> Option<usize> {
        self.physical.get(ordinal).copied()
    }

    /// The ordinal of the machine's device `physical` in this view, if the view has it.
    pub fn ordinal_of(&self, physical: usize) -> Option<usize> {
        self.physical.iter().position(|&p| p == physical)
    }

    /// `cuDeviceGetUuid`, synthetic: the topology's name and the device's index on the machine,
    /// hashed (FNV-1a), so that two devices of one machine differ, a machine's answers repeat,
    /// and a device has the same UUID in every process's view.
    pub fn uuid(&self, ordinal: usize) -> Option<[u8; 16]> {
        let d = self.physical(ordinal)?;
        let mut uuid = [0u8; 16];
        for (half, salt) in uuid.chunks_exact_mut(8).zip([0x5eed_u64, 0xf00d]) {
            let key = format!("{}/{d}/{salt}", self.name);
            let h = key.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3));
            half.copy_from_slice(&h.to_le_bytes());
        }
        Some(uuid)
    }

    /// How many devices.
    pub fn device_count(&self) -> usize {
        self.devices.len()
    }

    /// The link `from -> to`; [`Link::NONE`] on the diagonal or out of range.
    pub fn link(&self, from: usize, to: usize) -> Link {
        let n = self.device_count();
        if from == to || from >= n || to >= n { Link::NONE } else { self.links[from * n + to] }
    }

    /// Replaces the link `from -> to` (ignored on the diagonal or out of range).
    pub fn set_link(&mut self, from: usize, to: usize, link: Link) -> &mut Topology {
        let n = self.device_count();
        if from != to && from < n && to < n {
            self.links[from * n + to] = link;
        }
        self
    }

    /// The fault on data flowing `from -> to`, if any.
    pub fn fault(&self, from: usize, to: usize) -> Option<LinkFault> {
        self.faults.get(&(from, to)).copied()
    }

    /// Sets or clears the fault on data flowing `from -> to`.
    pub fn set_fault(&mut self, from: usize, to: usize, fault: Option<LinkFault>) -> &mut Topology {
        match fault {
            Some(f) if from != to => self.faults.insert((from, to), f),
            _ => self.faults.remove(&(from, to)),
        };
        self
    }

    /// Every faulty direction, `((from, to), fault)`.
    pub fn faults(&self) -> impl Iterator<Item = ((usize, usize), LinkFault)> + '_ {
        self.faults.iter().map(|(&k, &v)| (k, v))
    }
}

/// A synthetic but distinct PCI bus id per ordinal.
pub(super) fn bus_id(ordinal: usize) -> i32 {
    0x18 + 0x10 * ordinal as i32
}
