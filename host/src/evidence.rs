//! What verifying an ordered pair showed ([`Evidence`]), kept by the [`System`](crate::System)
//! per pair (the verification itself is `grant/verify.rs`), and the default scratch size.

/// Default probe buffer size: 1 MiB per side ([`System::set_scratch_bytes`](crate::System::set_scratch_bytes)
/// changes it).
pub const PROBE_BYTES: u64 = 1 << 20;

/// What verifying one ordered pair showed. Cached by the [`System`](crate::System) until
/// [`System::forget_evidence`](crate::System::forget_evidence).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Evidence {
    /// The pool owner.
    pub owner: usize,
    /// The accessing device.
    pub accessor: usize,
    /// Bytes checked in each step.
    pub bytes_per_step: u64,
    /// Whether the owner's kernels were checked on the accessor's memory too (steps 5, 6):
    /// false when the owner cannot access the accessor.
    pub reverse_checked: bool,
}
