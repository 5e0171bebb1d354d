//! Kernels that are not peerpool's, run from their module's PTX by `peerpool-ptx`. The executor
//! knows nothing of devices or pools: every global, constant or generic access it makes comes
//! here with the accessing thread, and is checked against the launching device's view, as
//! peerpool's own kernels are (`kernels.rs`). A fault kills the simulated process with a
//! sticky error, as on the H200s, and one line names the kernel, block, thread, PTX line,
//! address and the allocation or pool the address falls in: what compute-sanitizer reports on
//! a GPU.
//!
//! The launch runs to its end inside the call (the clock charges what the timing model says
//! its traffic costs, not the executor's own speed).

use super::device_access::{load, probe_write, store, update};
use super::memory::Backing;
use super::modules::fail;
use super::state::{Fail, SimResult, State, variables};
use super::timing::{Traffic, Work};
use peerpool::CudaCode;
use peerpool::driver::LaunchShape;
use peerpool_ptx::{Fault, GridSync, Launch, Memory, Output, Space, Thread, Trap, TrapKind, WarpFault};

/// The most instructions one launch runs, over all its threads: a kernel still running then
/// (an endless loop) would never finish on a GPU either, and is stopped.
const BUDGET: u64 = 1 << 34;

/// A launch's shape and parameter buffer, as `cuLaunchKernel` gives them (the parameters laid
/// out as `cuFuncGetParamInfo` says): the executor's own.
pub type PtxLaunch<'a> = peerpool_ptx::Shape<'a>;

/// How a kernel is launched beyond its shape: the launch attributes that change what it does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PtxLaunchHow {
    /// Every block resident at once, with the grid workspace (`cuLaunchCooperativeKernel`).
    pub cooperative: bool,
    /// In clusters of these dimensions, in blocks (`CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`).
    pub cluster: Option<[u32; 3]>,
}

