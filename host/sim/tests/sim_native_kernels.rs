//! peerpool's seven kernels have two implementations on the simulator: the hand-written
//! semantics in `kernels.rs`, and the executor running the PTX that ships
//! (`peerpool_kernels::PTX`). The hand-written ones stay as a fast path: the suites launch these
//! kernels over megabytes, which the executor would take a thousand times longer to
//! interpret. This test proves the two equal on every kernel, across sizes (empty, one,
//! partial and whole blocks, many rounds of the grid-stride loops) and launch shapes. They
//! must leave the same bytes, damage the same bytes over a faulty link, and fault together
//! when a kernel runs past its memory.

mod sim_support;

use peerpool::driver::{Function, KernelArg, LaunchShape, Stream};
use peerpool_sim::{LinkFault, PtxLaunch, SimDriver, Topology};
use sim_support::{granted_alloc, sim};

const BYTES: usize = 64 * 1024;

/// A launch of one of peerpool's kernels: the entry, the shape, and the arguments, where
/// `A` and `B` stand for the two allocations' addresses plus an offset.
#[derive(Clone, Copy, Debug)]
enum Arg {
    A(u64),
    B(u64),
    U64(u64),
    U32(u32),
}

/// Where a launch runs: on GPU 0, which holds both allocations, or on GPU 1, which holds `B` and
/// reaches `A` on GPU 0 over links that damage what they carry both ways. (Atomics stay on the
/// launching GPU there: natively a launch's atomics cross a link as one transfer, from PTX each
/// atomic does, so a faulty link damages them differently.)
#[derive(Clone, Copy, Debug)]
enum Gpu {
    Owner,
    Peer(LinkFault),
}

/// What one launch leaves: both allocations' bytes and the process's sticky error.
type Outcome = (Vec<u8>, Vec<u8>, Option<peerpool::CudaCode>);

/// Runs `entry` on `gpu` of a fresh simulator whose allocations start as `a` and `b`, natively or
/// from its PTX.
fn outcome(gpu: Gpu, entry: &str, shape: (u32, u32), args: &[Arg], a: &[u8], b: &[u8], from_ptx: bool) -> Outcome {
    let mut topology = Topology::two_h200();
    let accessor = match gpu {
        Gpu::Owner => 0,
        Gpu::Peer(fault) => {
            topology.set_fault(0, 1, Some(fault)).set_fault(1, 0, Some(fault));
            1
        }
    };
    let (d, system) = sim(topology);
    let (_pa, ma) = granted_alloc(&system, 0, 1, BYTES);
    let (_pb, mb) = granted_alloc(&system, accessor, 1, BYTES);
    let _ctx = system.enter(accessor).unwrap();
    ma.write(a).unwrap();
    mb.write(b).unwrap();
    let module = d.module_load_image(peerpool_kernels::PTX.as_bytes()).unwrap();
    let name = std::ffi::CString::new(entry).unwrap();
    let f = d.module_get_function(module, &name).unwrap();
    let args: Vec<KernelArg> = args
        .iter()
        .map(|arg| match *arg {
            Arg::A(off) => KernelArg::Ptr(peerpool::driver::DevicePtr(ma.ptr().0 + off)),
            Arg::B(off) => KernelArg::Ptr(peerpool::driver::DevicePtr(mb.ptr().0 + off)),
            Arg::U64(v) => KernelArg::U64(v),
            Arg::U32(v) => KernelArg::U32(v),
        })
        .collect();
    match from_ptx {
        true => launch_from_ptx(&d, f, shape, &args),
        false => {
            let shape = LaunchShape { grid: shape.0, block: shape.1 };
            d.launch_kernel(f, shape, Stream::LEGACY, &args).unwrap();
        }
    }
    let sticky = d.sticky_error();
    (d.peek(ma.ptr(), BYTES).unwrap(), d.peek(mb.ptr(), BYTES).unwrap(), sticky)
}

/// The parameter buffer as the driver lays it out: each argument aligned to its width.
fn launch_from_ptx(d: &SimDriver, f: Function, shape: (u32, u32), args: &[KernelArg]) {
    let mut params = Vec::new();
    for arg in args {
        let bytes = match *arg {
            KernelArg::Ptr(p) => p.0.to_le_bytes().to_vec(),
            KernelArg::U64(v) => v.to_le_bytes().to_vec(),
            KernelArg::U32(v) => v.to_le_bytes().to_vec(),
        };
        params.resize(params.len().next_multiple_of(bytes.len()), 0);
        params.extend(bytes);
    }
    let launch = PtxLaunch { grid: [shape.0, 1, 1], block: [shape.1, 1, 1], shared: 0, params: &params };
    d.launch_ptx(f, &launch, Stream::LEGACY).unwrap();
}

/// Deterministic bytes: a hash of the index.
fn bytes(seed: u32) -> Vec<u8> {
    (0..BYTES as u32).map(|i| (i.wrapping_mul(0x9e37_79b9) ^ seed).rotate_left(7) as u8).collect()
}

/// `next[i]` words for `pp_chase`: a walk over the first 1,024 words.
fn walk() -> Vec<u8> {
    let mut b = vec![0u8; BYTES];
    for i in 0..1024u32 {
        b[i as usize * 4..][..4].copy_from_slice(&((i * 7 + 3) % 1024).to_le_bytes());
    }
    b
}

fn same(entry: &str, shape: (u32, u32), args: &[Arg], a: &[u8], b: &[u8]) {
    same_on(Gpu::Owner, entry, shape, args, a, b);
}

