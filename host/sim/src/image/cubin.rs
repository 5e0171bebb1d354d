//! CUDA ELF cubins (machine code): kernels from the symbol table, their parameters and
//! resources from the `.nv.info` sections, globals from the symbols in the global and constant
//! banks. The headers are checked to lie within the bytes first ([`peerpool::driver::Cubin`]),
//! and every later read is checked again.
//!
//! What nvcc 13.0 writes, as read from its output for sm_90 and sm_80:
//! - a kernel is a `STT_FUNC` symbol with `STO_CUDA_ENTRY` (0x10) in `st_other` (device
//!   functions lack it);
//! - `.nv.info` holds records of the module, `.nv.info.<kernel>` those of one kernel. A record
//!   is a format byte and an attribute byte, then: nothing (format 1), two bytes (2 and 3), or
//!   a 16-bit length and that many bytes (4);
//! - `EIATTR_KPARAM_INFO` (0x17) describes one parameter: a 32-bit index, a 16-bit ordinal, a
//!   16-bit offset, and a word whose bits 18 to 31 are its size in bytes
//!   (`pp_test_add(int*, int, int)`: ordinals 0, 1, 2 at 0, 8, 12 with sizes 8, 4, 4);
//! - `EIATTR_REGCOUNT` (0x2f) and `EIATTR_FRAME_SIZE` (0x11) in `.nv.info`: a symbol index and
//!   a value; `EIATTR_MAX_THREADS` (0x05) and `EIATTR_REQNTID` (0x10): three 32-bit counts;
//! - `.nv.shared.<kernel>` is the kernel's static shared memory, 1 KiB reserved for the system
//!   included when the image reserves it (`.nv.reservedSmem.offset0`): a kernel of 400 bytes
//!   has a 1,424-byte section, and the H200 reported 400;
//! - `.nv.constant3` holds the module's `__constant__` variables; `__device__` variables are in
//!   `.nv.global` (zeroed, no bytes) and `.nv.global.init`.

use super::bytes::{c_str_at, slice, u8_at, u16_at, u32_at, u64_at};
use super::{Code, ComputeCapability, Contents, Global, Kernel, Param, Refusal};
use peerpool::driver::Cubin;

pub const MAGIC: &[u8] = b"\x7fELF";
pub const HEADER_BYTES: usize = 64;

const EM_CUDA: u64 = 190;
const SHT_SYMTAB: u64 = 2;
const SHT_NOBITS: u64 = 8;
const STT_OBJECT: u64 = 1;
const STT_FUNC: u64 = 2;
const STO_CUDA_ENTRY: u64 = 0x10;
/// Shared memory the driver keeps for itself in each block on compute capability 8.0 and
/// later (`CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK` on the H200).
const RESERVED_SHARED: u64 = 1024;

const MAX_THREADS: u64 = 0x05;
const REQNTID: u64 = 0x10;
const FRAME_SIZE: u64 = 0x11;
const KPARAM_INFO: u64 = 0x17;
const REGCOUNT: u64 = 0x2f;

