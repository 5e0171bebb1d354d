//! Running a kernel: one block at a time (or, with every block resident, each block's turn in order
//! until all are done), its warps in turn (`block.rs`), each until every lane has exited or waits
//! at a barrier or a warp-synchronous instruction, or its time slice runs out; a warp's lanes at
//! the same instruction run it as one group (`schedule.rs`, `fast_loop.rs`). A barrier releases
//! when every thread of the block that has not exited arrives. Shared, local and parameter memory
//! are the executor's own; every global, constant or generic access that leaves them goes to the
//! caller's [`Memory`], which decides whether the accessing device may touch it.

mod access;
mod arith;
mod bits;
mod block;
mod cluster;
mod directed;
mod fast;
mod fast_loop;
mod float;
mod float_env;
mod fp8;
mod gather;
mod half;
mod host_rounding;
mod matrix;
mod mbarrier;
mod printf;
mod round;
mod schedule;
mod thread;
mod warp;
mod width;

use crate::ir::{Function, Space};
use cluster::Cluster;

/// Where generic addresses of a block's shared memory begin: far above any device or host
/// address, so a generic address tells its window apart.
pub const SHARED_WINDOW: u64 = 0xfe00_0000_0000_0000;
/// Where generic addresses of a thread's local memory begin.
pub const LOCAL_WINDOW: u64 = 0xff00_0000_0000_0000;

/// Which thread makes an access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Thread {
    pub block: [u32; 3],
    pub thread: [u32; 3],
}

/// Why an access failed: the executor reports it as a trap of the accessing thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The address is not memory the accessor may touch (CUDA_ERROR_ILLEGAL_ADDRESS).
    Illegal,
    /// Not aligned to the access's size (CUDA_ERROR_MISALIGNED_ADDRESS).
    Misaligned,
}

/// Global and constant memory as a kernel sees it. Implementations decide what the accessing
/// device may touch; the executor calls them for every access outside its own shared, local
/// and parameter memory, in program order.
pub trait Memory {
    /// Reads `out.len()` bytes at `addr` of `space` (global or constant).
    fn read(&mut self, space: Space, addr: u64, out: &mut [u8], who: Thread) -> Result<(), Fault>;
    /// Writes `data` at `addr` of global memory.
    fn write(&mut self, addr: u64, data: &[u8], who: Thread) -> Result<(), Fault>;
    /// An atomic read-modify-write of `len` bytes at `addr` of global memory: `update` gets
    /// the bytes there and changes them in place, all as one step for every thread.
    fn atomic(&mut self, addr: u64, len: usize, who: Thread, update: &mut dyn FnMut(&mut [u8])) -> Result<(), Fault>;
    /// The reads of one instruction's lanes, in lane order: each `(addr, value)` of `loads`
    /// gets as its value the `size` bytes (1, 2, 4 or 8) at `addr` of `space`, little-endian;
    /// `who(i)` is the thread of the `i`th. The first that fails stops them, with its index.
    /// By default [`Memory::read`] for each; an implementation may serve a warp at once.
    fn read_lanes(
        &mut self,
        space: Space,
        size: usize,
        loads: &mut [(u64, u64)],
        who: &dyn Fn(usize) -> Thread,
    ) -> Result<(), (usize, Fault)> {
        for (i, (addr, value)) in loads.iter_mut().enumerate() {
            let mut bytes = [0u8; 8];
            self.read(space, *addr, &mut bytes[..size], who(i)).map_err(|f| (i, f))?;
            *value = u64::from_le_bytes(bytes);
        }
        Ok(())
    }
    /// The writes of one instruction's lanes to global memory, in lane order: the low `size`
    /// bytes (1, 2, 4 or 8) of each `(addr, value)` of `stores`, little-endian, at `addr`;
    /// `who(i)` is the thread of the `i`th. The first that fails stops them, with its index.
    /// By default [`Memory::write`] for each; an implementation may serve a warp at once.
    fn write_lanes(
        &mut self,
        size: usize,
        stores: &[(u64, u64)],
        who: &dyn Fn(usize) -> Thread,
    ) -> Result<(), (usize, Fault)> {
        for (i, &(addr, value)) in stores.iter().enumerate() {
            self.write(addr, &value.to_le_bytes()[..size], who(i)).map_err(|f| (i, f))?;
        }
        Ok(())
    }
    /// Text that thread `who` writes: one device `printf`'s, or a failed `assert`'s line. By
    /// default it goes where the driver writes it on a GPU ([`Output`]).
    fn output(&mut self, _who: Thread, to: Output, text: &str) {
        to.write(text)
    }
    /// Called after each time slice a warp ran, with the thread-instructions the launch has run
    /// so far: `false` stops the launch as running too long ([`TrapKind::TooLong`]), as a
    /// watchdog by time would. By default every launch runs to its instruction budget.
    fn keep_running(&mut self, _instructions: u64) -> bool {
        true
    }
}

