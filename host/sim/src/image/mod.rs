//! Module images read without being run: PTX text, CUDA ELF cubins, and fatbins (NVIDIA's
//! container of both, with compressed entries); and PTX images linked into one (`link.rs`), as
//! the driver's JIT linker links them. What a module holds is read from its image:
//! its kernels with their parameters and the facts `cuFuncGetAttribute` reports, and its
//! globals with their sizes and first bytes.
//!
//! Pure: bytes in, facts or a [`Refusal`] out. No input makes it panic or read outside the
//! bytes given (every read is checked; the property tests feed it arbitrary and cut bytes).
//! `cuModuleLoadData` gives a pointer and no length: [`claim`] says how many bytes an image
//! claims from its first ones, so a caller can check the claim before reading further.

mod bytes;
pub mod choose;
pub mod cubin;
pub mod devrt;
pub mod fatbin;
pub mod link;
pub mod ptx;

use choose::{Arch, Offer, Variant};
use peerpool::CudaCode;
use std::sync::Arc;

/// `(major, minor)`: `(9, 0)` for sm_90.
pub type ComputeCapability = (i32, i32);

/// A PTX ISA version, `(major, minor)`: `(9, 0)` for `.version 9.0`.
pub type Isa = (u32, u32);

/// One kernel parameter: where it lies in the parameter buffer and how many bytes it takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param {
    pub offset: usize,
    pub size: usize,
}

/// A kernel (an entry point) of an image, as its image describes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Kernel {
    pub name: String,
    pub params: Vec<Param>,
    /// Static shared memory, in bytes (what the driver reserves for the system excluded).
    pub shared_bytes: u32,
    /// Local memory per thread, in bytes.
    pub local_bytes: u32,
    /// Registers per thread, when the image says (machine code does; PTX only with `.maxnreg`).
    pub registers: Option<u32>,
    /// The most threads a block may have, when the image limits it (`.maxntid`, `.reqntid`).
    pub max_threads: Option<u32>,
    /// The clusters it must be launched in, when the image says (`.reqnctapercluster`).
    pub cluster: Option<[u32; 3]>,
    /// It must be launched in clusters (`.explicitcluster`).
    pub explicit_cluster: bool,
}

/// A variable in global or constant memory that `cuModuleGetGlobal` finds by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Global {
    pub name: String,
    pub size: u64,
    /// Its first bytes as the image initialises them (the rest is zero).
    pub init: Vec<u8>,
    /// Whether its initialiser names addresses (a vtable, a table of function pointers), which
    /// `init` holds as zero: the PTX executor gives them when it loads the module.
    pub addresses: bool,
    /// A `__managed__` variable: in managed memory, one for all of a library's contexts.
    pub managed: bool,
}

/// Which code a module runs: PTX compiled for the device when loaded, or machine code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    /// PTX for this virtual architecture, compiled for the device when loaded.
    Ptx(ComputeCapability),
    /// Machine code for this compute capability.
    Machine(ComputeCapability),
}

/// What a loaded image holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Contents {
    pub code: Code,
    pub kernels: Vec<Kernel>,
    pub globals: Vec<Global>,
    /// The module's constant memory (its `.const` variables), in bytes.
    pub const_bytes: u32,
    /// The PTX the simulator runs its kernels from: the image's own, or a fatbin's newest PTX
    /// the device compiles (also when the driver would run the fatbin's machine code). `None`
    /// for machine code alone, which the simulator cannot run.
    pub ptx: Option<Arc<str>>,
    /// What the driver takes from the image, and the PTX the simulator runs (`None`: none).
    pub chosen: (Offer, Option<Offer>),
}

impl Contents {
    /// The kernel named `name`.
    pub fn kernel(&self, name: &[u8]) -> Option<&Kernel> {
        self.kernels.iter().find(|k| k.name.as_bytes() == name)
    }

    /// The global named `name`.
    pub fn global(&self, name: &[u8]) -> Option<&Global> {
        self.globals.iter().find(|g| g.name.as_bytes() == name)
    }
}

