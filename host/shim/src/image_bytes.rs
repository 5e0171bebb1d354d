//! The bytes of a module image a caller points at. `cuModuleLoadData` and `cuLibraryLoadData`
//! take a pointer and no length: the image says how long it is (`peerpool_sim::image::claim`),
//! and each claim is checked before it is read. A claim beyond any real image's size is
//! `CUDA_ERROR_UNKNOWN`, as NVIDIA's driver answered an ELF whose section headers lay 2^40 bytes
//! away; memory the claim reaches into that the process cannot read is the same answer, found
//! by copying through `process_vm_readv`, which fails where a plain read would fault.

use cudarc::driver::sys::CUresult;
use peerpool_sim::image::{Claim, MAX_IMAGE_BYTES, claim};
use std::ffi::c_void;

/// Whether a fatbin wrapper (`__fatBinC_Wrapper_t`) is taken in place of the fatbin it points
/// at: libraries take one, modules do not (as an H200 answered `cuModuleLoadData` and
/// `cuModuleLoadFatBinary`: `CUDA_ERROR_INVALID_IMAGE`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wrapper {
    Followed,
    Refused,
}

/// Bytes are copied this many at a time, so that a claim costs no more memory than the
/// process could actually read.
const CHUNK: usize = 1 << 20;

/// A copy of the image at `image`: as far as its headers claim, or text up to its NUL.
///
/// # Safety
/// None beyond what the driver API asks: `image` may be anything; what it claims is checked
/// readable before it is read (where the kernel offers `process_vm_readv`; elsewhere the
/// claim, once within [`MAX_IMAGE_BYTES`], is trusted as the driver trusts it).
pub(crate) unsafe fn image_bytes(image: *const c_void, wrapper: Wrapper) -> Result<Vec<u8>, CUresult> {
    if image.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    let mut at = image as usize;
    let mut followed = false;
    let mut bytes = readable(at, 64);
    // Each round reads further than the last (an ELF's section table, then its sections).
    for _ in 0..8 {
        match claim(&bytes) {
            Claim::Bytes(n) if n <= bytes.len() as u64 => {
                bytes.truncate(n as usize);
                return Ok(bytes);
            }
            Claim::Bytes(n) if n > MAX_IMAGE_BYTES => return Err(CUresult::CUDA_ERROR_UNKNOWN),
            Claim::Bytes(n) => {
                bytes = readable(at, n as usize);
                if (bytes.len() as u64) < n {
                    return Err(CUresult::CUDA_ERROR_UNKNOWN);
                }
            }
            Claim::Text => return text(at, bytes),
            Claim::Wrapper(fatbin) => {
                if wrapper == Wrapper::Refused || followed || fatbin == 0 {
                    return Err(CUresult::CUDA_ERROR_INVALID_IMAGE);
                }
                followed = true;
                at = fatbin as usize;
                bytes = readable(at, 64);
            }
        }
    }
    Err(CUresult::CUDA_ERROR_INVALID_IMAGE)
}

/// The text starting at `at`, of which `bytes` have been read: up to its first NUL.
fn text(at: usize, mut bytes: Vec<u8>) -> Result<Vec<u8>, CUresult> {
    loop {
        if let Some(end) = bytes.iter().position(|&b| b == 0) {
            bytes.truncate(end);
            return Ok(bytes);
        }
        if bytes.len() as u64 >= MAX_IMAGE_BYTES {
            return Err(CUresult::CUDA_ERROR_UNKNOWN);
        }
        // Up to the next page boundary at most, so that a NUL just before unreadable memory is
        // found.
        let next = at.saturating_add(bytes.len());
        let step = 4096 - next % 4096;
        let more = readable(next, step);
        if more.is_empty() {
            return Err(CUresult::CUDA_ERROR_UNKNOWN);
        }
        bytes.extend(more);
    }
}

/// The first of `len` bytes at address `at` that the process can read: all of them, or those
/// before the first that faults.
fn readable(at: usize, len: usize) -> Vec<u8> {
    let mut out = Vec::new();
    while out.len() < len {
        let Some(from) = at.checked_add(out.len()) else { break };
        let want = (len - out.len()).min(CHUNK);
        let mut chunk = vec![0u8; want];
        let got = copy_from(from, &mut chunk);
        out.extend_from_slice(&chunk[..got]);
        if got < want {
            break;
        }
    }
    out
}