/// What the cubin `elf` holds; machine code runs only on a device of its major version and at
/// least its minor one (an H200 refuses sm_80 code: `CUDA_ERROR_NO_BINARY_FOR_GPU`).
pub fn read(elf: &[u8], device: ComputeCapability) -> Result<Contents, Refusal> {
    let cubin = Cubin::new(elf).map_err(|_| Refusal::NotAnImage("an ELF whose headers reach past its bytes"))?;
    if u16_at(elf, 0x12) != Some(EM_CUDA) {
        return Err(Refusal::NotAnImage("an ELF that is not CUDA's"));
    }
    let cc = cubin.compute_capability();
    if cc.0 != device.0 || cc.1 > device.1 {
        return Err(Refusal::NoBinaryForGpu);
    }
    let sections = sections(elf).ok_or(Refusal::NotAnImage("an ELF with a broken section table"))?;
    let symbols = symbols(&sections).ok_or(Refusal::NotAnImage("an ELF with a broken symbol table"))?;
    let section = |name: &str| sections.iter().find(|s| s.name == name.as_bytes());
    let module_info = section(".nv.info").map(|s| records(s.data)).unwrap_or_default();
    let reserves_shared = symbols.iter().any(|s| s.name == b".nv.reservedSmem.offset0");
    let mut kernels = Vec::new();
    let mut globals = Vec::new();
    for (index, sym) in symbols.iter().enumerate() {
        let Ok(name) = std::str::from_utf8(sym.name) else { continue };
        if sym.kind == STT_FUNC && sym.other & STO_CUDA_ENTRY != 0 {
            let info = section(&format!(".nv.info.{name}")).map(|s| records(s.data)).unwrap_or_default();
            let per_symbol = |attr: u64| {
                module_info
                    .iter()
                    .filter(|r| r.attr == attr)
                    .find_map(|r| (u32_at(r.data, 0) == Some(index as u64)).then(|| u32_at(r.data, 4)).flatten())
            };
            let shared = section(&format!(".nv.shared.{name}")).map_or(0, |s| s.size);
            let shared = match reserves_shared {
                true => shared.saturating_sub(RESERVED_SHARED),
                false => shared,
            };
            let threads = info.iter().find(|r| r.attr == MAX_THREADS || r.attr == REQNTID).and_then(|r| {
                let dims = [u32_at(r.data, 0)?, u32_at(r.data, 4)?, u32_at(r.data, 8)?];
                Some(dims.iter().map(|&d| d.max(1)).product::<u64>())
            });
            kernels.push(Kernel {
                name: name.to_owned(),
                params: params(&info),
                shared_bytes: u32::try_from(shared).unwrap_or(u32::MAX),
                local_bytes: per_symbol(FRAME_SIZE).map_or(0, |v| v as u32),
                registers: per_symbol(REGCOUNT).map(|v| v as u32),
                max_threads: threads.map(|t| u32::try_from(t).unwrap_or(u32::MAX)),
                cluster: None,
                explicit_cluster: false,
            });
        } else if sym.kind == STT_OBJECT
            && let Some(home) = sections.get(sym.section)
            && is_variable_bank(home.name)
        {
            let init = match home.kind == SHT_NOBITS {
                true => Vec::new(),
                false => slice(home.data, sym.value, sym.size).map(<[u8]>::to_vec).unwrap_or_default(),
            };
            globals.push(Global { name: name.to_owned(), size: sym.size, init, addresses: false, managed: false });
        }
    }
    let const_bytes = section(".nv.constant3").map_or(0, |s| u32::try_from(s.size).unwrap_or(u32::MAX));
    Ok(Contents {
        code: Code::Machine(cc),
        kernels,
        globals,
        const_bytes,
        ptx: None,
        chosen: (super::machine_offer(cc), None),
    })
}

/// Sections whose variables `cuModuleGetGlobal` finds: the global banks and the constant banks
/// (bank 0 of each kernel holds its parameters).
fn is_variable_bank(name: &[u8]) -> bool {
    name.starts_with(b".nv.global") || (name.starts_with(b".nv.constant") && !name.starts_with(b".nv.constant0"))
}

struct Section<'a> {
    name: &'a [u8],
    kind: u64,
    /// Its bytes (none for `SHT_NOBITS`).
    data: &'a [u8],
    size: u64,
    link: u64,
}

/// Every section, with its name and bytes; `None` if the table or a name is out of bounds.
fn sections(elf: &[u8]) -> Option<Vec<Section<'_>>> {
    let (shoff, entsize) = (u64_at(elf, 0x28)?, u16_at(elf, 0x3a)?);
    let (count, names_at) = (u16_at(elf, 0x3c)?, u16_at(elf, 0x3e)?);
    let header = |i: u64| slice(elf, shoff.checked_add(i.checked_mul(entsize)?)?, entsize);
    let mut raw = Vec::new();
    for i in 0..count {
        let h = header(i)?;
        let (kind, offset, size) = (u32_at(h, 4)?, u64_at(h, 0x18)?, u64_at(h, 0x20)?);
        let data = if kind == SHT_NOBITS { &[][..] } else { slice(elf, offset, size)? };
        raw.push((u32_at(h, 0)?, kind, data, size, u32_at(h, 0x28)?));
    }
    let names = raw.get(usize::try_from(names_at).ok()?)?.2;
    raw.into_iter()
        .map(|(name, kind, data, size, link)| Some(Section { name: c_str_at(names, name)?, kind, data, size, link }))
        .collect()
}

struct Symbol<'a> {
    name: &'a [u8],
    kind: u64,
    other: u64,
    section: usize,
    value: u64,
    size: u64,
}

