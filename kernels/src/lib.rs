//! peerpool's GPU kernels as the host sees them: the embedded PTX, its entry points, and the
//! byte pattern that the kernels also compile (one source file, `src/pattern.rs`).
//!
//! The kernels themselves are in `device/` (Rust, `#![no_core]`) and are built by `build.rs`.

pub mod pattern;

/// The PTX module holding every kernel in [`ENTRY_POINTS`].
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/peerpool_kernels.ptx"));

/// Whether [`PTX`] was compiled in this build or is the committed copy (another toolchain).
pub const PTX_ORIGIN: PtxOrigin = match env!("PEERPOOL_PTX_ORIGIN").as_bytes() {
    b"built" => PtxOrigin::Built,
    _ => PtxOrigin::Committed,
};

/// Machine code for compute capability 9.0 (H100, H200), compiled by CUDA's `ptxas` from
/// [`PTX`]: loading it skips the driver's JIT (50 to 110 ms per device on the H200s, when the
/// driver's cache does not hold the result). `None` when the committed cubin was compiled
/// from other PTX; the build warns then.
pub const SM90_CUBIN: Option<&[u8]> = match env!("PEERPOOL_SASS_SM90").as_bytes() {
    b"fresh" => Some(include_bytes!(concat!(env!("OUT_DIR"), "/peerpool_kernels.sm_90.cubin"))),
    _ => None,
};

/// The rustc that compiled [`PTX`] in this build; empty when the committed copy is used.
pub const PTX_RUSTC: &str = env!("PEERPOOL_PTX_RUSTC");

/// The rustc release that rebuilds the kernels; every other toolchain embeds the committed
/// PTX and cubin as they are.
pub const PTX_PINNED_RUSTC: &str = env!("PEERPOOL_PTX_PINNED");

/// Whether this build's rustc was [`PTX_PINNED_RUSTC`] (and so rebuilt [`PTX`]).
pub const BUILT_ON_PINNED_RUSTC: bool = matches!(env!("PEERPOOL_PTX_ON_PINNED").as_bytes(), b"yes");

/// Where the embedded PTX came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PtxOrigin {
    /// Compiled from `device/` by this build's rustc.
    Built,
    /// `ptx/peerpool_kernels.ptx`, because this build's rustc is not [`PTX_PINNED_RUSTC`] (or,
    /// with a warning, the pinned one could not compile the kernels).
    Committed,
}

/// Kernel entry names, as they appear in the PTX.
pub mod entry {
    /// `(words: *mut u32, len: u64, seed: u32)`: `words[i] = pattern(i, seed)`.
    pub const FILL: &str = "pp_fill";
    /// `(words: *const u32, len: u64, seed: u32, result: *mut u64)`: `result[0] +=` mismatches,
    /// `result[1] = min(result[1], first mismatching index)`; start `result` at `[0, u64::MAX]`.
    pub const CHECK: &str = "pp_check";
    /// `(dst: *mut [u32; 4], src: *const [u32; 4], len: u64)`: 16-byte vector copy.
    pub const COPY16: &str = "pp_copy16";
    /// `(counters: *mut u32, slots: u64, reps: u32)`: each thread adds 1 to
    /// `counters[thread % slots]` `reps` times with `atom.add.sys`.
    pub const ATOMIC_ADD_SYS: &str = "pp_atomic_add_sys";
    /// `(src: *const [u32; 4], len: u64, sink: *mut u32, never: u32)`: reads `len` vectors,
    /// writes `sink[thread]` only if its fold equals `never`.
    pub const READ16: &str = "pp_read16";
    /// `pp_read16` through `ld.global.nc` (same arguments).
    pub const READ16_NC: &str = "pp_read16_nc";
    /// `(next: *const u32, steps: u64, out: *mut u32)`: one thread hops `index = next[index]`
    /// from 0, `steps` times; `out[0]` = the last index.
    pub const CHASE: &str = "pp_chase";
}

/// Every kernel the module holds.
pub const ENTRY_POINTS: [&str; 7] =
    [entry::FILL, entry::CHECK, entry::COPY16, entry::ATOMIC_ADD_SYS, entry::READ16, entry::READ16_NC, entry::CHASE];

/// `true` when `ptx` declares a kernel entry named `name`.
pub fn declares_entry(ptx: &str, name: &str) -> bool {
    ptx.lines().any(|line| {
        line.trim_start()
            .strip_prefix(".visible .entry ")
            .and_then(|rest| rest.strip_prefix(name))
            .is_some_and(|rest| rest.starts_with('('))
    })
}
