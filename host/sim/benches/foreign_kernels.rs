//! Thread-instructions per second of corpus kernels run by the simulator on pool memory, every
//! global access checked against the launching device's view: the executor's benchmark
//! (`host/ptx/benches/interpreter.rs`) with the simulator's memory in place of plain bytes.
//! divan's items are the instructions a launch runs over all its threads, counted by a run of
//! the same launch on the executor alone.

use divan::counter::ItemsCount;
use peerpool::driver::Stream;
use peerpool::{PoolOptions, System};
use peerpool_ptx::{Fault, Flat, Launch, Shape};
use peerpool_sim::{PtxLaunch, SimDriver, Topology};
use std::sync::Arc;

fn main() {
    divan::main();
}

const CORPUS: &str = include_str!("../../ptx/tests/corpus/corpus.ptx");

/// (kernel, blocks, threads a block, input words, output words, n): as the executor's bench.
const KERNELS: [(&str, u32, u32, usize, usize, u32); 3] = [
    ("saxpy", 8, 256, 1 << 17, 1 << 16, 1 << 16),
    ("int_arith", 8, 128, 2048, 8192, 1024),
    ("f32_rounding", 8, 64, 1536, 12288, 512),
];

/// The input words, as the executor's bench makes them.
fn input(words: usize) -> Vec<u8> {
    (0..words as u32).flat_map(|i| i.wrapping_mul(0x9e37_79b9).to_le_bytes()).collect()
}

/// How many thread-instructions the launch runs, counted by the executor on plain bytes.
fn instructions(name: &str, grid: u32, block: u32, in_words: usize, out_words: usize, n: u32) -> u64 {
    struct Bytes(Vec<u8>, Vec<u8>);
    impl Flat for Bytes {
        fn span(&mut self, addr: u64, len: usize) -> Result<&mut [u8], Fault> {
            let (base, bytes) =
                if addr >= 0x2000_0000 { (0x2000_0000, &mut self.1) } else { (0x1000_0000, &mut self.0) };
            let at = addr.checked_sub(base).ok_or(Fault::Illegal)? as usize;
            bytes.get_mut(at..at + len).ok_or(Fault::Illegal)
        }
    }
    let module = peerpool_ptx::load(CORPUS).expect("the corpus loads");
    let params = [0x1000_0000u64.to_le_bytes().as_slice(), &0x2000_0000u64.to_le_bytes(), &n.to_le_bytes()].concat();
    let shape = Shape { grid: [grid, 1, 1], block: [block, 1, 1], shared: 0, params: &params };
    let launch = Launch { shape, variables: &[], budget: u64::MAX, grid_sync: None, cluster: None, resident_blocks: 0 };
    let mut memory = Bytes(input(in_words), vec![0; out_words * 4]);
    peerpool_ptx::run(module.kernel(name).expect("a corpus kernel"), &launch, &mut memory)
        .expect("it runs")
        .instructions
}

#[divan::bench(args = ["saxpy", "int_arith", "f32_rounding"])]
fn kernel(bencher: divan::Bencher, name: &str) {
    let &(name, grid, block, in_words, out_words, n) = KERNELS.iter().find(|k| k.0 == name).expect("a kernel");
    let driver = Arc::new(SimDriver::new(Topology::two_h200()));
    let system = System::with_driver(driver.clone()).expect("a system on the simulator");
    let _ctx = system.enter(0).expect("device 0's context");
    let pool = system.create_pool(0, PoolOptions::default()).expect("a pool");
    let (inp, out) =
        (system.alloc(pool.as_ref(), in_words * 4).unwrap(), system.alloc(pool.as_ref(), out_words * 4).unwrap());
    inp.write(&input(in_words)).expect("the input");
    let module = driver.module_load_image(CORPUS.as_bytes()).expect("the corpus loads");
    let symbol = std::ffi::CString::new(name).unwrap();
    let function = driver.module_get_function(module, &symbol).expect("a corpus kernel");
    let params = [inp.ptr().0.to_le_bytes().as_slice(), &out.ptr().0.to_le_bytes(), &n.to_le_bytes()].concat();
    let shape = PtxLaunch { grid: [grid, 1, 1], block: [block, 1, 1], shared: 0, params: &params };
    let items = instructions(name, grid, block, in_words, out_words, n);
    bencher.counter(ItemsCount::new(items)).bench_local(|| {
        driver.launch_ptx(function, &shape, Stream::LEGACY).expect("the launch runs");
    });
    assert!(driver.sticky_error().is_none(), "no launch faulted");
}