/// Where a kernel's text goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// Device `printf`: the process's standard output.
    Printf,
    /// A failed device `assert`'s line: the process's standard error.
    Assertion,
}

impl Output {
    /// `text` to the process's standard output or error.
    pub fn write(self, text: &str) {
        match self {
            Output::Printf => print!("{text}"),
            Output::Assertion => eprint!("{text}"),
        }
    }
}

/// Memory that is plain bytes: implement [`Flat::span`] and the [`Memory`] the executor needs
/// comes with it. Every thread sees the same bytes, an access is checked only by `span`, and an
/// atomic is one step because nothing else runs during it.
///
/// ```
/// use peerpool_ptx::{Fault, Flat};
/// struct Window(Vec<u8>);
/// impl Flat for Window {
///     fn span(&mut self, addr: u64, len: usize) -> Result<&mut [u8], Fault> {
///         let at = addr.checked_sub(0x1000).ok_or(Fault::Illegal)? as usize;
///         self.0.get_mut(at..at + len).ok_or(Fault::Illegal)
///     }
/// }
/// ```
pub trait Flat {
    /// The `len` bytes at `addr`, or the fault of an access there. What it grants of a range
    /// it grants of every range inside it: the executor asks once for the range a warp's
    /// accesses cover (where that is a mebibyte at most), and for each alone where that is
    /// refused.
    fn span(&mut self, addr: u64, len: usize) -> Result<&mut [u8], Fault>;

    /// [`Memory::output`].
    fn output(&mut self, _who: Thread, to: Output, text: &str) {
        to.write(text)
    }
}

impl<T: Flat> Memory for T {
    fn read(&mut self, _: Space, addr: u64, out: &mut [u8], _: Thread) -> Result<(), Fault> {
        copy(out, self.span(addr, out.len())?);
        Ok(())
    }

    fn write(&mut self, addr: u64, data: &[u8], _: Thread) -> Result<(), Fault> {
        copy(self.span(addr, data.len())?, data);
        Ok(())
    }

    fn atomic(&mut self, addr: u64, len: usize, _: Thread, update: &mut dyn FnMut(&mut [u8])) -> Result<(), Fault> {
        update(self.span(addr, len)?);
        Ok(())
    }

    fn read_lanes(
        &mut self,
        _: Space,
        size: usize,
        loads: &mut [(u64, u64)],
        _: &dyn Fn(usize) -> Thread,
    ) -> Result<(), (usize, Fault)> {
        fn each<const N: usize>(m: &mut impl Flat, loads: &mut [(u64, u64)]) -> Result<(), (usize, Fault)> {
            if let Some((lo, bytes)) = around(m, loads, N) {
                for (addr, value) in loads.iter_mut() {
                    let at = (*addr - lo) as usize;
                    let mut word = [0u8; 8];
                    word[..N].copy_from_slice(&bytes[at..at + N]);
                    *value = u64::from_le_bytes(word);
                }
                return Ok(());
            }
            for (i, (addr, value)) in loads.iter_mut().enumerate() {
                let mut word = [0u8; 8];
                word[..N].copy_from_slice(m.span(*addr, N).map_err(|f| (i, f))?);
                *value = u64::from_le_bytes(word);
            }
            Ok(())
        }
        match size {
            1 => each::<1>(self, loads),
            2 => each::<2>(self, loads),
            4 => each::<4>(self, loads),
            _ => each::<8>(self, loads),
        }
    }