/// Runs function `function`'s kernel from its module's PTX on `device`, as `how` says. A launch
/// the driver would refuse is refused (not sticky); a fault in the kernel returns `Ok` and kills
/// the process, so the error surfaces at the next call.
pub(super) fn launch(
    s: &mut State,
    device: usize,
    function: u64,
    shape: &PtxLaunch<'_>,
    how: PtxLaunchHow,
) -> SimResult<()> {
    let cooperative = how.cooperative;
    let (f, _, described) = super::modules::described(s, function)?;
    let name = described.name.clone();
    let program =
        s.modules.get(&f.module).map(|m| m.program.clone()).ok_or(Fail::from(CudaCode::CUDA_ERROR_INVALID_HANDLE))?;
    // Machine code alone: the module's load said so.
    let Some(module) = program else { return fail(CudaCode::CUDA_ERROR_NOT_SUPPORTED) };
    check_shape(s, function, shape)?;
    let cluster = clusters(&f.settings, described, shape, how.cluster)?;
    let Some(kernel) = module.kernel(&name) else { return refuse(&name, "its PTX does not define it") };
    let variables = variables(s, f.module, &module);
    // As NVIDIA's driver does, a context's first cooperative launch makes its grid workspace,
    // which every later launch there gets: a kernel that synchronises its grid works in an
    // ordinary launch after that (its blocks at once where the device holds them all, as a GPU
    // schedules them), and traps before. The driver keeps one workspace; here each launch gets
    // a zeroed one, which `grid.sync()`'s counting cannot tell apart.
    let resident_count = resident_blocks(s, device, function, shape)?;
    let resident = blocks(shape) <= resident_count;
    if cooperative && !resident {
        return fail(CudaCode::CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
    }
    let ctx = s.current_context().unwrap_or_default();
    let settings = s.context_settings.entry(ctx).or_default();
    settings.grid_workspace |= cooperative;
    let given = settings.grid_workspace && kernel.reads_grid_workspace;
    let capacity = s.topo.devices[device].total_memory;
    let grid_sync = match cooperative || given {
        true => {
            let workspace = s
                .memory
                .alloc(device, 8, capacity, None)
                .map_err(|_| Fail::from(CudaCode::CUDA_ERROR_OUT_OF_MEMORY))?;
            Some(GridSync { workspace, resident })
        }
        false => None,
    };
    let launch = Launch {
        shape: *shape,
        variables: &variables,
        budget: BUDGET,
        grid_sync,
        cluster,
        resident_blocks: resident_count,
    };
    let traffic = execute(s, device, kernel, &launch);
    if let Some(g) = grid_sync {
        s.memory.free(g.workspace);
    }
    let traffic = traffic?;
    if s.dead.is_none() {
        s.work = Some(Work::Kernel { device, traffic });
    }
    Ok(())
}

/// The clusters a launch runs in: the launch's, or the kernel's own (its image's, or set with
/// `cuFuncSetAttribute`); `None` for clusters of one block. Dimensions that disagree with the
/// kernel's, that do not divide the grid, or of more blocks than a cluster may have (8, or 16
/// where the kernel allows non-portable sizes) are `CUDA_ERROR_INVALID_CLUSTER_SIZE`, as on an
/// H200.
fn clusters(
    settings: &super::state::FunctionSettings,
    kernel: &super::image::Kernel,
    shape: &PtxLaunch<'_>,
    asked: Option<[u32; 3]>,
) -> SimResult<Option<[u32; 3]>> {
    let own = kernel.cluster.or(settings.set_cluster());
    let dims = match (asked, own) {
        (Some(a), Some(b)) if a != b => return fail(CudaCode::CUDA_ERROR_INVALID_CLUSTER_SIZE),
        (a, b) => a.or(b),
    };
    let Some(dims) = dims else { return Ok(None) };
    let most = settings.most_cluster_blocks();
    let size = dims.iter().map(|&d| d as u64).product::<u64>();
    if dims.contains(&0) || (0..3).any(|a| !shape.grid[a].is_multiple_of(dims[a])) || size > most {
        return fail(CudaCode::CUDA_ERROR_INVALID_CLUSTER_SIZE);
    }
    Ok(Some(dims))
}

fn blocks(shape: &PtxLaunch<'_>) -> u64 {
    shape.grid.iter().map(|&d| d as u64).product()
}

/// The most blocks of `function` that `device` holds at once with this launch's block size and
/// shared memory.
fn resident_blocks(s: &State, device: usize, function: u64, shape: &PtxLaunch<'_>) -> SimResult<u64> {
    let threads = shape.block.iter().map(|&d| d as u64).product();
    let per = super::occupancy::blocks_per_multiprocessor(s, function, threads, shape.shared as u64)?;
    Ok(per * s.topo.devices[device].sms as u64)
}

/// Runs `kernel` on `device` with every access checked; what it moved, for the clock. A fault
/// kills the process (and records the work as a fault); a launch the executor cannot hold is
/// `CUDA_ERROR_INVALID_VALUE`.
fn execute(s: &mut State, device: usize, kernel: &peerpool_ptx::Function, launch: &Launch<'_>) -> SimResult<Traffic> {
    let mut view = View::new(s, device, &kernel.name);
    let ran = peerpool_ptx::run(kernel, launch, &mut view);
    let (traffic, timed_out) = (view.traffic, view.watchdog.fired);
    match ran {
        Ok(_) => {}
        Err(Trap { kind: TrapKind::BadLaunch, .. }) => return fail(CudaCode::CUDA_ERROR_INVALID_VALUE),
        Err(trap) => {
            // What a GPU leaves undefined (a warp that cannot meet, a stack past its end) is
            // the launch failing: the kernel's result could not be trusted.
            let code = match trap.kind {
                TrapKind::Fault(Fault::Misaligned) => CudaCode::CUDA_ERROR_MISALIGNED_ADDRESS,
                TrapKind::Fault(Fault::Illegal) => CudaCode::CUDA_ERROR_ILLEGAL_ADDRESS,
                // On an H200 a jump table's index past its list hung the launch (measured).
                TrapKind::Deadlock | TrapKind::TooLong | TrapKind::BadBranch => CudaCode::CUDA_ERROR_LAUNCH_TIMEOUT,
                TrapKind::Assert => CudaCode::CUDA_ERROR_ASSERT,
                _ => CudaCode::CUDA_ERROR_LAUNCH_FAILED,
            };
            let shared = u64::from(kernel.shared_bytes) + launch.shape.shared as u64;
            peerpool::fault::notice(&report(s, device, &kernel.name, &trap, code, (timed_out, shared)));
            s.dead = Some(code);
            s.work = Some(Work::Fault(device));
        }
    }
    Ok(traffic)
}

/// peerpool's own kernel `entry` run from the PTX that ships (`peerpool_kernels::PTX`, which its
/// cubin is made from) with `params` laid out as the driver lays them: what the simulator does
/// for peerpool's kernels when built with the `ptx-kernels` feature, and what the test of its
/// hand-written fast path compares with.
pub(super) fn launch_own(
    s: &mut State,
    device: usize,
    entry: &str,
    shape: LaunchShape,
    params: &[u8],
) -> SimResult<()> {
    static OWN: std::sync::OnceLock<Result<peerpool_ptx::Module, String>> = std::sync::OnceLock::new();
    let module = OWN.get_or_init(|| peerpool_ptx::load(peerpool_kernels::PTX).map_err(|e| e.to_string()));
    let module = module.as_ref().map_err(|_| Fail::from(CudaCode::CUDA_ERROR_NOT_SUPPORTED))?;
    let kernel = module.kernel(entry).ok_or(Fail::from(CudaCode::CUDA_ERROR_NOT_FOUND))?;
    let shape = PtxLaunch { grid: [shape.grid, 1, 1], block: [shape.block, 1, 1], shared: 0, params };
    let launch = Launch { shape, variables: &[], budget: BUDGET, grid_sync: None, cluster: None, resident_blocks: 0 };
    execute(s, device, kernel, &launch).map(|_| ())
}

/// `CUDA_ERROR_NOT_SUPPORTED` for a kernel the simulator cannot run, with one line saying why.
fn refuse(name: &str, why: &str) -> SimResult<()> {
    peerpool::fault::notice(&format!("peerpool-sim: kernel {name}: {why}: CUDA_ERROR_NOT_SUPPORTED"));
    fail(CudaCode::CUDA_ERROR_NOT_SUPPORTED)
}

/// What the driver refuses at launch (`CUDA_ERROR_INVALID_VALUE`): dimensions past a device's
/// limits, more threads than the kernel may have, more dynamic shared memory than the function
/// allows, a parameter buffer shorter than the kernel's parameters.
fn check_shape(s: &State, function: u64, shape: &PtxLaunch<'_>) -> SimResult<()> {
    let (f, contents, kernel) = super::modules::described(s, function)?;
    let cc = s.topo.devices[f.device].compute_capability;
    let most = |which| super::modules::attribute(contents, kernel, &f.settings, cc, which);
    let threads: u64 = shape.block.iter().map(|&d| d as u64).product();
    let [gx, gy, gz] = shape.grid;
    let [bx, by, bz] = shape.block;
    let dims = gx >= 1 && gx <= i32::MAX as u32 && (1..=65_535).contains(&gy) && (1..=65_535).contains(&gz);
    let block = bx >= 1 && by >= 1 && (1..=64).contains(&bz) && bx <= 1024 && by <= 1024;
    let params = kernel.params.iter().map(|p| p.offset + p.size).max().unwrap_or(0);
    if !dims
        || !block
        || threads > most(0)? as u64
        || shape.shared as i64 > most(8)? as i64
        || shape.params.len() < params
    {
        return fail(CudaCode::CUDA_ERROR_INVALID_VALUE);
    }
    Ok(())
}

/// One line on a faulted launch: kernel, block, thread, PTX line, address, and whose memory
/// the address falls in.
/// `(timed_out, shared)`: whether the watchdog stopped the launch, and the block's shared bytes.
fn report(
    s: &State,
    device: usize,
    kernel: &str,
    trap: &Trap,
    code: CudaCode,
    (timed_out, shared): (bool, u64),
) -> String {
    let what = match trap.kind {
        TrapKind::Fault(Fault::Illegal) if trap.addr >= peerpool_ptx::LOCAL_WINDOW => {
            let offset = trap.addr - peerpool_ptx::LOCAL_WINDOW;
            format!("illegal address {:#x}: local memory, offset {offset:#x}, outside the thread's", trap.addr)
        }
        TrapKind::Fault(Fault::Illegal) if trap.addr >= peerpool_ptx::SHARED_WINDOW => {
            let (window, offset) = (peerpool_ptx::SHARED_WINDOW, trap.addr - peerpool_ptx::SHARED_WINDOW);
            format!(
                "illegal address {:#x}: shared memory, offset {offset:#x}, outside the block's {shared} bytes \
                 (window {window:#x} to {:#x})",
                trap.addr,
                window + shared
            )
        }
        TrapKind::Fault(Fault::Illegal) => {
            format!("illegal address {:#x}: {}", trap.addr, whereabouts(s, device, trap.addr))
        }
        TrapKind::Fault(Fault::Misaligned) => format!("misaligned address {:#x}", trap.addr),
        TrapKind::Deadlock => "every thread left waits at a barrier no other reaches; a GPU would hang".to_owned(),
        TrapKind::TooLong if timed_out => format!(
            "still running after {} s, the simulated driver's watchdog (--kernel-timeout, or a topology's \
             kernel_timeout_s); a kernel that waits for what never comes would hang a GPU",
            s.topo.kernel_timeout_s
        ),
        TrapKind::TooLong => format!("still running after {BUDGET} instructions; a GPU would not finish it either"),
        TrapKind::StackOverflow => "calls nested past the stack (1,024 frames or 512 KiB a thread)".to_owned(),
        TrapKind::Warp(WarpFault::NotInMask) => format!("a lane not in its own member mask {:#010x}", trap.addr),
        TrapKind::Warp(WarpFault::Inactive) => {
            format!("a shuffle reads a lane that has exited or is not in member mask {:#010x}", trap.addr)
        }
        TrapKind::Warp(WarpFault::Mismatch) => {
            format!("lanes of member mask {:#010x} wait at different warp-synchronous instructions", trap.addr)
        }
        TrapKind::BadLaunch => "a launch the simulator cannot hold".to_owned(),
        TrapKind::Assert => "a device assert failed (its message above)".to_owned(),
        TrapKind::Trap => "the kernel ran trap (__trap())".to_owned(),
        TrapKind::BadBranch => {
            format!("brx.idx with index {} past its .branchtargets; a GPU would hang", trap.addr)
        }
    };
    let [bx, by, bz] = trap.who.block;
    let [tx, ty, tz] = trap.who.thread;
    format!(
        "peerpool-sim: kernel {kernel} on GPU {device}: block ({bx},{by},{bz}) thread ({tx},{ty},{tz}) PTX line {}: \
         {what}: {code:?}",
        trap.line
    )
}

/// Whose memory `addr` is, as seen from `device`.
fn whereabouts(s: &State, device: usize, addr: u64) -> String {
    let Some(block) = s.memory.find(addr) else { return "in no allocation".to_owned() };
    let whose = match block.pool.and_then(|p| s.pools.get(p)) {
        Some(pool) => format!("in pool {:#x} of GPU {}", pool.handle, block.device),
        None => format!("in an allocation of GPU {} at {:#x}", block.device, block.base),
    };
    match s.can_access(device, block) {
        false => format!("{whose}, to which GPU {device} has no access"),
        true => format!("{whose}, past its end or read-only"),
    }
}

/// The launching device's view of memory, for the executor: every access checked, and the
/// traffic counted for the clock.
struct View<'s> {
    s: &'s mut State,
    device: usize,
    traffic: Traffic,
    watchdog: Watchdog,
    /// The allocations the launch's last accesses reached, newest first.
    windows: [Option<Window>; 2],
}