fn same_on(gpu: Gpu, entry: &str, shape: (u32, u32), args: &[Arg], a: &[u8], b: &[u8]) {
    let native = outcome(gpu, entry, shape, args, a, b, false);
    let ptx = outcome(gpu, entry, shape, args, a, b, true);
    assert_eq!(native.2, ptx.2, "{entry} {shape:?} {args:?}: sticky errors (native, then PTX)");
    if native.2.is_none() {
        let first = |x: &[u8], y: &[u8]| x.iter().zip(y).position(|(p, q)| p != q);
        assert!(native.0 == ptx.0, "{entry} {shape:?} {args:?}: A differs at byte {:?}", first(&native.0, &ptx.0));
        assert!(native.1 == ptx.1, "{entry} {shape:?} {args:?}: B differs at byte {:?}", first(&native.1, &ptx.1));
    }
}

const SHAPES: [(u32, u32); 3] = [(1, 32), (3, 100), (4, 256)];

#[test]
fn fill_and_check() {
    let (a, b) = (bytes(1), vec![0xff; BYTES]);
    for shape in SHAPES {
        for len in [0u64, 1, 255, 1000, 16_384] {
            same("pp_fill", shape, &[Arg::A(0), Arg::U64(len), Arg::U32(7)], &a, &b);
            // The words as pp_fill left them, some spoiled; the result starts at (0, MAX).
            let mut filled =
                outcome(Gpu::Owner, "pp_fill", (4, 256), &[Arg::A(0), Arg::U64(16_384), Arg::U32(7)], &a, &b, false).0;
            for at in [5usize, 999, 4000] {
                filled[at * 4] ^= 1;
            }
            let mut result = vec![0u8; BYTES];
            result[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
            same("pp_check", shape, &[Arg::A(0), Arg::U64(len), Arg::U32(7), Arg::B(0)], &filled, &result);
        }
    }
}

#[test]
fn copies_reads_atomics_and_chases() {
    let (a, b) = (bytes(2), bytes(3));
    for shape in SHAPES {
        for len in [0u64, 1, 17, 4096] {
            same("pp_copy16", shape, &[Arg::B(0), Arg::A(0), Arg::U64(len)], &a, &b);
            for entry in ["pp_read16", "pp_read16_nc"] {
                // Zeros fold to zero: every thread that read writes its sink word.
                same(entry, shape, &[Arg::A(0), Arg::U64(len), Arg::B(0), Arg::U32(0)], &vec![0; BYTES], &b);
                same(entry, shape, &[Arg::A(0), Arg::U64(len), Arg::B(0), Arg::U32(0x1234_5678)], &a, &b);
            }
        }
        for (slots, reps) in [(1u64, 1u32), (7, 3), (64, 2)] {
            same("pp_atomic_add_sys", shape, &[Arg::B(0), Arg::U64(slots), Arg::U32(reps)], &a, &b);
        }
    }
    for steps in [0u64, 1, 5000] {
        same("pp_chase", (1, 1), &[Arg::A(0), Arg::U64(steps), Arg::B(0)], &walk(), &b);
    }
}

#[test]
fn running_past_the_memory_faults_both_ways() {
    let (a, b) = (bytes(4), bytes(5));
    let past = (BYTES / 4 + 1) as u64;
    same("pp_fill", (4, 256), &[Arg::A(0), Arg::U64(past), Arg::U32(1)], &a, &b);
    same("pp_copy16", (4, 256), &[Arg::B(0), Arg::A(16), Arg::U64(BYTES as u64 / 16)], &a, &b);
    same("pp_read16", (2, 64), &[Arg::A(0), Arg::U64(BYTES as u64 / 16 + 1), Arg::B(0), Arg::U32(0)], &a, &b);
}

/// Over links that corrupt or drop every 13th byte (a period no access width divides), both
/// leave the same damage, reading and writing the peer's memory at any offset.
#[test]
fn faulty_links_damage_the_same_bytes_both_ways() {
    let (a, b) = (bytes(6), bytes(7));
    for fault in [LinkFault { period: 13, ..LinkFault::corrupt() }, LinkFault { period: 13, ..LinkFault::drop_bytes() }]
    {
        let on = Gpu::Peer(fault);
        for (shape, len) in [((1, 32), 100u64), ((4, 256), 4096)] {
            same_on(on, "pp_fill", shape, &[Arg::A(4), Arg::U64(len), Arg::U32(3)], &a, &b);
            let check = [Arg::A(0), Arg::U64(len), Arg::U32(3), Arg::B(0)];
            same_on(on, "pp_check", shape, &check, &a, &vec![0; BYTES]);
            same_on(on, "pp_copy16", shape, &[Arg::B(16), Arg::A(32), Arg::U64(len / 4)], &a, &b);
            same_on(on, "pp_copy16", shape, &[Arg::A(48), Arg::B(0), Arg::U64(len / 4)], &a, &b);
            same_on(
                on,
                "pp_read16",
                shape,
                &[Arg::A(0), Arg::U64(len / 4), Arg::B(0), Arg::U32(0)],
                &vec![0; BYTES],
                &b,
            );
            same_on(on, "pp_atomic_add_sys", shape, &[Arg::B(8), Arg::U64(7), Arg::U32(2)], &a, &b);
        }
        same_on(on, "pp_chase", (1, 1), &[Arg::A(0), Arg::U64(300), Arg::B(0)], &walk(), &b);
    }
}
