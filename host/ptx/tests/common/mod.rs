//! What the integration tests share: a memory of plain byte regions and small kernels.
#![allow(dead_code)]

pub mod half;
pub mod oracle;

use peerpool_ptx::{Fault, Flat, Launch, Module, Shape, load};

/// Device memory as regions of bytes at addresses; anything else is illegal.
#[derive(Default)]
pub struct Ram {
    pub regions: Vec<(u64, Vec<u8>)>,
    /// What the kernels wrote (device printf, failed asserts).
    pub printed: String,
}

impl Ram {
    pub fn add(&mut self, base: u64, bytes: Vec<u8>) -> u64 {
        self.regions.push((base, bytes));
        base
    }

    pub fn bytes(&self, base: u64) -> &[u8] {
        &self.regions.iter().find(|r| r.0 == base).expect("a region there").1
    }

    pub fn words(&self, base: u64) -> Vec<u32> {
        self.bytes(base).chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
    }
}

impl Flat for Ram {
    fn span(&mut self, addr: u64, len: usize) -> Result<&mut [u8], Fault> {
        for (base, bytes) in &mut self.regions {
            if addr >= *base && addr + len as u64 <= *base + bytes.len() as u64 {
                let at = (addr - *base) as usize;
                return Ok(&mut bytes[at..at + len]);
            }
        }
        Err(Fault::Illegal)
    }

    fn output(&mut self, _: peerpool_ptx::Thread, _: peerpool_ptx::Output, text: &str) {
        self.printed.push_str(text);
    }
}

/// A kernel `k(.param .u64 p)` around `body`, with `%r<32>`, `%rd<16>`, `%p<8>`, `%f<8>`,
/// `%fd<8>` declared and, before `body`, `%r0` = `%tid.x` and `%rd0` = `p + 4 * %tid.x`.
/// The body's first line is line 12.
pub fn kernel(body: &str) -> Module {
    let text = format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p)\n{{\n.reg .pred %p<8>;\n.reg .b32 %r<32>;\n.reg .b64 %rd<16>;\n.reg .f32 %f<8>;\n.reg .f64 %fd<8>;\nmov.u32 %r0, %tid.x; ld.param.u64 %rd15, [p]; mul.wide.u32 %rd14, %r0, 4; add.s64 %rd0, %rd15, %rd14;\n{body}\n}}\n"
    );
    load(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Runs `module`'s `k` over one block of `threads` with an output of one word per thread;
/// the words, or the trap.
pub fn words(module: &Module, threads: u32) -> Result<Vec<u32>, peerpool_ptx::Trap> {
    let mut ram = Ram::default();
    let out = ram.add(0x1000, vec![0; threads as usize * 4]);
    let params = out.to_le_bytes();
    let launch = Launch {
        shape: Shape { grid: [1, 1, 1], block: [threads, 1, 1], shared: 0, params: &params },
        variables: &[],
        budget: 1 << 24,
        grid_sync: None,
        cluster: None,
        resident_blocks: 0,
    };
    peerpool_ptx::run(module.kernel("k").expect("k"), &launch, &mut ram)?;
    Ok(ram.words(out))
}