/// One allocation as the launching device sees it, for accesses that need no further check.
/// Nothing maps, unmaps or grants while a launch runs (it holds the simulator's state), so what
/// was checked once holds to the launch's end; and a kernel's accesses mostly fall in one or two
/// allocations, which saves finding, checking and copying for each.
struct Window {
    start: u64,
    end: u64,
    backing: Backing,
    /// The device may read here and the link to it changes nothing.
    read: bool,
    /// The device may write here and the link from it changes nothing.
    write: bool,
    local: bool,
}

impl View<'_> {
    fn new<'v>(s: &'v mut State, device: usize, kernel: &str) -> View<'v> {
        let watchdog = Watchdog::new(s.topo.kernel_timeout_s, format!("kernel {kernel} on GPU {device}"));
        View { s, device, traffic: Traffic::default(), watchdog, windows: [None, None] }
    }

    /// The window holding `[addr, addr + len)`, found and checked on a miss; `None` where the
    /// range lies in no single allocation.
    fn window(&mut self, addr: u64, len: usize) -> Option<&Window> {
        let end = addr.checked_add(len as u64)?;
        let inside = |w: &Option<Window>| w.as_ref().is_some_and(|w| w.start <= addr && end <= w.end);
        if !inside(&self.windows[0]) {
            if inside(&self.windows[1]) {
                self.windows.swap(0, 1);
            } else {
                let block = self.s.memory.find(addr)?;
                let (device, owner) = (self.device, block.device);
                let access = self.s.can_access(device, block);
                let topo = &self.s.topo;
                let window = Window {
                    start: block.base,
                    end: block.base + block.size(),
                    backing: block.backing().clone(),
                    read: access && topo.fault(owner, device).is_none(),
                    write: access && self.s.check_writable(addr, 1).is_ok() && topo.fault(device, owner).is_none(),
                    local: owner == device,
                };
                // A range past its allocation's end leaves the windows as they were.
                if end > window.end {
                    return None;
                }
                self.windows = [Some(window), self.windows[0].take()];
            }
        }
        self.windows[0].as_ref()
    }

    /// Where the first of `lanes` (addresses, `size` bytes each) lies in a window the device
    /// may read (or `write`), made the first window: the lowest and end address of it and of
    /// the lanes after it in that window, and how many they are, to be served under one lock.
    fn run_of(&mut self, lanes: &[(u64, u64)], size: usize, write: bool) -> Option<(u64, u64, usize)> {
        let w = self.window(lanes[0].0, size).filter(|w| if write { w.write } else { w.read })?;
        let (start, end) = (w.start, w.end);
        let inside = |&&(a, _): &&(u64, u64)| a >= start && a.checked_add(size as u64).is_some_and(|e| e <= end);
        let run = lanes.iter().take_while(inside).count();
        let lo = lanes[..run].iter().map(|l| l.0).min()?;
        let hi = lanes[..run].iter().map(|l| l.0).max()? + size as u64;
        Some((lo, hi, run))
    }

    fn count(&mut self, addr: u64, bytes: u64, atomic: bool) {
        let local = self.s.memory.find(addr).is_none_or(|b| b.device == self.device);
        self.add(local, bytes, atomic);
    }

    fn add(&mut self, local: bool, bytes: u64, atomic: bool) {
        let side = self.traffic.side(local);
        match atomic {
            true => side.atomics = side.atomics.saturating_add(1),
            false => side.bytes = side.bytes.saturating_add(bytes),
        }
    }
}