    fn write_lanes(
        &mut self,
        size: usize,
        stores: &[(u64, u64)],
        _: &dyn Fn(usize) -> Thread,
    ) -> Result<(), (usize, Fault)> {
        fn each<const N: usize>(m: &mut impl Flat, stores: &[(u64, u64)]) -> Result<(), (usize, Fault)> {
            if let Some((lo, bytes)) = around(m, stores, N) {
                for &(addr, value) in stores {
                    let at = (addr - lo) as usize;
                    bytes[at..at + N].copy_from_slice(&value.to_le_bytes()[..N]);
                }
                return Ok(());
            }
            for (i, &(addr, value)) in stores.iter().enumerate() {
                m.span(addr, N).map_err(|f| (i, f))?.copy_from_slice(&value.to_le_bytes()[..N]);
            }
            Ok(())
        }
        match size {
            1 => each::<1>(self, stores),
            2 => each::<2>(self, stores),
            4 => each::<4>(self, stores),
            _ => each::<8>(self, stores),
        }
    }

    fn output(&mut self, who: Thread, to: Output, text: &str) {
        Flat::output(self, who, to, text)
    }
}

/// The most bytes [`around`] asks `span` for at once: an implementation need not be ready to
/// grant or refuse a range as wide as the address space.
const MOST_SPANNED: u64 = 1 << 20;

/// Where `span` grants the whole range that a warp's accesses of `size` bytes each cover (a
/// mebibyte at most): its first address and its bytes. Else each goes alone, so that the
/// first that fails is the one named.
fn around<'m>(m: &'m mut impl Flat, lanes: &[(u64, u64)], size: usize) -> Option<(u64, &'m mut [u8])> {
    let (lo, hi) = lanes.iter().fold((u64::MAX, 0), |(lo, hi), &(a, _)| (lo.min(a), hi.max(a)));
    let len = hi.checked_add(size as u64)?.checked_sub(lo).filter(|&len| len <= MOST_SPANNED)?;
    m.span(lo, len as usize).ok().map(|bytes| (lo, bytes))
}

/// `to.copy_from_slice(from)`, without calling `memcpy` for the widths a register holds.
#[inline(always)]
pub(crate) fn copy(to: &mut [u8], from: &[u8]) {
    match to.len() {
        1 => to[..1].copy_from_slice(from),
        2 => to[..2].copy_from_slice(from),
        4 => to[..4].copy_from_slice(from),
        8 => to[..8].copy_from_slice(from),
        _ => to.copy_from_slice(from),
    }
}

/// The little-endian value of a register-wide `bytes` (1, 2, 4 or 8 of them), read at its own
/// width: a wider read of a buffer just written narrower would stall the store's forwarding.
#[inline(always)]
pub(crate) fn word(bytes: &[u8]) -> u64 {
    match bytes.len() {
        1 => bytes[0] as u64,
        2 => u16::from_le_bytes([bytes[0], bytes[1]]) as u64,
        4 => u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")) as u64,
        _ => u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")),
    }
}

/// The lanes of `mask`, lowest first.
#[inline(always)]
pub(crate) fn lanes(mask: u32) -> Lanes {
    Lanes(mask)
}

/// [`lanes`]' iterator.
pub(crate) struct Lanes(u32);

impl Iterator for Lanes {
    type Item = usize;

    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        let l = self.0.trailing_zeros();
        (self.0 != 0).then(|| {
            self.0 &= self.0 - 1;
            l as usize
        })
    }
}

/// A launch's shape and parameter buffer, as `cuLaunchKernel` gives them.
#[derive(Clone, Copy, Debug)]
pub struct Shape<'a> {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Bytes of dynamic shared memory, after the kernel's static shared memory.
    pub shared: u32,
    /// The parameter buffer, laid out as the kernel's `.param`s say.
    pub params: &'a [u8],
}

/// What a launch gives the kernel.
#[derive(Clone, Copy, Debug)]
pub struct Launch<'a> {
    pub shape: Shape<'a>,
    /// Where each of the module's variables is in device memory, by its index.
    pub variables: &'a [u64],
    /// The most instructions a launch may run, over all its threads: a kernel that runs longer
    /// (an endless loop) is stopped with [`TrapKind::TooLong`], as it is where
    /// [`Memory::keep_running`] says so.
    pub budget: u64,
    /// What a kernel that synchronises its grid is given ([`Function::reads_grid_workspace`]);
    /// `None`: `%envreg1` and `%envreg2` read 0, and `grid.sync()` traps.
    pub grid_sync: Option<GridSync>,
    /// The clusters' dimensions, in blocks, as a launch attribute gives them (a cluster's
    /// blocks run at once and share their shared memory); `None`: the kernel's own
    /// (`.reqnctapercluster`), or clusters of one block. A grid of whole clusters.
    pub cluster: Option<[u32; 3]>,
    /// How many blocks of this launch the device holds at once (its occupancy times its
    /// multiprocessors). An ordinary launch's blocks start one after another; a block that
    /// keeps running turn after turn (it may be waiting for a later block) lets the next one
    /// start beside it, up to this many at once, as a GPU keeps this many resident. 0 or 1:
    /// one block at a time, each to its end.
    pub resident_blocks: u64,
}

