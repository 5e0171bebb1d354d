//! peerpool's CUDA runtime for `peerpool sim`: where its libraries are, and what a program's
//! ELF file says of the runtime it uses. A program that needs `libcudart.so.N` gets peerpool's
//! preloaded (its RPATH may name NVIDIA's); one that carries NVIDIA's runtime statically is
//! told so, since that runtime reaches the driver through entry points the simulator lacks.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Names the directory holding the runtime's libraries when they are not beside this binary.
pub const DIR_ENV: &str = "PEERPOOL_CUDART_DIR";

/// One major version of the runtime peerpool serves.
pub struct Runtime {
    pub major: u32,
    /// Its file as cargo builds it (`target/<profile>/`).
    pub file: &'static str,
    /// The name programs need it by; it is installed under that name.
    pub soname: &'static str,
}

pub const RUNTIMES: [Runtime; 2] = [
    Runtime { major: 12, file: "libpeerpool_cudart12.so", soname: "libcudart.so.12" },
    Runtime { major: 13, file: "libpeerpool_cudart13.so", soname: "libcudart.so.13" },
];

/// The runtime's library file for `runtime` when it is there: in `$PEERPOOL_CUDART_DIR` when
/// that is set, else beside this binary (where a workspace build puts it).
pub fn find(runtime: &Runtime) -> Option<PathBuf> {
    let path = match std::env::var_os(DIR_ENV).filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir).join(runtime.file),
        None => crate::carried::beside_this_binary(runtime.file)?,
    };
    Some(path).filter(|path| path.is_file())
}

/// The program `command` names, found as `execvp` finds it: a name with a `/` as it is, else
/// the first executable regular file of that name in `$PATH`.
pub fn resolve(command: &OsStr) -> Option<PathBuf> {
    if command.as_bytes().contains(&b'/') {
        return Some(PathBuf::from(command));
    }
    // glibc's search path when PATH is unset.
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/bin:/usr/bin".into());
    path.as_bytes().split(|&b| b == b':').find_map(|dir| {
        let dir = if dir.is_empty() { Path::new(".") } else { Path::new(OsStr::from_bytes(dir)) };
        let candidate = dir.join(command);
        let meta = std::fs::metadata(&candidate).ok()?;
        (meta.is_file() && meta.permissions().mode() & 0o111 != 0).then_some(candidate)
    })
}

/// What a program's ELF file says of the CUDA runtime.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Program {
    /// Its `DT_NEEDED` entries.
    pub needed: Vec<String>,
    /// Whether a symbol table of its defines an entry point only NVIDIA's runtime holds.
    pub defines_runtime: bool,
}

/// Entry points of NVIDIA's runtime that a program linked with it statically defines:
/// registering its kernels, and the first call most programs make.
const RUNTIME_SYMBOLS: [&[u8]; 2] = [b"__cudaRegisterFatBinary", b"cudaGetDeviceCount"];

impl Program {
    /// Whether it needs `runtime` as a shared library.
    pub fn needs(&self, runtime: &Runtime) -> bool {
        self.needed.iter().any(|n| n == runtime.soname)
    }

    /// Whether it carries NVIDIA's runtime in itself rather than needing a shared one.
    pub fn carries_runtime(&self) -> bool {
        self.defines_runtime && !RUNTIMES.iter().any(|r| self.needs(r))
    }

    /// The program at `path`; `None` when it is not a 64-bit little-endian ELF file that
    /// reads whole (a script, another kind of file, one that cannot be read).
    pub fn read(path: &Path) -> Option<Program> {
        use std::os::unix::fs::OpenOptionsExt;
        // Not blocking on a FIFO named as the program: exec refuses it later.
        let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).ok()?;
        if !file.metadata().ok()?.is_file() {
            return None;
        }
        Elf::new(&file)?.program()
    }
}

const SHT_SYMTAB: u32 = 2;
const SHT_DYNAMIC: u32 = 6;
const SHT_NOBITS: u32 = 8;
const SHT_DYNSYM: u32 = 11;
const DT_NULL: u64 = 0;
const DT_NEEDED: u64 = 1;
const SHN_UNDEF: u16 = 0;

/// The section headers of an ELF64 little-endian file, read with `pread` (a program's
/// kernels may make it large; only its tables are read).
struct Elf<'a> {
    file: &'a std::fs::File,
    len: u64,
    sections: Vec<Section>,
}

