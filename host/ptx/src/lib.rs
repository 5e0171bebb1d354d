//! A PTX executor: parse, check, execute.
//!
//! [`load`] parses PTX text into a [`Module`] and decodes every instruction; an instruction the
//! executor does not implement is refused there, with its line ([`LoadError::Unsupported`]), so
//! nothing is ever run wrong. [`run`] runs one kernel over a grid, a block at a time and a
//! block's warps in turn. A warp's lanes that stand at the same instruction run it together;
//! lanes that part at a branch each go their own way, those at the lowest instruction first,
//! and meet again where their paths join. A warp runs until each lane exits or waits at a
//! barrier or a warp-synchronous instruction, or for a time slice of 65,536
//! thread-instructions, and a lane whose `mbarrier` wait finds its phase not complete yields
//! to the rest of its block; so a warp that spins on a value another warp of its block writes
//! later lets that warp run, as a GPU's schedulers do. Where a launch gives [`GridSync`] with
//! every block resident (a cooperative launch), the blocks take turns in the same way, and
//! `grid.sync()` (which counts arrivals in the grid workspace, `%envreg1` and `%envreg2`)
//! works; otherwise blocks start one after another, and a block still running after a few
//! turns (it may wait for a later block) lets the next start beside it, up to as many as the
//! device holds at once ([`Launch::resident_blocks`]): a wait for a block that cannot start
//! spins until the instruction budget stops the launch, as a GPU would hang. Every access
//! to global or constant memory, and every generic access outside the block's shared and the
//! thread's local memory, goes to the caller's [`Memory`] with the thread that makes it (a
//! warp's lanes' loads or stores of one instruction in one call, [`Memory::read_lanes`] and
//! [`Memory::write_lanes`], in lane order): the executor knows nothing of devices, pools or
//! topologies.
//!
//! Implemented: integer arithmetic of every width (`mul.hi/.wide`, `mad.lo/.hi/.wide`, the carry
//! chain `add.cc`/`addc`/`sub.cc`/`subc`/`mad.cc`/`madc` that CUDA's double math uses,
//! `mul24`/`mad24`, `sad`, saturation), bit operations (`popc`, `clz`, `brev`, `bfind`, `bfe`,
//! `bfi`, `bmsk`, `szext`, `fns`, `prmt` in every mode, `lop3`, `shf`, `dp4a`/`dp2a`, and `add`,
//! `sub`, `min`, `max` of two 16-bit integers in a word, `.u16x2`/`.s16x2`; the SIMD video
//! instructions `vadd2/4`, `vsub`, `vavrg`, `vabsdiff`, `vmin`, `vmax` with `.sat` or `.add`
//! and their default selectors and mask, as nvcc writes `__vsadu4`), comparisons and
//! predicates (`setp` with `.and/.or/.xor`, `selp`, `slct`, `testp`), conversions (`cvt` with
//! every rounding and `.sat`), `cvta`, `mov` packing and unpacking vectors, `ld`/`st` of every
//! state space with vector widths, `atom`/`red` on global and shared memory, branches and
//! jump tables (`brx.idx` over a `.branchtargets` list, as rustc compiles a `match`; an index
//! past the list stops the launch, [`TrapKind::BadBranch`]),
//! `bar.sync`/`bar.arrive`/`bar.red`, fences, special registers and dynamic shared memory, and
//! `cp.async` from global to shared memory (done when issued, with its source size and
//! `ignore-src`; its groups' commits and waits are then fences), `isspacep`, `nanosleep`, `pmevent`,
//! `griddepcontrol` (launches run one after another),
//! `trap`, and cache hints and policies (`prefetch`, `createpolicy`, `.L2::cache_hint`, eviction
//! priorities), which change nothing here.
//!
//! Floats are IEEE-exact in every rounding mode PTX writes (`.rn`, `.rz`, `.rm`, `.rp`) for
//! `add`, `sub`, `mul`, `fma`/`mad`, `div`, `sqrt`, `rcp` on f32 and f64 and for `cvt`
//! between floats and from integers; `.ftz` flushes f32 subnormal inputs and results (a result
//! tiny before rounding too, as an H200 flushes a `mul` or `fma` that rounds up to the smallest
//! normal; `div`, `rcp` and `cvt` are taken to do the same),
//! `.sat` clamps to [0, 1] (NaN to 0). NaNs are an H200's: an f32 result is the canonical NaN
//! (`abs` and `neg` of a NaN too); an f64 result carries its first NaN operand, made quiet, or
//! is `0xfff8000000000000` (`0 * inf`, `sqrt(-1)`), and `abs`/`neg` keep an f64 NaN; `cvt`
//! between f32 and f64 keeps a NaN's sign and the top of its payload; a NaN converts to 0 from
//! f32 to 32 bits and to the destination's top bit otherwise. `testp.normal` counts zeros as
//! normal, a remainder by zero is all ones, and a 64-bit `bfe`/`bfi` reads all 32 bits of its
//! position and length, as an H200 does. Floats stay so
//! in a host program built with fast-math: a launch runs with MXCSR (x86-64) or FPCR
//! (aarch64) at its defaults (no flush to zero, no denormals as zero) and puts the caller's
//! back. The approximate
//! instructions are computed, not approximated: `div.approx`/`div.full`, `rcp.approx` and
//! `sqrt.approx` give the correctly rounded result (0.5 ulp); `rsqrt.approx`, `ex2.approx`,
//! `lg2.approx`, `sin.approx` and `cos.approx` are evaluated in f64 and rounded once, within
//! 1 ulp of the exact value. A GPU's own are coarser (the PTX ISA allows 2 ulp for `div.full`,
//! `ex2` and `rsqrt`, and an absolute error of 2^-20.9 for `sin`/`cos` on [-pi, pi]), so
//! comparing against hardware needs those bounds.
//!
//! 16-bit floats (`f16`, `bf16`, and two of either packed in 32 bits: `f16x2`, `bf16x2`, the
//! first in the low half) are computed half by half, exact and rounded once, as cuda_fp16.h and
//! cuda_bf16.h use them: `add`/`sub`/`mul`/`fma.rn` (`.ftz`, `.sat` on f16), `neg`, `abs`,
//! `min`/`max` with `.NaN`, `setp` (of a pair: `p|q` the low and high halves), `set` into halves
//! or a mask, `cvt` to and from f32, f64 and integers in every rounding, `cvt.rn.f16x2.f32`,
//! `atom.add.noftz`, `.relu` on `fma` and `cvt`; `ex2.approx` and `tanh.approx` (also on f32) are
//! evaluated in f64 and rounded once. Their NaNs are an H200's: results and `abs`/`neg` of a NaN
//! are the canonical `0x7fff`; `cvt` between a half and f64 keeps a NaN's sign and the top of
//! its payload, bf16 to f32 keeps its bits, f16 to f32 and f32 to a half give the canonical NaN. 8-bit floats (`e4m3x2`, `e5m2x2`) convert to and from f32
//! and f16 pairs as `cvt` does on sm_89 and later (rounded to nearest, `.satfinite`, `.relu`).
//! Not yet: `.xorsign`, float literals for halves, and the other 8-, 6- and 4-bit formats.
//!
//! Warp-synchronous instructions (`shfl.sync`, `vote.sync`, `match.sync`, `redux.sync`,
//! `elect.sync`, whose leader is the meeting's lowest lane, `bar.warp.sync`, `activemask`)
//! follow independent scheduling: a lane waits at one until
//! every lane its member mask names that has not exited waits at one of the same kind with
//! the same mask, wherever in the program; then all compute at once. Lanes that have exited
//! (or lie past the block's last thread) take no part: a vote leaves them out, while a
//! shuffle that reads one stops the launch ([`WarpFault::Inactive`]), as does a lane outside
//! its own mask or lanes that wait for each other at different kinds of instruction.
//! `activemask` gives the lanes that reach that same instruction together.
//!
//! Calls of `.func`s (`call`/`call.uni` with `.param` arguments and results, as nvcc emits
//! them for `__noinline__` functions) are linked at load: a kernel's body holds the code of
//! every function it reaches. Each call opens a frame of its own registers and local memory
//! (parameters, results and `.local`s), so recursion works; it is bounded by the instruction
//! budget, by 1024 nested frames and by 512 KiB of local memory a thread
//! ([`TrapKind::StackOverflow`]). Device `printf` (a call of `vprintf`, which the driver
//! provides) formats as C's printf does and hands the text to [`Memory::output`]; a failed
//! device `assert` (a call of `__assertfail`) hands it the driver's line and stops the launch
//! ([`TrapKind::Assert`]). A call of any other function with no body in
//! the module (`malloc`) is refused at load. Calls through an address (function pointers,
//! virtual functions): a function's name used as a value, or in an initialiser (a vtable), is
//! its address, a slot above every window of memory; `call` through a register (with its
//! `.callprototype`) reaches whichever function the address names among those whose address
//! the module takes and whose parameters the call fits, and any other address stops the launch
//! as an illegal address. A variable's address in an initialiser (`generic(x)+4`) is left for
//! the caller to fill, where it puts the variable ([`Variable::initial_bytes`]).
//!
//! A launch compiles the kernel's body once into flat instructions whose operands index the
//! frame's registers, immediates and launch-wide values sitting in a pool below each frame;
//! a group of a warp's lanes runs them in one loop, each instruction dispatched once for the
//! group, that stops only where lanes part or meet or at what needs a thread or the block
//! (barriers, warp meetings other than a whole warp's shuffle, calls, and the rare instructions
//! that run as decoded). A group's loads and stores of global memory reach the caller's
//! [`Memory`] in one call, and f32 arithmetic in a directed rounding uses the host's own
//! instructions where it has AVX-512 (the rounding written in each), the exact f64 way
//! elsewhere. `benches/interpreter.rs` measures thread-instructions per second on corpus
//! kernels: on one core of the H200 machine's CPU (its run records), 205 to 491 million a second on its six
//! kernels, best samples (`docs/hardware/2026-12-03-executor-lanes`; warp by warp against
//! thread by thread in `docs/hardware/2026-12-02-executor-warps`).
//!
//! Thread-block clusters (sm_90): a launch in clusters ([`Launch::cluster`], or the kernel's
//! `.reqnctapercluster`) runs each cluster's blocks at once, taking turns. A block reaches
//! another's shared memory through `mapa` (generic or `.shared::cluster` addresses) with `ld`,
//! `st` and `atom`; `barrier.cluster.arrive` and `.wait` meet every thread of the cluster; the
//! cluster registers (`%cluster_ctarank`, `%cluster_nctarank`, `%cluster_ctaid`,
//! `%cluster_nctaid`, `%clusterid`, `%nclusterid`, `%is_explicit_cluster`) are as the launch
//! gives them. Without clusters each block is a cluster of one.
//!
//! `mbarrier` objects in a block's shared memory (`init`, `arrive`, `arrive_drop`, `test_wait`
//! and `try_wait` with or without `.parity`, `inval`; transaction counts: `expect_tx`,
//! `complete_tx`, `arrive.expect_tx`), as `cuda::barrier` and `cuda::memcpy_async` use them,
//! with the copies that arrive at them: `cp.async.mbarrier.arrive`, and `cp.async.bulk` of
//! global memory into shared memory, which completes its bytes (sm_90's bulk copies without a
//! tensor map; also from shared memory back to global, in bulk groups). Copies are done when
//! issued. A wait for a phase that is not complete yields, so warps that produce and warps that
//! consume meet. An operation on an object that is not a barrier, more arrivals than are
//! pending, or a barrier outside shared memory is an illegal access ([`Fault::Illegal`]).
//!
//! Tensor cores through `wmma` (`nvcuda::wmma`'s `load_matrix_sync`, `mma_sync`,
//! `store_matrix_sync`): shapes m16n16k16, m32n8k16 and m8n32k16, f16 or bf16 inputs, f16 or
//! f32 accumulators, matrices by rows or by columns with any stride, in global, shared or
//! generic memory. The PTX ISA leaves unspecified which lane holds which element of a
//! fragment; here lane `l` holds the elements from `l * E` on (`E` a thread's count), in
//! row-major order, so elementwise work on fragments (`frag.x[i]`) behaves as on a GPU. Also
//! `mma.sync`, whose fragments sit where the PTX ISA puts them: m16n8k16 and m16n8k8 of f16 or
//! bf16 into f16 or f32, m16n8k8 and m16n8k4 of tf32 into f32 (the low 13 bits of each input
//! ignored), and m16n8k32 and m16n8k16 of s8 and u8 into s32 (exact, wrapping, or clamped with
//! `.satfinite`); `cvt.rna.tf32.f32`; `ldmatrix` (`.x1`, `.x2`, `.x4`, `.trans`) and, its
//! inverse, `stmatrix` (the same forms, sm_90), as hand-written and CUTLASS-style kernels use
//! them. A product, an `ldmatrix` or a `stmatrix` needs all 32 lanes of the warp, else
//! [`WarpFault::Inactive`] stops the launch.
//! `D = A B + C` is summed as the H200's tensor cores sum it, not as IEEE arithmetic would: each
//! exact product and C truncated below a common point set by the largest exponent, summed
//! exactly, and rounded toward zero into f32 (to nearest into f16). This model was fitted to
//! the tensor cores' results and matches all 4.8 million that `experiments/wmma_rounding`
//! compared, of `wmma` and `mma.sync`, bit for bit; rounding the exact sum once to nearest
//! would miss about half of them by an ulp, and thousands of ulp where terms cancel
//! (`docs/hardware/`: `2026-12-02-wmma`, `2026-12-02-mma-sync`, `2026-12-02-mma-int-tf32`).
//!
//! Not yet: textures, surfaces, the other tensor-core instructions (`wgmma`, and
//! `mma`/`wmma` of other shapes and types: `wmma` of tf32 and integers, f64, 8-bit floats,
//! sparse and block-scaled forms), bulk copies through tensor maps (`cp.async.bulk.tensor`)
//! or to a cluster (`.multicast::cluster`), `mbarrier` objects of another block of the cluster,
//! `mbarrier.pending_count`; each is refused at load with its line.

