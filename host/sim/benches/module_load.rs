//! How long a module takes to load against its size: `cuModuleLoadData` and the first launch of
//! kernels of 125k to 1M instructions, in two shapes nvcc writes: one long kernel (a fresh
//! register for each result, branches between blocks of eight), and a kernel that calls a
//! function per 50 instructions, each with a global variable of its own. Loading should grow
//! linearly with the module: the 1M kernel within about 4x the 250k one (divan prints each;
//! `docs/cpu/module_load.txt` has a run). Two ways: each load as a program's first, and loads
//! one after another, where the larger modules also pay for memory the allocator gave back to
//! the system after the load before (blocks over glibc's 32 MiB threshold are unmapped when
//! freed) while the smaller ones, whose blocks stay in the heap, do not.

use peerpool::driver::Stream;
use peerpool_sim::{PtxLaunch, SimDriver, Topology};
use std::sync::Arc;

fn main() {
    divan::main();
}

const HEADER: &str = ".version 9.0\n.target sm_90\n.address_size 64\n\n";
const STORE: &str = "ld.param.u64 %rd1, [p];\ncvta.to.global.u64 %rd2, %rd1;\nst.global.u32 [%rd2], %r1;\nret;\n}\n";

/// One kernel of about `n` instructions in blocks of eight, each ending in a branch to the
/// next, every result in a register of its own.
fn long_kernel(n: usize) -> String {
    let blocks = n / 8;
    let mut text = format!(
        "{HEADER}.visible .entry big(.param .u64 p)\n{{\n.reg .b32 %r<{r}>;\n.reg .b64 %rd<4>;\n\
         .reg .pred %p<{b}>;\nmov.u32 %r1, %tid.x;\n",
        r = blocks * 4 + 2,
        b = blocks + 1,
    );
    for i in 0..blocks {
        let (r, prev) = (2 + i * 4, if i == 0 { 1 } else { 1 + i * 4 });
        text.push_str(&format!(
            "$L__BB0_{i}:\nadd.s32 %r{r}, %r{prev}, {i};\nmul.lo.s32 %r{a}, %r{r}, 3;\nxor.b32 %r{b}, %r{a}, %r1;\n\
             shl.b32 %r{c}, %r{b}, 1;\nor.b32 %r{c}, %r{c}, 1;\nadd.s32 %r{c}, %r{c}, %r{b};\n\
             setp.gt.s32 %p{i}, %r{c}, {i};\n@%p{i} bra $L__BB0_{j};\n",
            a = r + 1,
            b = r + 2,
            c = r + 3,
            j = i + 1,
        ));
    }
    text.push_str(&format!("$L__BB0_{blocks}:\nmov.u32 %r1, %r{};\n{STORE}", blocks * 4 + 1));
    text
}

/// A kernel that calls a function of 50 instructions per 50 of its `n`, each function with a
/// global of its own.
fn many_functions(n: usize) -> String {
    let count = n / 50;
    let mut text = HEADER.to_owned();
    for f in 0..count {
        text.push_str(&format!(
            ".global .u32 g{f};\n.func (.param .b32 r) f{f}(.param .b32 a)\n{{\n.reg .b32 %h<3>;\n\
             ld.param.b32 %h1, [a];\nld.global.u32 %h2, [g{f}];\nadd.s32 %h1, %h1, %h2;\n"
        ));
        for i in 0..45 {
            text.push_str(&format!("add.s32 %h1, %h1, {i};\n"));
        }
        text.push_str("st.param.b32 [r], %h1;\nret;\n}\n");
    }
    text.push_str(".visible .entry big(.param .u64 p)\n{\n.reg .b32 %r<2>;\n.reg .b64 %rd<3>;\nmov.u32 %r1, 0;\n");
    for f in 0..count {
        text.push_str(&format!(
            "{{\n.param .b32 a;\n.param .b32 r;\nst.param.b32 [a], %r1;\ncall.uni (r), f{f}, (a);\nld.param.b32 %r1, [r];\n}}\n"
        ));
    }
    text.push_str(STORE);
    text
}

/// Loads `text` as a module and launches its kernel once, on one thread, then unloads it.
/// `first`: each sample starts as a program's first load does, the allocator's free memory
/// given back to the system beforehand (so every size pays for the memory it touches); else
/// the samples follow one another, each reusing what the one before freed.
fn load_and_launch(bencher: divan::Bencher, text: String, first: bool) {
    let mut image = text.into_bytes();
    image.push(0);
    let driver = Arc::new(SimDriver::new(Topology::two_h200()));
    let system = peerpool::System::with_driver(driver.clone()).expect("a system");
    let _ctx = system.enter(0).expect("device 0's context");
    let out = system.alloc_legacy(0, 4096).expect("memory for the kernel");
    let params = out.ptr().0.to_le_bytes();
    let shape = PtxLaunch { grid: [1, 1, 1], block: [1, 1, 1], shared: 0, params: &params };
    let give_back = move || {
        if first {
            // SAFETY: malloc_trim only returns free memory to the system; no pointer changes.
            #[cfg(all(target_os = "linux", target_env = "gnu"))]
            unsafe {
                libc::malloc_trim(0);
            }
        }
    };
    bencher.with_inputs(give_back).bench_local_values(|()| {
        let module = driver.module_load_image(&image).expect("the kernel loads");
        let function = driver.module_get_function(module, c"big").expect("its kernel");
        driver.launch_ptx(function, &shape, Stream::LEGACY).expect("the launch runs");
        driver.module_unload(module).expect("it unloads");
    });
}

const SIZES: [usize; 4] = [125_000, 250_000, 500_000, 1_000_000];

/// Each load as a program's first.
mod first_load {
    use super::*;

    #[divan::bench(args = SIZES, sample_count = 7, sample_size = 1)]
    fn one_long_kernel(bencher: divan::Bencher, instructions: usize) {
        load_and_launch(bencher, long_kernel(instructions), true);
    }

    #[divan::bench(args = SIZES, sample_count = 7, sample_size = 1)]
    fn a_function_per_50_instructions(bencher: divan::Bencher, instructions: usize) {
        load_and_launch(bencher, many_functions(instructions), true);
    }
}

/// Loads one after another in one process.
mod repeated {
    use super::*;

    #[divan::bench(args = SIZES, sample_count = 7, sample_size = 1)]
    fn one_long_kernel(bencher: divan::Bencher, instructions: usize) {
        load_and_launch(bencher, long_kernel(instructions), false);
    }

    #[divan::bench(args = SIZES, sample_count = 7, sample_size = 1)]
    fn a_function_per_50_instructions(bencher: divan::Bencher, instructions: usize) {
        load_and_launch(bencher, many_functions(instructions), false);
    }
}