#[derive(Clone, Copy)]
struct Section {
    kind: u32,
    offset: u64,
    size: u64,
    link: u32,
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(bytes[at..at + 2].try_into().unwrap())
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

impl<'a> Elf<'a> {
    fn new(file: &'a std::fs::File) -> Option<Elf<'a>> {
        let len = file.metadata().ok()?.len();
        let mut header = [0u8; 64];
        file.read_exact_at(&mut header, 0).ok()?;
        // ELFCLASS64, ELFDATA2LSB: what x86-64 and aarch64 Linux run.
        if !header.starts_with(b"\x7fELF\x02\x01") {
            return None;
        }
        let (shoff, shentsize, shnum) = (u64_at(&header, 0x28), u16_at(&header, 0x3a), u16_at(&header, 0x3c));
        let mut elf = Elf { file, len, sections: Vec::new() };
        if shoff == 0 || shentsize < 64 {
            return Some(elf);
        }
        let header_at = |elf: &Elf, i: u64| elf.bytes(shoff.checked_add(i.checked_mul(u64::from(shentsize))?)?, 64);
        // More sections than e_shnum holds: the count is the first header's sh_size.
        let count = match shnum {
            0 => u64_at(&header_at(&elf, 0)?, 32),
            n => u64::from(n),
        };
        if count.checked_mul(u64::from(shentsize))? > len {
            return None;
        }
        for i in 0..count {
            let h = header_at(&elf, i)?;
            elf.sections.push(Section {
                kind: u32_at(&h, 4),
                offset: u64_at(&h, 24),
                size: u64_at(&h, 32),
                link: u32_at(&h, 40),
            });
        }
        Some(elf)
    }

    /// `size` bytes at `offset`, which must lie in the file.
    fn bytes(&self, offset: u64, size: u64) -> Option<Vec<u8>> {
        if offset.checked_add(size)? > self.len {
            return None;
        }
        let mut bytes = vec![0; usize::try_from(size).ok()?];
        self.file.read_exact_at(&mut bytes, offset).ok()?;
        Some(bytes)
    }

    fn section_bytes(&self, section: Section) -> Option<Vec<u8>> {
        match section.kind {
            SHT_NOBITS => Some(Vec::new()),
            _ => self.bytes(section.offset, section.size),
        }
    }

    /// The string table a section links to.
    fn strings(&self, section: Section) -> Option<Vec<u8>> {
        self.section_bytes(*self.sections.get(usize::try_from(section.link).ok()?)?)
    }

    fn program(&self) -> Option<Program> {
        let mut program = Program::default();
        for &section in &self.sections {
            match section.kind {
                SHT_DYNAMIC => {
                    let (entries, strings) = (self.section_bytes(section)?, self.strings(section)?);
                    for entry in entries.chunks_exact(16) {
                        match u64_at(entry, 0) {
                            DT_NULL => break,
                            DT_NEEDED => {
                                let name = string_at(&strings, u64_at(entry, 8))?;
                                program.needed.push(String::from_utf8_lossy(name).into_owned());
                            }
                            _ => {}
                        }
                    }
                }
                SHT_SYMTAB | SHT_DYNSYM if !program.defines_runtime => {
                    let (symbols, strings) = (self.section_bytes(section)?, self.strings(section)?);
                    program.defines_runtime = symbols.chunks_exact(24).any(|symbol| {
                        u16_at(symbol, 6) != SHN_UNDEF
                            && string_at(&strings, u64::from(u32_at(symbol, 0)))
                                .is_some_and(|name| RUNTIME_SYMBOLS.contains(&name))
                    });
                }
                _ => {}
            }
        }
        Some(program)
    }
}

/// The NUL-terminated string at `offset` of a string table.
fn string_at(strings: &[u8], offset: u64) -> Option<&[u8]> {
    let rest = strings.get(usize::try_from(offset).ok()?..)?;
    Some(&rest[..rest.iter().position(|&b| b == 0)?])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_itself_reads_as_an_elf_file_needing_no_runtime() {
        let program = Program::read(Path::new("/proc/self/exe")).expect("a test binary is an ELF file");
        assert!(program.needed.iter().any(|n| n.starts_with("libc.so")), "{program:?}");
        assert!(!program.defines_runtime && !program.carries_runtime());
    }

    #[test]
    fn a_script_or_a_short_file_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        for (name, bytes) in [("script", &b"#!/bin/sh\necho hi\n"[..]), ("short", b"\x7fELF\x02\x01"), ("empty", b"")] {
            std::fs::write(dir.path().join(name), bytes).unwrap();
            assert_eq!(Program::read(&dir.path().join(name)), None, "{name}");
        }
    }

    #[test]
    fn a_name_without_a_slash_is_found_on_the_path() {
        let sh = resolve(OsStr::new("sh")).expect("sh is on the path");
        assert!(sh.is_absolute() && sh.ends_with("sh"), "{}", sh.display());
        assert_eq!(resolve(OsStr::new("./a.out")), Some(PathBuf::from("./a.out")));
        assert_eq!(resolve(OsStr::new("no-such-program-anywhere")), None);
    }

    #[test]
    fn strings_end_at_their_nul() {
        assert_eq!(string_at(b"\0libcudart.so.13\0", 1), Some(&b"libcudart.so.13"[..]));
        assert_eq!(string_at(b"unterminated", 0), None);
        assert_eq!(string_at(b"a\0", 9), None);
    }
}