/// Where `grid.sync()` counts the blocks that arrived, and whether they all run at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GridSync {
    /// The grid workspace, `%envreg1` (high half) and `%envreg2`: 8 bytes of global memory,
    /// zero before the first launch that counts in them.
    pub workspace: u64,
    /// Every block resident at once, the blocks taking turns, as in a cooperative launch (or an
    /// ordinary one whose blocks a GPU holds at once); else blocks start as
    /// [`Launch::resident_blocks`] lets them, and blocks at `grid.sync()` that fill the device
    /// spin until the budget ends the launch, as a GPU would hang.
    pub resident: bool,
}

/// Why a launch stopped before its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrapKind {
    Fault(Fault),
    /// Every thread left waits at a barrier no other can reach.
    Deadlock,
    /// The instruction budget ran out.
    TooLong,
    /// Calls nested deeper than 1024 frames, or their local memory past 512 KiB a thread.
    StackOverflow,
    /// The launch asks for what the kernel or the simulator cannot hold (block size, shared
    /// memory, parameters shorter than declared).
    BadLaunch,
    /// A warp-synchronous instruction (`shfl.sync`, `vote.sync`, `match.sync`, `redux.sync`,
    /// `bar.warp.sync`) that cannot complete with a defined result; the trap's `addr` holds
    /// the member mask.
    Warp(WarpFault),
    /// A device `assert` failed; its line went to [`Memory::output`].
    Assert,
    /// The kernel ran `trap` (`__trap()`).
    Trap,
    /// `brx.idx` with an index past its list of targets (undefined in PTX; on an H200 the
    /// launch hung); the trap's `addr` holds the index.
    BadBranch,
}

/// Why a warp-synchronous instruction stopped a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WarpFault {
    /// The thread is not in its own member mask (undefined in PTX).
    NotInMask,
    /// A shuffle reads a lane that has exited, does not exist (past the block's last thread)
    /// or is not in the member mask, or a `wmma.mma` lacks such a lane's part of the
    /// fragments: PTX leaves the value undefined.
    Inactive,
    /// Lanes named in one another's member masks wait at warp-synchronous instructions of
    /// different kinds or with different masks: they can never meet.
    Mismatch,
}

/// A launch that stopped: what, where in the program, which thread, which address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trap {
    pub kind: TrapKind,
    pub line: u32,
    pub who: Thread,
    /// The address of a fault: a global one as the kernel gave it; one of the block's shared or
    /// the thread's local memory as the generic address in its window ([`SHARED_WINDOW`],
    /// [`LOCAL_WINDOW`]), whichever form the kernel used.
    pub addr: u64,
}

/// What a launch ran.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ran {
    /// Instructions executed, over every thread.
    pub instructions: u64,
}

/// The most threads a block may have, as on the GPUs peerpool simulates.
pub const MAX_BLOCK_THREADS: u64 = 1024;

