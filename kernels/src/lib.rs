//! peerpool's GPU kernels as the host sees them: the embedded PTX, its entry points, and the
//! byte pattern that the kernels also compile (one source file, `src/pattern.rs`).
//!
//! The kernels themselves are in `device/` (Rust, `#![no_core]`) and are built by `build.rs`.

pub mod pattern;

/// The PTX module holding every [`Kernel`].
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

/// The one list of kernels: each kernel's variant, its entry name in the PTX, and its
/// parameters in order. From it come [`Kernel`], [`ENTRY_POINTS`] and each kernel's parameter
/// list, which the host checks every launch against and the simulator decodes launches by. A
/// new kernel is one line here plus its device code in `device/lib.rs` (and its semantics in
/// the simulator, whose exhaustive match over [`Kernel`] names what is missing).
macro_rules! kernels {
    ($( $(#[$doc:meta])* $variant:ident = $entry:literal ( $($param:ident: $kind:ident),* ); )*) => {
        /// One of peerpool's kernels.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Kernel {
            $( $(#[$doc])* $variant, )*
        }

        impl Kernel {
            /// Every kernel, in the table's order ([`Kernel::index`]).
            pub const ALL: [Kernel; [$($entry),*].len()] = [$(Kernel::$variant),*];

            /// The entry name in the PTX and the cubin.
            pub const fn entry(self) -> &'static str {
                match self {
                    $(Kernel::$variant => $entry,)*
                }
            }

            /// The parameters, in order.
            pub const fn params(self) -> &'static [Param] {
                match self {
                    $(Kernel::$variant => &[$(Param { name: stringify!($param), kind: ParamKind::$kind }),*],)*
                }
            }
        }

        /// Every kernel's entry name, in the table's order.
        pub const ENTRY_POINTS: [&str; [$($entry),*].len()] = [$($entry),*];
    };
}

kernels! {
    /// `words[i] = pattern(i, seed)` for `i < len`.
    Fill = "pp_fill" (words: Ptr, len: U64, seed: U32);
    /// `result[0] +=` mismatching words, `result[1] = min(result[1], first mismatching index)`;
    /// start `result` at `[0, u64::MAX]`.
    Check = "pp_check" (words: Ptr, len: U64, seed: U32, result: Ptr);
    /// `len` 16-byte vectors from `src` to `dst`.
    Copy16 = "pp_copy16" (dst: Ptr, src: Ptr, len: U64);
    /// Each thread adds 1 to `counters[thread % slots]` `reps` times with `atom.add.sys`.
    AtomicAddSys = "pp_atomic_add_sys" (counters: Ptr, slots: U64, reps: U32);
    /// Reads `len` vectors; writes `sink[thread]` only if its fold equals `never`.
    Read16 = "pp_read16" (src: Ptr, len: U64, sink: Ptr, never: U32);
    /// `pp_read16` through `ld.global.nc`.
    Read16Nc = "pp_read16_nc" (src: Ptr, len: U64, sink: Ptr, never: U32);
    /// One thread hops `index = next[index]` from 0, `steps` times; `out[0]` = the last index.
    Chase = "pp_chase" (next: Ptr, steps: U64, out: Ptr);
}

impl Kernel {
    /// Its place in [`Kernel::ALL`], for tables indexed by kernel.
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// One parameter of a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param {
    /// Its name in the device code.
    pub name: &'static str,
    /// What is passed.
    pub kind: ParamKind,
}

/// What a kernel parameter holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// A device address (8 bytes).
    Ptr,
    /// A 64-bit count.
    U64,
    /// A 32-bit value.
    U32,
}

impl ParamKind {
    /// Its size and alignment in the parameter buffer, in bytes.
    pub const fn width(self) -> usize {
        match self {
            ParamKind::Ptr | ParamKind::U64 => 8,
            ParamKind::U32 => 4,
        }
    }
}

/// `true` when `ptx` declares a kernel entry named `name`.
pub fn declares_entry(ptx: &str, name: &str) -> bool {
    ptx.lines().any(|line| {
        line.trim_start()
            .strip_prefix(".visible .entry ")
            .and_then(|rest| rest.strip_prefix(name))
            .is_some_and(|rest| rest.starts_with('('))
    })
}
