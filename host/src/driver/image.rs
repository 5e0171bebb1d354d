//! What `cuModuleLoadData` is given, checked so that the driver never reads past the image.
//!
//! `cuModuleLoadData` takes a pointer and no length: the driver reads PTX up to its NUL and a
//! cubin as far as its ELF headers say. A [`ModuleImage`] is therefore either a `CStr` or a
//! [`Cubin`] whose headers were checked to lie inside the bytes given.

use std::ffi::CStr;

/// What `cuModuleLoadData` is given.
#[derive(Clone, Copy, Debug)]
pub enum ModuleImage<'a> {
    /// PTX text, compiled by the driver's JIT for the current device (or taken from its cache).
    Ptx(&'a CStr),
    /// A cubin: machine code for one compute capability, loaded without a JIT.
    Cubin(Cubin<'a>),
}

/// A CUDA ELF image whose headers, program segments and sections all lie within its bytes.
#[derive(Clone, Copy, Debug)]
pub struct Cubin<'a> {
    elf: &'a [u8],
    compute_capability: (i32, i32),
}

/// Why bytes are not a cubin the driver may be given.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    /// Not a 64-bit little-endian ELF file.
    #[error("not a 64-bit little-endian ELF image")]
    NotElf,
    /// A header table, segment or section reaches past the end of the bytes.
    #[error("the ELF headers describe {needed} bytes, but only {given} were given")]
    Truncated {
        /// How far the headers reach.
        needed: u64,
        /// The length of the bytes.
        given: usize,
    },
}

impl<'a> Cubin<'a> {
    /// Checks `elf` and reads the compute capability it was compiled for from its flags.
    pub fn new(elf: &'a [u8]) -> Result<Cubin<'a>, ImageError> {
        let needed = elf_extent(elf)?;
        if needed > elf.len() as u64 {
            return Err(ImageError::Truncated { needed, given: elf.len() });
        }
        Ok(Cubin { elf, compute_capability: sm_of(elf) })
    }

    /// The bytes.
    pub fn elf(&self) -> &'a [u8] {
        self.elf
    }

    /// `(major, minor)` from the ELF flags: `(9, 0)` for sm_90.
    pub fn compute_capability(&self) -> (i32, i32) {
        self.compute_capability
    }
}

const HEADER: usize = 64;

fn u16_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?) as u64)
}

fn u32_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?) as u64)
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// How many bytes the ELF image starting at `b` claims: the furthest end of its header, its two
/// header tables, its program segments and its sections (`SHT_NOBITS` sections hold no bytes).
/// Reads only what lies within `b`: a table that does not fit is reported by its end.
pub fn elf_extent(b: &[u8]) -> Result<u64, ImageError> {
    if b.len() < HEADER || &b[..4] != b"\x7fELF" || b[4] != 2 || b[5] != 1 {
        return Err(ImageError::NotElf);
    }
    let field = |v: Option<u64>| v.ok_or(ImageError::NotElf);
    let (phoff, shoff) = (field(u64_at(b, 0x20))?, field(u64_at(b, 0x28))?);
    let (phentsize, phnum) = (field(u16_at(b, 0x36))?, field(u16_at(b, 0x38))?);
    let (shentsize, shnum) = (field(u16_at(b, 0x3a))?, field(u16_at(b, 0x3c))?);
    let table_end = |off: u64, size: u64, n: u64| off.checked_add(size * n).ok_or(ImageError::NotElf);
    let (ph_end, sh_end) = (table_end(phoff, phentsize, phnum)?, table_end(shoff, shentsize, shnum)?);
    let mut end = (HEADER as u64).max(ph_end).max(sh_end);
    if end > b.len() as u64 {
        return Ok(end);
    }
    let too_small = (phnum > 0 && phentsize < 0x38) || (shnum > 0 && shentsize < 0x40);
    if too_small {
        return Err(ImageError::NotElf);
    }
    for i in 0..phnum {
        let at = (phoff + i * phentsize) as usize;
        let (offset, size) = (field(u64_at(b, at + 0x08))?, field(u64_at(b, at + 0x20))?);
        end = end.max(offset.checked_add(size).ok_or(ImageError::NotElf)?);
    }
    for i in 0..shnum {
        let at = (shoff + i * shentsize) as usize;
        const NOBITS: u64 = 8;
        if field(u32_at(b, at + 0x04))? != NOBITS {
            let (offset, size) = (field(u64_at(b, at + 0x18))?, field(u64_at(b, at + 0x20))?);
            end = end.max(offset.checked_add(size).ok_or(ImageError::NotElf)?);
        }
    }
    Ok(end)
}

/// The SM a CUDA ELF was built for, from `e_flags`: bits 8-15 from ABI version 8 on (CUDA 12.8's
/// ptxas writes 0x06005a04 for sm_90), the low byte before.
fn sm_of(b: &[u8]) -> (i32, i32) {
    let flags = u32_at(b, 0x30).unwrap_or(0);
    let sm = if b[8] >= 8 { (flags >> 8) & 0xff } else { flags & 0xff } as i32;
    (sm / 10, sm % 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_cubin_is_whole_and_for_sm_90() {
        let elf = peerpool_kernels::SM90_CUBIN.expect("embedded while its PTX hash matches (kernels/tests/ptx.rs)");
        let cubin = Cubin::new(elf).unwrap();
        assert_eq!(cubin.compute_capability(), (9, 0));
        assert_eq!(elf_extent(elf).unwrap(), elf.len() as u64);
    }

    #[test]
    fn a_cut_or_foreign_image_is_refused() {
        assert_eq!(Cubin::new(b"not an elf").unwrap_err(), ImageError::NotElf);
        let elf = peerpool_kernels::SM90_CUBIN.expect("embedded while its PTX hash matches (kernels/tests/ptx.rs)");
        let cut = &elf[..elf.len() - 1];
        assert!(matches!(Cubin::new(cut), Err(ImageError::Truncated { .. })), "{:?}", Cubin::new(cut));
        assert!(matches!(Cubin::new(&elf[..100]), Err(ImageError::Truncated { .. })));
    }
}