/// Runs `kernel` over the whole grid. Its floats are IEEE whatever floating-point environment
/// the calling thread has set (MXCSR's flush-to-zero and denormals-are-zero on x86-64,
/// FPCR's flush-to-zero on aarch64, as fast-math sets them, are off while it runs, and back
/// after).
pub fn run(kernel: &Function, launch: &Launch<'_>, memory: &mut dyn Memory) -> Result<Ran, Trap> {
    // IEEE floats whatever environment the calling thread runs in, its own back at the end.
    let _ieee = float_env::Ieee::hold();
    let threads: u64 = launch.shape.block.iter().map(|&d| d as u64).product();
    let blocks: u64 = launch.shape.grid.iter().map(|&d| d as u64).product();
    let declared = kernel.params.iter().map(|p| p.offset as usize + p.size as usize).max().unwrap_or(0);
    let shared = kernel.shared_bytes as u64 + launch.shape.shared as u64;
    let bad = Trap { kind: TrapKind::BadLaunch, line: 0, who: Thread { block: [0; 3], thread: [0; 3] }, addr: 0 };
    if threads == 0
        || blocks == 0
        || threads > MAX_BLOCK_THREADS
        || launch.shape.params.len() < declared
        || shared > 1 << 20
    {
        return Err(bad);
    }
    // The kernel's clusters where the launch gives none; where both do, they must agree, and
    // the grid must be of whole clusters.
    let dims = match (launch.cluster, kernel.cluster) {
        (Some(a), Some(b)) if a != b => return Err(bad),
        (a, b) => a.or(b),
    };
    let launch = &Launch { cluster: dims, ..*launch };
    let dims = dims.unwrap_or([1; 3]);
    if (0..3).any(|a| dims[a] == 0 || !launch.shape.grid[a].is_multiple_of(dims[a])) {
        return Err(bad);
    }
    let code = fast::Code::new(kernel, launch);
    let mut budget = launch.budget;
    let [gx, gy, gz] = launch.shape.grid;
    let size = dims.iter().product::<u32>() as usize;
    let new_cluster = || Cluster::new(size, shared as usize, threads as u32);
    let mut ran = Ran::default();
    if size == 1 && !launch.grid_sync.is_some_and(|g| g.resident) {
        // Blocks in order, each keeping a finished one's thread allocations. Where every live
        // block has run `PATIENCE` turns without ending (each may wait for a later block), the
        // next starts beside them, up to the resident count, all taking turns. Blocks that end
        // in their first turns run one at a time, and long ones widen the set only slowly.
        const PATIENCE: u32 = 4;
        let window = launch.resident_blocks.max(1) as usize;
        let mut indices = (0..gz).flat_map(|z| (0..gy).flat_map(move |y| (0..gx).map(move |x| [x, y, z])));
        let mut spare = Vec::new();
        let mut live: Vec<(block::Block, Cluster, u32)> = Vec::new();
        loop {
            let waited = live.iter().all(|&(_, _, turns)| turns >= PATIENCE);
            if live.is_empty() || (waited && live.len() < window) {
                match indices.next() {
                    Some(index) => {
                        let threads = std::mem::take(&mut spare);
                        live.push((block::Block::new(kernel, &code, launch, index, threads), new_cluster(), 0));
                    }
                    None if live.is_empty() => return Ok(ran),
                    None => {}
                }
            }
            let mut left = Vec::with_capacity(live.len());
            for (mut b, mut shared_memory, turns) in live {
                match b.turn(kernel, &code, launch, memory, (&mut shared_memory, 0), &mut budget, window > 1)? {
                    block::Turn::Done => {
                        ran.instructions += b.ran;
                        spare = b.threads;
                    }
                    block::Turn::More => left.push((b, shared_memory, turns + 1)),
                }
            }
            live = left;
        }
    }
    // Blocks resident together, each running a turn in order until all are done: the whole
    // grid at once, or one cluster after another (its blocks made when its turn comes).
    let clusters = (blocks / size as u64) as usize;
    let groups = match launch.grid_sync.is_some_and(|g| g.resident) {
        true => vec![(0..clusters).collect::<Vec<_>>()],
        false => (0..clusters).map(|c| vec![c]).collect(),
    };
    for group in groups {
        let mut shared_memory: Vec<Cluster> = group.iter().map(|_| new_cluster()).collect();
        let mut live: Vec<(block::Block, usize, usize)> = group
            .iter()
            .enumerate()
            .flat_map(|(slot, &c)| cluster::members(c, dims, launch.shape.grid).map(move |(at, rank)| (at, slot, rank)))
            .map(|(at, slot, rank)| (block::Block::new(kernel, &code, launch, at, Vec::new()), slot, rank))
            .collect();
        while !live.is_empty() {
            let mut left = Vec::with_capacity(live.len());
            for (mut b, slot, rank) in live {
                match b.turn(kernel, &code, launch, memory, (&mut shared_memory[slot], rank), &mut budget, true)? {
                    block::Turn::Done => ran.instructions += b.ran,
                    block::Turn::More => left.push((b, slot, rank)),
                }
            }
            live = left;
        }
    }
    Ok(ran)
}
