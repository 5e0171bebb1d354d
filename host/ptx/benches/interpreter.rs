//! Thread-instructions per second on kernels of the corpus: divan's items are the
//! instructions a launch runs over all its threads (`Ran::instructions`).

use divan::counter::ItemsCount;
use peerpool_ptx::{Fault, Flat, Launch, Module, Shape, load, run};

fn main() {
    divan::main();
}

/// Input and output as two regions, the rest illegal.
struct Buffers {
    input: Vec<u8>,
    output: Vec<u8>,
}

const IN: u64 = 0x1000_0000;
const OUT: u64 = 0x2000_0000;

impl Flat for Buffers {
    fn span(&mut self, addr: u64, len: usize) -> Result<&mut [u8], Fault> {
        let (base, bytes) = if addr >= OUT { (OUT, &mut self.output) } else { (IN, &mut self.input) };
        let at = addr.checked_sub(base).ok_or(Fault::Illegal)? as usize;
        bytes.get_mut(at..at + len).ok_or(Fault::Illegal)
    }
}

fn module() -> Module {
    load(include_str!("../tests/corpus/corpus.ptx")).unwrap()
}

/// (kernel, blocks, threads a block, input words, output words, n)
const KERNELS: [(&str, u32, u32, usize, usize, u32); 6] = [
    ("saxpy", 8, 256, 1 << 17, 1 << 16, 1 << 16),
    ("int_arith", 8, 128, 2048, 8192, 1024),
    ("reduce_shared", 16, 256, 4096, 16, 4096),
    ("warp_reduce_down", 16, 256, 4096, 128, 4096),
    ("collatz", 8, 128, 1024, 1024, 1024),
    ("f32_rounding", 8, 64, 1536, 12288, 512),
];

fn launch<'m>(m: &'m Module, name: &str) -> (u64, impl FnMut() + 'm) {
    let &(name, grid, block, in_words, out_words, n) =
        KERNELS.iter().find(|k| k.0 == name).expect("a kernel of KERNELS");
    let kernel = m.kernel(name).unwrap();
    let mut params = IN.to_le_bytes().to_vec();
    params.extend(OUT.to_le_bytes());
    params.extend(n.to_le_bytes());
    let input: Vec<u8> = (0..in_words as u32).flat_map(|i| i.wrapping_mul(0x9e37_79b9).to_le_bytes()).collect();
    let mut mem = Buffers { input, output: vec![0; out_words * 4] };
    let mut go = move || {
        let launch = Launch {
            shape: Shape { grid: [grid, 1, 1], block: [block, 1, 1], shared: 0, params: &params },
            variables: &[],
            budget: u64::MAX,
            grid_sync: None,
            cluster: None,
            resident_blocks: 0,
        };
        run(kernel, &launch, &mut mem).unwrap().instructions
    };
    let instructions = go();
    (instructions, move || {
        go();
    })
}

/// The kernels of KERNELS, by name.
#[divan::bench(args = ["saxpy", "int_arith", "reduce_shared", "warp_reduce_down", "collatz", "f32_rounding"])]
fn kernel(bencher: divan::Bencher, name: &str) {
    let m = module();
    let (instructions, go) = launch(&m, name);
    bencher.counter(ItemsCount::new(instructions)).bench_local(go);
}