/// Copies what of `into.len()` bytes at address `from` the process can read into `into`; the
/// bytes copied.
fn copy_from(from: usize, into: &mut [u8]) -> usize {
    let local = libc::iovec { iov_base: into.as_mut_ptr().cast::<c_void>(), iov_len: into.len() };
    let remote = libc::iovec { iov_base: from as *mut c_void, iov_len: into.len() };
    // SAFETY: the local vector is `into`, writable for its length; the remote one is only read,
    // by the kernel, which reports a fault instead of taking it.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    if n >= 0 {
        return n as usize;
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::EFAULT) => 0,
        // No process_vm_readv here (a seccomp filter, an old kernel): the caller's promise that
        // the image is whole is all there is, as for the driver.
        _ => {
            // SAFETY: the caller of `image_bytes` passed a pointer to an image that claims
            // these bytes (within MAX_IMAGE_BYTES); the driver API promises they are there.
            unsafe { std::ptr::copy_nonoverlapping(from as *const u8, into.as_mut_ptr(), into.len()) };
            into.len()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_elf_whose_sections_lie_far_away_is_unknown_not_read() {
        let mut elf = [0u8; 64];
        elf[..7].copy_from_slice(b"\x7fELF\x02\x01\x01");
        elf[0x28..0x30].copy_from_slice(&(1u64 << 40).to_le_bytes());
        elf[0x3a] = 64;
        elf[0x3c] = 1;
        // SAFETY: a live 64-byte array; nothing past it is read.
        let read = unsafe { image_bytes(elf.as_ptr().cast(), Wrapper::Refused) };
        assert_eq!(read, Err(CUresult::CUDA_ERROR_UNKNOWN));
    }

    /// Whether this kernel lets the process read itself through `process_vm_readv` (a seccomp
    /// filter may not): without it the claim is trusted and the next test would fault.
    fn reads_are_checked() -> bool {
        let mut into = [0u8; 1];
        let from = [7u8; 1];
        let local = libc::iovec { iov_base: into.as_mut_ptr().cast(), iov_len: 1 };
        let remote = libc::iovec { iov_base: from.as_ptr() as *mut c_void, iov_len: 1 };
        // SAFETY: both vectors describe live one-byte arrays.
        unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) == 1 }
    }

    #[test]
    fn memory_that_cannot_be_read_is_an_answer_not_a_fault() {
        if !reads_are_checked() {
            eprintln!("process_vm_readv is not allowed here: unreadable memory cannot be told apart");
            return;
        }
        assert!(readable(8, 64).is_empty(), "the first page is never mapped");
        // SAFETY: the pointer is checked readable before any read, so none happens.
        assert_eq!(unsafe { image_bytes(8 as *const c_void, Wrapper::Refused) }, Err(CUresult::CUDA_ERROR_UNKNOWN));
    }

    #[test]
    fn text_ends_at_its_nul_and_a_fatbin_at_its_claim() {
        let text = b"this is not PTX\0and this is not read";
        // SAFETY: a live, NUL-terminated array.
        assert_eq!(unsafe { image_bytes(text.as_ptr().cast(), Wrapper::Refused) }.unwrap(), b"this is not PTX");
        let mut fatbin = 0xBA55_ED50u32.to_le_bytes().to_vec();
        fatbin.extend([1, 0, 16, 0]);
        fatbin.extend(8u64.to_le_bytes());
        fatbin.extend([7u8; 8]);
        fatbin.extend([9u8; 100]); // past the claim
        // SAFETY: a live vector longer than the claim.
        let read = unsafe { image_bytes(fatbin.as_ptr().cast(), Wrapper::Refused) }.unwrap();
        assert_eq!(read, fatbin[..24]);
        let mut wrapper = 0x4662_43B1u32.to_le_bytes().to_vec();
        wrapper.extend(1u32.to_le_bytes());
        wrapper.extend((fatbin.as_ptr() as u64).to_le_bytes());
        wrapper.extend(0u64.to_le_bytes());
        // SAFETY: a live wrapper pointing at the live fatbin.
        let followed = unsafe { image_bytes(wrapper.as_ptr().cast(), Wrapper::Followed) }.unwrap();
        assert_eq!(followed, fatbin[..24]);
        // SAFETY: as above.
        let refused = unsafe { image_bytes(wrapper.as_ptr().cast(), Wrapper::Refused) };
        assert_eq!(refused, Err(CUresult::CUDA_ERROR_INVALID_IMAGE));
    }
}