/// The symbols of the (first) symbol table, by index.
fn symbols<'a>(sections: &[Section<'a>]) -> Option<Vec<Symbol<'a>>> {
    let Some(table) = sections.iter().find(|s| s.kind == SHT_SYMTAB) else { return Some(Vec::new()) };
    let names = sections.get(usize::try_from(table.link).ok()?)?.data;
    table
        .data
        .chunks_exact(24)
        .map(|s| {
            Some(Symbol {
                name: c_str_at(names, u32_at(s, 0)?)?,
                kind: u8_at(s, 4)? & 0xf,
                other: u8_at(s, 5)?,
                section: usize::try_from(u16_at(s, 6)?).ok()?,
                value: u64_at(s, 8)?,
                size: u64_at(s, 16)?,
            })
        })
        .collect()
}

/// One `.nv.info` record.
struct Record<'a> {
    attr: u64,
    data: &'a [u8],
}

/// The records of an `.nv.info` section, up to the first that does not fit.
fn records(mut b: &[u8]) -> Vec<Record<'_>> {
    let mut out = Vec::new();
    while let (Some(format), Some(attr)) = (u8_at(b, 0), u8_at(b, 1)) {
        let (data, len) = match format {
            1 => (&b[2..2], 2),
            2 | 3 => match b.get(2..4) {
                Some(d) => (d, 4),
                None => break,
            },
            4 => {
                let Some(n) = u16_at(b, 2).map(|n| n as usize) else { break };
                match b.get(4..4 + n) {
                    Some(d) => (d, 4 + n),
                    None => break,
                }
            }
            _ => break,
        };
        out.push(Record { attr, data });
        b = &b[len..];
    }
    out
}

/// A kernel's parameters from its `EIATTR_KPARAM_INFO` records, by ordinal.
fn params(info: &[Record]) -> Vec<Param> {
    let mut by_ordinal: Vec<(u64, Param)> = info
        .iter()
        .filter(|r| r.attr == KPARAM_INFO)
        .filter_map(|r| {
            let (ordinal, offset, word) = (u16_at(r.data, 4)?, u16_at(r.data, 6)?, u32_at(r.data, 8)?);
            Some((ordinal, Param { offset: offset as usize, size: (word >> 18) as usize }))
        })
        .collect();
    by_ordinal.sort_by_key(|&(ordinal, _)| ordinal);
    by_ordinal.dedup_by_key(|&mut (ordinal, _)| ordinal);
    by_ordinal.into_iter().map(|(_, p)| p).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peerpools() -> &'static [u8] {
        peerpool_kernels::SM90_CUBIN.expect("embedded while its PTX hash matches (kernels/tests/ptx.rs)")
    }

    #[test]
    fn peerpools_own_cubin_reads_as_its_kernels_declare() {
        let c = read(peerpools(), (9, 0)).unwrap();
        assert_eq!(c.code, Code::Machine((9, 0)));
        for kernel in peerpool_kernels::Kernel::ALL {
            let read = c.kernel(kernel.entry().as_bytes()).unwrap_or_else(|| panic!("{}", kernel.entry()));
            let sizes: Vec<usize> = read.params.iter().map(|p| p.size).collect();
            let declared: Vec<usize> = kernel.params().iter().map(|p| p.kind.width()).collect();
            assert_eq!(sizes, declared, "{}", kernel.entry());
            assert!(read.registers.is_some(), "{}", kernel.entry());
        }
        assert_eq!(c.kernels.len(), peerpool_kernels::Kernel::ALL.len());
    }

    #[test]
    fn machine_code_runs_on_its_own_major_version_only() {
        assert_eq!(read(peerpools(), (8, 0)), Err(Refusal::NoBinaryForGpu));
        assert_eq!(read(peerpools(), (10, 0)), Err(Refusal::NoBinaryForGpu));
        assert!(read(peerpools(), (9, 9)).is_ok());
    }

    #[test]
    fn records_that_do_not_fit_end_the_list() {
        let b = [4u8, 0x17, 12, 0, 0, 0, 0, 0, 2, 0, 12, 0, 0, 0xf0, 0x11, 0, 3, 0x19, 16, 0, 4, 0x0a, 200, 0];
        let r = records(&b);
        assert_eq!(r.len(), 2);
        assert_eq!(params(&r), [Param { offset: 12, size: 4 }]);
    }

    #[test]
    fn a_cut_or_damaged_cubin_is_refused_not_read_past() {
        let elf = peerpools();
        for cut in [0, 10, 64, 100, elf.len() / 2, elf.len() - 1] {
            assert!(read(&elf[..cut], (9, 0)).is_err(), "cut at {cut}");
        }
        let mut wrong = elf.to_vec();
        wrong[0x3e] = 0xff; // the section-name table's index
        assert!(read(&wrong, (9, 0)).is_err());
    }
}
