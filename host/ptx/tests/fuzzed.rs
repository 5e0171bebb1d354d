//! The loader on anything: arbitrary text, and nvcc's PTX cut short or with bytes changed. It
//! answers a module or an error, never a panic. The executor on any launch of nvcc's kernels:
//! any grid, block, shared memory and parameters run or trap, never panic; and on the corpus
//! with an instruction dropped, repeated or moved (a function without its `ret`, a branch
//! where it was not), whatever of it loads runs or traps.

use peerpool_ptx::{Fault, Flat, Launch, Shape};
use proptest::prelude::*;

/// A memory where every address is illegal but a window of 4 KiB.
struct Window(Vec<u8>);

impl Flat for Window {
    fn span(&mut self, addr: u64, len: usize) -> Result<&mut [u8], Fault> {
        let at = addr.checked_sub(0x4000).filter(|a| a + len as u64 <= 4096).ok_or(Fault::Illegal)? as usize;
        Ok(&mut self.0[at..at + len])
    }
}

const PTX: &str = include_str!("data/kernels.ptx");
const CORPUS: &str = include_str!("corpus/corpus.ptx");

/// `text` with its instruction line `at` (of those that end in `;` inside a body) dropped
/// (`how` 0), repeated after instruction `to` (1), or put in `to`'s place (2).
fn edited(text: &str, at: prop::sample::Index, to: prop::sample::Index, how: u8) -> String {
    let mut lines: Vec<&str> = text.lines().collect();
    let code: Vec<usize> =
        (0..lines.len()).filter(|&i| lines[i].starts_with('\t') && lines[i].ends_with(';')).collect();
    let (at, to) = (code[at.index(code.len())], code[to.index(code.len())]);
    match how {
        0 => _ = lines.remove(at),
        1 => lines.insert(to + 1, lines[at]),
        _ => lines[to] = lines[at],
    }
    lines.join("\n")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn any_text_loads_or_is_refused(text in "\\PC{0,300}") {
        let _ = peerpool_ptx::load(&text);
    }

    #[test]
    fn nvccs_ptx_cut_or_changed_loads_or_is_refused(cut in 0..PTX.len(), at in 0..PTX.len(), byte in 0x20u8..0x7f) {
        let _ = peerpool_ptx::load(&PTX[..cut]);
        let mut changed = PTX.as_bytes().to_vec();
        changed[at] = byte;
        if let Ok(text) = std::str::from_utf8(&changed) {
            let _ = peerpool_ptx::load(text);
        }
    }

    #[test]
    fn any_launch_of_nvccs_kernels_runs_or_traps(
        grid in 0u32..4, block in 0u32..80, shared in 0u32..2048,
        params in proptest::collection::vec(any::<u8>(), 0..24), base in prop_oneof![Just(0x4000u64), any::<u64>()],
    ) {
        let module = peerpool_ptx::load(PTX).unwrap();
        let mut bytes = base.to_le_bytes().to_vec();
        bytes.extend(params);
        for kernel in module.functions.iter().filter(|f| f.entry) {
            let launch = Launch {
                shape: Shape { grid: [grid, 1, 1], block: [block, 1, 1], shared, params: &bytes },
                variables: &[0x4000, 0x4100], budget: 100_000, grid_sync: None, cluster: None, resident_blocks: 0,
            };
            let _ = peerpool_ptx::run(kernel, &launch, &mut Window(vec![0; 4096]));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn the_corpus_with_an_instruction_dropped_repeated_or_moved_runs_or_traps(
        at in any::<prop::sample::Index>(), to in any::<prop::sample::Index>(), how in 0u8..3,
    ) {
        let Ok(module) = peerpool_ptx::load(&edited(CORPUS, at, to, how)) else { return Ok(()) };
        let mut bytes = Vec::new();
        for k in 0..8u64 {
            bytes.extend((0x4000 + 512 * k).to_le_bytes());
        }
        for kernel in module.functions.iter().filter(|f| f.entry) {
            let launch = Launch {
                shape: Shape { grid: [2, 1, 1], block: [64, 1, 1], shared: 256, params: &bytes },
                variables: &[0x4000, 0x4100], budget: 20_000, grid_sync: None, cluster: None, resident_blocks: 0,
            };
            let _ = peerpool_ptx::run(kernel, &launch, &mut Window(vec![0; 4096]));
        }
    }
}
