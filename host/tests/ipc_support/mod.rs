//! Helpers for the inter-process tests on the simulator (`host/tests/ipc_sim_*.rs`): two
//! simulators stand for two processes of one machine (they map the same shared files, as two
//! processes would), and a real `Channel::pair()` joins them.
#![allow(dead_code)] // each test crate uses a different subset

use peerpool::driver::DevicePtr;
use peerpool::ipc::{Channel, Exported, HandleKind, Imported, ShareRequest};
use peerpool::kernels::pattern::pattern;
use peerpool::{Allocation, DeviceSlice, OwnedPool, PatternComparison, PoolOptions, System};
use peerpool_sim::{SimDriver, SimStats, Topology};
use std::sync::Arc;

pub mod fd_leaks;
pub use fd_leaks::leak_checked;

/// Words in each shared buffer (256 KiB).
pub const WORDS: u64 = 1 << 16;
pub const BYTES: usize = (WORDS * 4) as usize;

pub const FD: ShareRequest = ShareRequest { handle: HandleKind::PosixFd, allow_staging: false };
pub const FABRIC: ShareRequest = ShareRequest { handle: HandleKind::Fabric, allow_staging: false };
pub const STAGED: ShareRequest = ShareRequest { handle: HandleKind::PosixFd, allow_staging: true };

/// One simulated process on two H200s.
pub struct Process {
    pub sim: Arc<SimDriver>,
    pub system: System,
}

impl Process {
    pub fn new() -> Process {
        let sim = Arc::new(SimDriver::new(Topology::two_h200()));
        let system = System::with_driver(sim.clone()).expect("a system opens on the simulator");
        system.set_scratch_bytes(4096).expect("a valid probe size");
        Process { sim, system }
    }

    /// A copy of this process (as `fork(2)` makes one) with its own system, for a probe that
    /// may kill it.
    pub fn fork(&self) -> Process {
        let sim = Arc::new(self.sim.fork());
        let system = System::with_driver(sim.clone()).expect("a system opens on the fork");
        Process { sim, system }
    }

    /// A pool on `device` exportable with POSIX fds, and an allocation in it filled by the
    /// owner's kernel with `seed`.
    pub fn filled_pool(&self, device: usize, seed: u32) -> (OwnedPool, Allocation) {
        let options = PoolOptions { handle_types: peerpool::driver::HandleKinds::POSIX_FD, max_size: 0 };
        let pool = self.system.create_pool(device, options).unwrap();
        let memory = self.system.alloc(pool.as_ref(), BYTES).unwrap();
        self.system.kernels(device).unwrap().fill(memory.as_slice(), seed).unwrap();
        (pool, memory)
    }

    /// [`Process::filled_pool`], its allocation exported with POSIX fds.
    pub fn filled_export(&self, device: usize, seed: u32) -> (OwnedPool, Allocation, Exported) {
        let (pool, memory) = self.filled_pool(device, seed);
        let exported = self.system.export_allocation(&memory, FD).unwrap();
        (pool, memory, exported)
    }

    /// `memory` exported with POSIX fds, sent over a new channel and imported by `importer`,
    /// granting no peers.
    pub fn share(&self, memory: &Allocation, importer: &Process) -> Imported {
        let (a, b) = channel();
        self.system.export_allocation(memory, FD).unwrap().send(&a).unwrap();
        importer.system.import(&b, &[]).unwrap()
    }

    /// `device`'s kernel in this process compares the `count` words at `ptr` (an import's
    /// included) with `seed`'s pattern.
    pub fn compare(&self, device: usize, ptr: DevicePtr, count: u64, seed: u32) -> peerpool::Result<PatternComparison> {
        self.system.kernels(device)?.compare_pattern(words(ptr, count), seed)
    }

    pub fn stats(&self) -> SimStats {
        self.sim.stats()
    }
}

/// `words` 32-bit words at `ptr` (another process's import included), for a kernel on the
/// simulator, which checks every range itself.
pub fn words(ptr: DevicePtr, words: u64) -> DeviceSlice<'static> {
    // SAFETY: only ever given to a simulator, which checks the range itself.
    unsafe { DeviceSlice::from_raw(ptr, words * 4) }
}

/// `len` bytes at `ptr`, as [`words`] for whole bytes (what an export is given).
pub fn bytes(ptr: DevicePtr, len: usize) -> DeviceSlice<'static> {
    // SAFETY: only ever given to a simulator, which checks the range itself.
    unsafe { DeviceSlice::from_raw(ptr, len as u64) }
}

/// A connected pair: (exporter's end, importer's end).
pub fn channel() -> (Channel, Channel) {
    Channel::pair().expect("socketpair")
}

/// Whether the first `words` words the host reads equal `pattern(i, seed)`.
pub fn host_sees(words: &[u32], seed: u32) -> bool {
    words.iter().enumerate().all(|(i, &w)| w == pattern(i as u64, seed))
}

/// [`leak_checked`] with two new processes, the exporter and the importer, given to `scenario`
/// (and gone before the fds are counted again).
pub fn leak_checked_pair(scenario: impl FnOnce(Process, Process)) {
    leak_checked(|| scenario(Process::new(), Process::new()));
}