mod decode;
mod exec;
mod ir;
mod lex;
mod link;
mod operand;
mod parse;
mod vocabulary;

pub use exec::{
    Fault, Flat, GridSync, LOCAL_WINDOW, Launch, MAX_BLOCK_THREADS, Memory, Output, Ran, SHARED_WINDOW, Shape, Thread,
    Trap, TrapKind, WarpFault, run,
};
pub use ir::{Function, Module, Param, Pointer, Space, Ty, Variable};

/// Why a module cannot be loaded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    /// The text is not PTX, as ptxas would refuse it (in ptxas's words where it has them): a
    /// name, modifier or form that PTX does not have, or text this parser does not read.
    #[error("line {line}: {what}")]
    Syntax { line: u32, what: String },
    /// A call of a function that no image defines (and the driver does not provide): the JIT
    /// links nothing to it.
    #[error("line {line}: unresolved extern function {name}")]
    Unresolved { line: u32, name: String },
    /// An instruction or feature the executor does not implement.
    #[error("line {line}: {what} is not implemented by peerpool's PTX executor")]
    Unsupported { line: u32, what: String },
}

/// Parses and checks `text`.
pub fn load(text: &str) -> Result<Module, LoadError> {
    parse::module(text)
}

impl Module {
    /// The kernel (`.entry`) named `name`.
    pub fn kernel(&self, name: &str) -> Option<&Function> {
        self.functions.iter().find(|f| f.entry && f.name == name)
    }
}