/// Why an image does not load.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Neither PTX, a cubin nor a fatbin, or one whose structure is broken.
    #[error("not an image: {0}")]
    NotAnImage(&'static str),
    /// PTX that does not compile.
    #[error("invalid PTX: {0}")]
    InvalidPtx(String),
    /// PTX of an ISA version newer than the driver's: the image's ISA and the newest the
    /// driver compiles (CUDA 13.0: PTX ISA 9.0).
    #[error("PTX ISA {}.{} is newer than the driver's {}.{}", .0.0, .0.1, .1.0, .1.1)]
    PtxVersion(Isa, Isa),
    /// PTX for a virtual architecture the device does not implement.
    #[error("PTX for sm_{0}{1} does not run on this device")]
    PtxTarget(i32, i32),
    /// No machine code for the device, nor PTX it can compile.
    #[error("no code for this device")]
    NoBinaryForGpu,
    /// Images that the simulated JIT linker cannot link into one.
    #[error("not linked: {0}")]
    Link(String),
}

impl Refusal {
    /// What the driver answers.
    pub fn code(&self) -> CudaCode {
        match self {
            Refusal::NotAnImage(_) => CudaCode::CUDA_ERROR_INVALID_IMAGE,
            Refusal::InvalidPtx(_) => CudaCode::CUDA_ERROR_INVALID_PTX,
            Refusal::PtxVersion(..) => CudaCode::CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
            Refusal::PtxTarget(..) => CudaCode::CUDA_ERROR_INVALID_PTX,
            Refusal::NoBinaryForGpu => CudaCode::CUDA_ERROR_NO_BINARY_FOR_GPU,
            Refusal::Link(_) => CudaCode::CUDA_ERROR_NOT_SUPPORTED,
        }
    }
}

/// The most bytes an image may claim. Real images are far smaller (a fatbin of one translation
/// unit is rarely over a few hundred MiB); a claim beyond this is a lie, not an image.
pub const MAX_IMAGE_BYTES: u64 = 1 << 30;

/// How long an image is, from its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    /// It is this many bytes (a cubin as far as its ELF headers reach, a fatbin as its header
    /// says). Past the bytes seen so far: read this many and ask again (an ELF's section table
    /// says where its sections end).
    Bytes(u64),
    /// Text up to its first NUL.
    Text,
    /// A fatbin wrapper (`__fatBinC_Wrapper_t`): the fatbin is at this address.
    Wrapper(u64),
}

/// How long the image starting with `prefix` claims to be. A prefix too short to tell claims
/// what it needs to be read further.
pub fn claim(prefix: &[u8]) -> Claim {
    if prefix.starts_with(cubin::MAGIC) {
        return match peerpool::driver::elf_extent(prefix) {
            Ok(end) => Claim::Bytes(end),
            Err(_) if prefix.len() < cubin::HEADER_BYTES => Claim::Bytes(cubin::HEADER_BYTES as u64),
            Err(_) => Claim::Bytes(prefix.len() as u64), // not an ELF it reads: refused whole
        };
    }
    match bytes::u32_at(prefix, 0).map(|m| m as u32) {
        Some(fatbin::MAGIC) => fatbin::claim(prefix),
        Some(fatbin::WRAPPER_MAGIC) => fatbin::wrapper_claim(prefix),
        _ => Claim::Text,
    }
}

/// What `image` holds for a device of compute capability `device` under a driver that compiles
/// PTX up to ISA `isa`: a cubin's, PTX's, or a fatbin's (`choose.rs` says which of its entries
/// the driver takes and which the simulator runs). A trailing NUL ends PTX.
pub fn read(image: &[u8], device: ComputeCapability, isa: Isa) -> Result<Contents, Refusal> {
    if image.starts_with(cubin::MAGIC) {
        return cubin::read(image, device);
    }
    if bytes::u32_at(image, 0).map(|m| m as u32) == Some(fatbin::MAGIC) {
        return read_fatbin(image, device, isa);
    }
    ptx::read(image, device, isa)
}

