//! The loader on anything: arbitrary text, and nvcc's PTX cut short or with bytes changed. It
//! answers a module or an error, never a panic. The executor on any launch of nvcc's kernels:
//! any grid, block, shared memory and parameters run or trap, never panic.

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
