//! `wmma.mma` against the H200's tensor cores: every case that `experiments/wmma_rounding`
//! wrote on the GPU (`data/wmma/`: A, B, C and the D the H200 computed, two 16x16x16 tiles of
//! random values each) runs through the executor, which must give D bit for bit.

mod common;

use common::Ram;
use peerpool_ptx::{Launch, Shape, load, run};
use std::path::{Path, PathBuf};

/// The kernel `k(a, b, c, d)`: D = A B + C of one tile, every matrix by rows.
fn ptx(input: &str, acc: &str) -> String {
    let regs = |name: &str, from: usize, n: usize| {
        let list: Vec<String> = (from..from + n).map(|i| format!("%{name}{i}")).collect();
        format!("{{{}}}", list.join(", "))
    };
    let ab = if input == "bf16" { 4 } else { 8 };
    let (cd, r) = if acc == "f32" { (8, "f") } else { (4, "r") };
    let (a, b) = (regs("r", 0, ab), regs("r", ab, ab));
    let (c, d) = (regs(r, 20, cd), regs(r, 30, cd));
    let types = if input == "bf16" { format!("{acc}.bf16.bf16.{acc}") } else { format!("{acc}.{acc}") };
    format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n\
         .visible .entry k(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd)\n{{\n\
         .reg .b32 %r<40>;\n.reg .f32 %f<40>;\n.reg .b64 %rd<4>;\n\
         ld.param.u64 %rd0, [pa];\nld.param.u64 %rd1, [pb];\nld.param.u64 %rd2, [pc];\nld.param.u64 %rd3, [pd];\n\
         wmma.load.a.sync.aligned.row.m16n16k16.global.{input} {a}, [%rd0], 16;\n\
         wmma.load.b.sync.aligned.row.m16n16k16.global.{input} {b}, [%rd1], 16;\n\
         wmma.load.c.sync.aligned.row.m16n16k16.global.{acc} {c}, [%rd2], 16;\n\
         wmma.mma.sync.aligned.row.row.m16n16k16.{types} {d}, {a}, {b}, {c};\n\
         wmma.store.d.sync.aligned.row.m16n16k16.global.{acc} [%rd3], {d}, 16;\nret;\n}}\n"
    )
}

fn cases() -> Vec<PathBuf> {
    // Found at run time: an archived test runs elsewhere than where it was built.
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = Path::new(&manifest).join("tests/data/wmma");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "bin"))
        .collect();
    files.sort();
    files
}

#[test]
fn products_are_the_h200s_tensor_cores_bit_for_bit() {
    let files = cases();
    assert!(files.len() >= 29, "the probe's cases are in tests/data/wmma");
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let input = if name.starts_with("bf16") { "bf16" } else { "f16" };
        let acc = if name.contains("__f16") { "f16" } else { "f32" };
        let module = load(&ptx(input, acc)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let bytes = std::fs::read(&file).unwrap();
        let (tiles, isz, asz) = (2, 2usize, if acc == "f32" { 4usize } else { 2 });
        let (ab, cd) = (tiles * 256 * isz, tiles * 256 * asz);
        assert_eq!(bytes.len(), 2 * ab + 2 * cd, "{name}");
        let (a, rest) = bytes.split_at(ab);
        let (b, rest) = rest.split_at(ab);
        let (c, want) = rest.split_at(cd);
        for t in 0..tiles {
            let tile = |m: &[u8], size: usize| m[t * 256 * size..(t + 1) * 256 * size].to_vec();
            let mut ram = Ram::default();
            let pa = ram.add(0x10_0000, tile(a, isz));
            let pb = ram.add(0x20_0000, tile(b, isz));
            let pc = ram.add(0x30_0000, tile(c, asz));
            let pd = ram.add(0x40_0000, vec![0; 256 * asz]);
            let params: Vec<u8> = [pa, pb, pc, pd].iter().flat_map(|p| p.to_le_bytes()).collect();
            let launch = Launch {
                shape: Shape { grid: [1, 1, 1], block: [32, 1, 1], shared: 0, params: &params },
                variables: &[],
                budget: 1 << 20,
                grid_sync: None,
                cluster: None,
                resident_blocks: 0,
            };
            run(module.kernel("k").unwrap(), &launch, &mut ram).unwrap_or_else(|t| panic!("{name}: {t:?}"));
            let (got, want) = (ram.bytes(pd), tile(want, asz));
            for (i, (g, w)) in got.chunks(asz).zip(want.chunks(asz)).enumerate() {
                assert_eq!(g, w, "{name}, tile {t}, element ({}, {})", i / 16, i % 16);
            }
        }
    }
}