/// A fatbin's entry that the driver takes for `device`. Where that is machine code, the
/// module's kernels, globals and constants are read from the newest PTX the device may run, as
/// the simulator runs it; only what the driver reports of the machine code it runs (each
/// kernel's registers, local and shared memory and thread limit) is the cubin's. Without such
/// PTX the cubin alone is read, and its kernels cannot be launched.
fn read_fatbin(image: &[u8], device: ComputeCapability, isa: Isa) -> Result<Contents, Refusal> {
    let entries = fatbin::entries(image)?;
    let offers: Vec<Offer> = entries.iter().map(fatbin::Entry::offer).collect();
    let choice = choose::choose(&offers, device);
    let driver = choice.driver.ok_or(Refusal::NoBinaryForGpu)?;
    // Chosen by its header: an entry that then fails to decompress is
    // `CUDA_ERROR_NO_BINARY_FOR_GPU`, as an H200 answered a fatbin whose chosen entry was damaged.
    let taken = entries[driver].bytes().map_err(|_| Refusal::NoBinaryForGpu)?;
    if offers[driver].ptx {
        let mut contents = ptx::read(&taken, device, isa)?;
        contents.chosen = (offers[driver], Some(offers[driver]));
        return Ok(contents);
    }
    let machine = cubin::read(&taken, device)?;
    let ptx = choice.simulator.and_then(|i| {
        let text = entries[i].bytes().ok()?;
        Some((i, ptx::read(&text, device, ptx::NEWEST_ISA).ok()?))
    });
    let Some((i, mut contents)) = ptx else {
        return Ok(Contents { chosen: (offers[driver], None), ..machine });
    };
    let compiled: std::collections::HashMap<&str, &Kernel> =
        machine.kernels.iter().map(|k| (k.name.as_str(), k)).collect();
    for kernel in &mut contents.kernels {
        if let Some(m) = compiled.get(kernel.name.as_str()) {
            kernel.registers = m.registers;
            kernel.local_bytes = m.local_bytes;
            kernel.shared_bytes = m.shared_bytes;
            kernel.max_threads = m.max_threads.or(kernel.max_threads);
        }
    }
    contents.code = machine.code;
    contents.chosen = (offers[driver], Some(offers[i]));
    Ok(contents)
}

/// `what` an image offers, as nvcc names it (`sm_90 machine code`, `compute_90a PTX`).
pub fn describe(offer: Offer) -> String {
    match offer.ptx {
        true => format!("{} PTX", offer.arch.name("compute")),
        false => format!("{} machine code", offer.arch.name("sm")),
    }
}

/// An offer of machine code for `cc`, as a cubin's header gives it.
pub(crate) fn machine_offer(cc: ComputeCapability) -> Offer {
    Offer { ptx: false, arch: Arch { cc, variant: Variant::Plain } }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_image_claims_what_its_kind_says() {
        assert_eq!(claim(b".version 9.0"), Claim::Text);
        assert_eq!(claim(b""), Claim::Text);
        assert_eq!(claim(b"\x7fELF"), Claim::Bytes(64), "an ELF header is read whole first");
        let mut fat = fatbin::MAGIC.to_le_bytes().to_vec();
        assert_eq!(claim(&fat), Claim::Bytes(16));
        fat.extend([1, 0, 16, 0]);
        fat.extend(100u64.to_le_bytes());
        assert_eq!(claim(&fat), Claim::Bytes(116));
    }

    #[test]
    fn section_headers_far_away_are_claimed_not_read() {
        let mut elf = [0u8; 64];
        elf[..7].copy_from_slice(b"\x7fELF\x02\x01\x01");
        elf[0x28..0x30].copy_from_slice(&(1u64 << 40).to_le_bytes());
        elf[0x3a] = 64;
        elf[0x3c] = 1;
        assert_eq!(claim(&elf), Claim::Bytes((1 << 40) + 64));
        assert!(matches!(read(&elf, (9, 0), ptx::NEWEST_ISA), Err(Refusal::NotAnImage(_))));
    }

    proptest! {
        #[test]
        fn any_bytes_are_read_or_refused_without_a_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = claim(&bytes);
            let _ = read(&bytes, (9, 0), ptx::NEWEST_ISA);
        }

        #[test]
        fn real_images_cut_or_damaged_are_read_or_refused_without_a_panic(
            which in 0usize..2,
            cut in any::<proptest::sample::Index>(),
            at in any::<proptest::sample::Index>(),
            flip in any::<u8>(),
        ) {
            let whole: &[u8] = match which {
                0 => peerpool_kernels::SM90_CUBIN.unwrap_or_default(),
                _ => peerpool_kernels::PTX.as_bytes(),
            };
            prop_assume!(!whole.is_empty());
            let mut bytes = whole[..cut.index(whole.len() + 1)].to_vec();
            if !bytes.is_empty() {
                let i = at.index(bytes.len());
                bytes[i] ^= flip;
            }
            let _ = claim(&bytes);
            let _ = read(&bytes, (9, 0), ptx::NEWEST_ISA);
        }

        #[test]
        fn text_after_a_ptx_header_is_read_or_refused_without_a_panic(tail in "[ -~\n\t]{0,300}") {
            let text = format!(".version 9.0\n.target sm_90\n.address_size 64\n{tail}");
            let _ = read(text.as_bytes(), (9, 0), ptx::NEWEST_ISA);
        }
    }
}
