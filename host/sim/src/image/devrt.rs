//! The device runtime (NVIDIA's `libcudadevrt.a`, which numba-cuda links for
//! `cg.this_grid().sync()`): its archive holds machine code for each architecture, which the
//! simulator cannot run, so the JIT linker links [`PTX`], peerpool's own PTX for the functions
//! the simulator models, in its place.

/// peerpool's PTX for the device runtime's functions that the simulator models
/// (`cudaCGGetIntrinsicHandle`, `cudaCGSynchronize`).
pub const PTX: &str = include_str!("devrt.ptx");

/// Whether `library` (a JIT linker's library input) is NVIDIA's device runtime: an `ar`
/// archive whose symbol table names the device runtime's version symbol.
pub fn is_device_runtime(library: &[u8]) -> bool {
    const MARK: &[u8] = b"__CNPRT_VERSION_NUMBER__";
    // The symbol table comes first; its names lie within the archive's first few KiB.
    let head = &library[..library.len().min(1 << 16)];
    library.starts_with(b"!<arch>\n") && head.windows(MARK.len()).any(|w| w == MARK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_device_runtime_is_known_by_its_archive_and_version_symbol() {
        assert!(is_device_runtime(b"!<arch>\n/     0   0  0  440  `\n\0\0\0\x0c__CNPRT_VERSION_NUMBER__\0"));
        assert!(!is_device_runtime(b"!<arch>\n/     0   0  0  440  `\n\0\0\0\x0cmy_library\0"));
        assert!(!is_device_runtime(b"__CNPRT_VERSION_NUMBER__"));
    }

    #[test]
    fn its_ptx_runs_on_the_executor() {
        let module = peerpool_ptx::load(PTX).expect("the device runtime's PTX loads");
        let names: Vec<&str> = module.functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["cudaCGGetIntrinsicHandle", "cudaCGSynchronize"]);
        // A kernel that calls it reads the grid workspace, so an ordinary launch gets one too.
        assert!(module.functions[0].reads_grid_workspace);
    }
}