/// The executor checks alignment itself: its accesses come here aligned.
const ALIGNED: u64 = 1;

impl Memory for View<'_> {
    fn read(&mut self, _: Space, addr: u64, out: &mut [u8], _: Thread) -> Result<(), Fault> {
        if let Some(w) = self.window(addr, out.len()).filter(|w| w.read) {
            let local = w.local;
            w.backing.with((addr - w.start) as usize, out.len(), |bytes| out.copy_from_slice(bytes));
            self.add(local, out.len() as u64, false);
            return Ok(());
        }
        let data = load(self.s, self.device, addr, out.len() as u64, ALIGNED).map_err(|_| Fault::Illegal)?;
        out.copy_from_slice(&data);
        self.count(addr, out.len() as u64, false);
        Ok(())
    }

    fn write(&mut self, addr: u64, data: &[u8], _: Thread) -> Result<(), Fault> {
        if let Some(w) = self.window(addr, data.len()).filter(|w| w.write) {
            let local = w.local;
            w.backing.with((addr - w.start) as usize, data.len(), |bytes| bytes.copy_from_slice(data));
            self.add(local, data.len() as u64, false);
            return Ok(());
        }
        probe_write(self.s, self.device, addr, data.len() as u64, ALIGNED).map_err(|_| Fault::Illegal)?;
        store(self.s, self.device, addr, data.to_vec());
        self.count(addr, data.len() as u64, false);
        Ok(())
    }

    fn atomic(&mut self, addr: u64, len: usize, _: Thread, f: &mut dyn FnMut(&mut [u8])) -> Result<(), Fault> {
        if let Some(w) = self.window(addr, len).filter(|w| w.write) {
            let local = w.local;
            // Under the bytes' lock from read to write, as `update` does.
            w.backing.with((addr - w.start) as usize, len, f);
            self.add(local, len as u64, true);
            return Ok(());
        }
        update(self.s, self.device, addr, len as u64, ALIGNED, f).map_err(|_| Fault::Illegal)?;
        self.count(addr, len as u64, true);
        Ok(())
    }

    fn read_lanes(
        &mut self,
        space: Space,
        size: usize,
        loads: &mut [(u64, u64)],
        who: &dyn Fn(usize) -> Thread,
    ) -> Result<(), (usize, Fault)> {
        let mut i = 0;
        while i < loads.len() {
            let Some((lo, hi, run)) = self.run_of(&loads[i..], size, false) else {
                let mut bytes = [0u8; 8];
                self.read(space, loads[i].0, &mut bytes[..size], who(i)).map_err(|f| (i, f))?;
                loads[i].1 = u64::from_le_bytes(bytes);
                i += 1;
                continue;
            };
            let w = self.windows[0].as_ref().expect("the window of the run");
            let (lanes, local) = (&mut loads[i..i + run], w.local);
            w.backing.with((lo - w.start) as usize, (hi - lo) as usize, |bytes| {
                for (addr, value) in lanes.iter_mut() {
                    let mut word = [0u8; 8];
                    let at = (*addr - lo) as usize;
                    word[..size].copy_from_slice(&bytes[at..at + size]);
                    *value = u64::from_le_bytes(word);
                }
            });
            self.add(local, (run * size) as u64, false);
            i += run;
        }
        Ok(())
    }

    fn write_lanes(
        &mut self,
        size: usize,
        stores: &[(u64, u64)],
        who: &dyn Fn(usize) -> Thread,
    ) -> Result<(), (usize, Fault)> {
        let mut i = 0;
        while i < stores.len() {
            let Some((lo, hi, run)) = self.run_of(&stores[i..], size, true) else {
                self.write(stores[i].0, &stores[i].1.to_le_bytes()[..size], who(i)).map_err(|f| (i, f))?;
                i += 1;
                continue;
            };
            let w = self.windows[0].as_ref().expect("the window of the run");
            let (lanes, local) = (&stores[i..i + run], w.local);
            w.backing.with((lo - w.start) as usize, (hi - lo) as usize, |bytes| {
                for &(addr, value) in lanes {
                    let at = (addr - lo) as usize;
                    bytes[at..at + size].copy_from_slice(&value.to_le_bytes()[..size]);
                }
            });
            self.add(local, (run * size) as u64, false);
            i += run;
        }
        Ok(())
    }

    /// Device printf, written out at once: a GPU's driver writes it at the next
    /// synchronisation, and a simulated launch has run by then.
    fn output(&mut self, _: Thread, to: Output, text: &str) {
        match to {
            Output::Printf => c_stdout(text),
            Output::Assertion => to.write(text),
        }
    }

    fn keep_running(&mut self, instructions: u64) -> bool {
        self.watchdog.keep_running(instructions)
    }
}

