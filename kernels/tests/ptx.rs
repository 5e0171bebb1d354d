//! The embedded PTX: complete, fresh, and built from the pinned toolchain.

use peerpool_kernels::{ENTRY_POINTS, Kernel, PTX, PTX_ORIGIN, ParamKind, PtxOrigin, declares_entry};

#[test]
fn embedded_ptx_declares_every_entry_point() {
    for name in ENTRY_POINTS {
        assert!(declares_entry(PTX, name), "the PTX has no entry `{name}`");
    }
    assert!(!declares_entry(PTX, "pp_no_such_kernel"));
    // `pp_fill` must not match `pp_fill_more`, nor the other way round.
    assert!(!declares_entry(".visible .entry pp_fill_more(", "pp_fill"));
}

/// The parameters `entry` declares in `ptx`, as the table's kinds (`.u64 .ptr` is an address).
fn declared_params(ptx: &str, entry: &str) -> Vec<ParamKind> {
    let head = format!(".visible .entry {entry}(");
    let start = ptx.find(&head).unwrap_or_else(|| panic!("no entry {entry}")) + head.len();
    let list = &ptx[start..start + ptx[start..].find(')').expect("a closed parameter list")];
    list.split(',')
        .map(|p| {
            let words: Vec<&str> = p.split_whitespace().collect();
            match (words.get(1), words.get(2)) {
                (Some(&".u64"), Some(&".ptr")) => ParamKind::Ptr,
                (Some(&".u64"), _) => ParamKind::U64,
                (Some(&".u32"), _) => ParamKind::U32,
                other => panic!("{entry}: an unexpected parameter {p:?} ({other:?})"),
            }
        })
        .collect()
}

#[test]
fn the_kernel_table_matches_the_parameters_the_ptx_declares() {
    for kernel in Kernel::ALL {
        let table: Vec<ParamKind> = kernel.params().iter().map(|p| p.kind).collect();
        assert_eq!(table, declared_params(PTX, kernel.entry()), "{kernel:?}");
    }
    assert_eq!(ENTRY_POINTS.len(), Kernel::ALL.len());
}

#[test]
fn embedded_ptx_targets_sm_70_with_64_bit_addresses() {
    assert!(PTX.lines().any(|l| l.trim() == ".target sm_70"));
    assert!(PTX.lines().any(|l| l.trim() == ".address_size 64"));
}

/// Fails when `kernels/ptx/peerpool_kernels.ptx` no longer matches the kernel source.
/// Fix: `PEERPOOL_UPDATE_PTX=1 cargo build -p peerpool-kernels` and commit the file. Only the
/// pinned toolchain rebuilds the kernels; under another one this checks nothing.
#[test]
fn committed_ptx_is_fresh() {
    if !peerpool_kernels::BUILT_ON_PINNED_RUSTC {
        println!("not the pinned rustc {}: the committed PTX is embedded as it is", peerpool_kernels::PTX_PINNED_RUSTC);
        assert_eq!(PTX_ORIGIN, PtxOrigin::Committed);
        return;
    }
    assert_eq!(
        PTX_ORIGIN,
        PtxOrigin::Built,
        "the pinned toolchain (rust-toolchain.toml) must rebuild the kernels; a build warning says why it did not"
    );
    let committed = include_str!("../ptx/peerpool_kernels.ptx");
    assert!(
        committed == PTX,
        "ptx/peerpool_kernels.ptx is stale: run `PEERPOOL_UPDATE_PTX=1 cargo build -p peerpool-kernels` and commit it"
    );
}

/// The toolchain that rebuilds the kernels is the one the repository pins.
#[test]
fn the_pinned_rustc_is_the_toolchain_file_s() {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo and nextest set it");
    let file = std::path::Path::new(&manifest).join("../rust-toolchain.toml");
    let text = std::fs::read_to_string(&file).expect("rust-toolchain.toml beside the kernels");
    let channel = text.lines().find_map(|l| l.trim().strip_prefix("channel = ")).map(|c| c.trim_matches('"'));
    assert_eq!(channel, Some(peerpool_kernels::PTX_PINNED_RUSTC), "kernels/build.rs's PINNED and {}", file.display());
}

/// Whatever built it, the embedded PTX is the committed file or compiled to be equal to it, so
/// the committed cubin (made from that file) always goes with it.
#[test]
fn the_embedded_ptx_is_the_committed_file() {
    let committed = include_str!("../ptx/peerpool_kernels.ptx");
    assert!(committed == PTX, "embedded PTX ({PTX_ORIGIN:?}) differs from the committed file");
}

#[test]
fn kernels_use_vector_and_system_scope_instructions() {
    assert!(PTX.contains("ld.global.v4.b32"), "pp_copy16 must move 16-byte vectors");
    assert!(PTX.contains("st.global.v4.b32"));
    assert!(PTX.contains("atom.add.sys.u32"), "pp_atomic_add_sys must use system scope");
}

/// Fails when the committed sm_90 cubin was compiled from other PTX than the embedded one
/// (the build left it out). Fix: run `ci/gpu-sass.sh` on a machine with CUDA's ptxas and
/// commit the two files it writes.
#[test]
fn sm90_cubin_is_fresh_and_holds_every_entry() {
    let cubin =
        peerpool_kernels::SM90_CUBIN.expect("kernels/ptx/peerpool_kernels.sm_90.cubin is stale: run ci/gpu-sass.sh");
    assert!(cubin.starts_with(b"\x7fELF"), "a cubin is an ELF image");
    for name in ENTRY_POINTS {
        let symbol = [name.as_bytes(), b"\0"].concat();
        assert!(cubin.windows(symbol.len()).any(|w| w == symbol), "the cubin has no symbol `{name}`");
    }
}