/// A launch's watchdog by time: a line every [`PROGRESS`] that the kernel still runs, and the
/// launch stopped once it has run the topology's `kernel_timeout_s` (0: never).
struct Watchdog {
    started: std::time::Instant,
    limit: Option<std::time::Duration>,
    every: std::time::Duration,
    next_line: std::time::Instant,
    what: String,
    fired: bool,
}

/// How often a long launch says it still runs (twice before a shorter limit fires).
const PROGRESS: std::time::Duration = std::time::Duration::from_secs(10);

impl Watchdog {
    fn new(limit_s: u64, what: String) -> Watchdog {
        let started = std::time::Instant::now();
        let limit = (limit_s > 0).then(|| std::time::Duration::from_secs(limit_s));
        let every = limit.map_or(PROGRESS, |l| PROGRESS.min(l / 2));
        Watchdog { started, limit, every, next_line: started + every, what, fired: false }
    }

    fn keep_running(&mut self, instructions: u64) -> bool {
        let now = std::time::Instant::now();
        if self.limit.is_some_and(|limit| now - self.started >= limit) {
            self.fired = true;
            return false;
        }
        if now >= self.next_line {
            let limit = self.limit.map_or("no limit".to_owned(), |l| format!("stopped at {} s", l.as_secs()));
            peerpool::fault::notice(&format!(
                "peerpool-sim: {} still running after {} s, {instructions} thread-instructions ({limit}: \
                 --kernel-timeout)",
                self.what,
                (now - self.started).as_secs()
            ));
            self.next_line = now + self.every;
        }
        true
    }
}

/// Writes `text` through the C library's `stdout`, the program's own stdio buffer, as NVIDIA's
/// driver writes device `printf`: its lines land among the program's own in the order they
/// were printed, also when standard output is a file or a pipe (and fully buffered).
fn c_stdout(text: &str) {
    unsafe extern "C" {
        /// The C library's standard output stream.
        static stdout: *mut libc::FILE;
    }
    // SAFETY: `stdout` is the C library's stream, valid for the process's life, and `fwrite`
    // locks it; `text` is `text.len()` readable bytes.
    unsafe {
        libc::fwrite(text.as_ptr().cast(), 1, text.len(), stdout);
    }
}
