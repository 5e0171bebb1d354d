//! The per-pair verification behind `peerpool check`: for each ordered pair, a grant on a fresh
//! pool, the accessor's kernels writing and reading the owner's memory, system-scope atomics
//! from both GPUs, and a negative probe (an ungranted access must fault) run in isolation.
//! [`check_all`] runs the in-process steps in rounds ([`crate::rounds`]), pairs on different
//! devices at once, and the negative probes beside them, pipelined ([`crate::probes`]).

use crate::driver::timeline;
use crate::driver::{Access, LaunchShape, PoolProps, Stream};
use crate::facts::Facts;
use crate::kernels::BLOCK;
use crate::memory::DeviceSlice;
use crate::report::{Status, TrialRecord};
use crate::{Grant, GrantError, PoolOptions, System};
use crate::{probes, rounds};
use std::time::{Duration, Instant};

/// Words in each check buffer: 4 MiB.
pub const WORDS: u64 = 1 << 20;

/// How a negative probe is isolated from the process running the checks: a process of its
/// own, started and readied ([`ReadyProbe`]) before it is let go, so that a pipelined check
/// ([`crate::probes`]) readies probes while others fault.
pub trait Isolate: Send + Sync {
    /// Starts the probe of `owner`'s memory read by `accessor` somewhere its fault cannot hurt
    /// this process, and returns once it is ready for its faulting read.
    fn prepare(&self, owner: usize, accessor: usize) -> Result<Box<dyn PreparedProbe + '_>, String>;
}

/// A probe started by [`Isolate::prepare`], waiting to be let go.
pub trait PreparedProbe: Send {
    /// Makes the faulting read and returns as soon as the probe reports how it ended: the
    /// `CudaCode` name and stickiness, `None` if it did not fail. Its process may still be
    /// tearing down its dead context.
    fn go(&mut self) -> Result<Option<(String, bool)>, String>;

    /// Waits until the probe's process has ended (and charges its exit to the caller's virtual
    /// time on a simulated machine).
    fn reap(self: Box<Self>) -> Result<(), String>;
}

/// Which ordered pairs' negative probes `check` runs. Every other step runs on every pair.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProbeChoice {
    /// Every ordered pair with a peer path: each pair's fault proven.
    #[default]
    All,
    /// One ordered pair per GPU as the accessor (its next GPU with a peer path as the owner).
    PerGpu,
    /// At most this many pairs, the first of the pipeline's order (spread over the GPUs).
    Count(usize),
}

impl ProbeChoice {
    /// The pairs to probe among `capable` (ordered pairs of `n` devices with a peer path).
    pub fn pairs(self, n: usize, capable: &[(usize, usize)]) -> Vec<(usize, usize)> {
        match self {
            ProbeChoice::All => capable.to_vec(),
            ProbeChoice::PerGpu => {
                (0..n).filter_map(|a| (1..n).map(|k| ((a + k) % n, a)).find(|pair| capable.contains(pair))).collect()
            }
            ProbeChoice::Count(k) => probes::Plan::new(n, capable).order().iter().take(k).copied().collect(),
        }
    }

    /// How it is asked for on `peerpool check`'s command line.
    pub fn describe(self) -> String {
        match self {
            ProbeChoice::All => "all".into(),
            ProbeChoice::PerGpu => "sample".into(),
            ProbeChoice::Count(k) => k.to_string(),
        }
    }
}

/// How many probes the pipeline starts ahead of the oldest one not yet reported on `n` GPUs:
/// as many as the GPUs, 6 to 16. Enough that a probe's `cuInit` and context are done before its
/// turn (a probe's start to its fault is about four context creations on the H200s); few
/// enough that the waiting probes' contexts, each holding memory on its GPU, stay a handful a
/// GPU. On the simulated 8- and 16-GPU nodes, 8 to 32 projected within 0.1 s of each other.
pub fn probe_window(n: usize) -> usize {
    n.clamp(6, 16)
}

/// The result of one step of one pair.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepResult {
    /// The step's name (`grant`, `kernel_write`, ...).
    pub step: &'static str,
    /// How it ended.
    pub status: Status,
    /// The failure or skip reason, or what was seen.
    pub detail: String,
    /// Wall time in milliseconds.
    pub millis: u64,
}

/// Every step of one ordered pair.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairResult {
    /// The pool's device.
    pub owner: usize,
    /// The accessing device.
    pub accessor: usize,
    /// The steps in order.
    pub steps: Vec<StepResult>,
}

impl PairResult {
    /// `OK`, `OK*` (as `OK`, but no negative probe ran: its fault is not proven), `FAIL`, or
    /// `N/A` (no peer path: nothing to grant).
    pub fn verdict(&self) -> &'static str {
        if self.steps.iter().any(|s| s.status == Status::Failed) {
            "FAIL"
        } else if self.steps.iter().any(|s| s.step == "grant" && s.status == Status::Skipped) {
            "N/A"
        } else if !self.fault_proven() {
            "OK*"
        } else {
            "OK"
        }
    }

    /// Whether this pair's negative probe ran and its ungranted read faulted.
    pub fn fault_proven(&self) -> bool {
        self.steps.iter().any(|s| s.step == "negative_probe" && s.status == Status::Passed)
    }

    /// The steps as report trials, named `check::<step>::gpu<owner>->gpu<accessor>`.
    pub fn trials(&self) -> Vec<TrialRecord> {
        self.steps
            .iter()
            .map(|s| TrialRecord {
                name: format!("check::{}::gpu{}->gpu{}", s.step, self.owner, self.accessor),
                binary: "peerpool-check".into(),
                status: s.status,
                detail: (!s.detail.is_empty()).then(|| s.detail.clone()),
                millis: Some(s.millis),
            })
            .collect()
    }
}

/// The steps, in order, for progress reporting.
pub const STEPS: [&str; 5] = ["grant", "kernel_write", "kernel_read", "system_atomics", "negative_probe"];

/// Runs every step for `owner -> accessor`, one after another. Never panics; a step that
/// cannot run is skipped with the reason. `progress` is called after each step.
pub fn check_pair(
    system: &System,
    facts: &Facts,
    owner: usize,
    accessor: usize,
    isolate: &dyn Isolate,
    progress: &mut dyn FnMut(&StepResult),
) -> PairResult {
    let mut steps = in_process_steps(system, facts, owner, accessor, progress);
    let probe = probe_step(isolate, facts, owner, accessor, None);
    progress(&probe);
    steps.push(probe);
    PairResult { owner, accessor, steps }
}

/// Checks every ordered pair of the system's devices: the in-process steps in rounds
/// ([`crate::rounds`]: the device pairs of one round at once, each on its own thread, its two
/// directions in turn) and, beside them from the start, the negative probes of the pairs
/// `choice` names pipelined ([`crate::probes`]): each probe readied in a process of its own
/// ahead of its turn, let go once no earlier probe sharing one of its GPUs is still faulting,
/// so no GPU is ever in two faulting probes at once. A pair whose probe did not run has its
/// `negative_probe` step skipped with the reason (its verdict `OK*`). Before the first round
/// (while the first probes start), the verifier's probes are readied for every pair with a
/// peer path at once ([`System::prepare_verification`]; a failure there shows again in the
/// pairs' grants).
///
/// Returns one [`PairResult`] per ordered pair, sorted by owner then accessor; a failure, or
/// a panic, in one pair is that pair's alone. `progress` is called from the worker threads
/// after each step, with the pair.
pub fn check_all(
    system: &System,
    facts: &Facts,
    isolate: &dyn Isolate,
    choice: ProbeChoice,
    progress: &(dyn Fn(usize, usize, &StepResult) + Sync),
) -> Vec<PairResult> {
    let n = facts.devices.len();
    let capable = |o: usize, a: usize| facts.peer(a, o).is_some_and(|p| p.can_access);
    let pairs: Vec<(usize, usize)> = (0..n)
        .flat_map(|o| (0..n).filter(move |&a| a != o).map(move |a| (o, a)))
        .filter(|&(o, a)| capable(o, a))
        .collect();
    let timeline = system.driver().timeline();
    let plan = probes::Plan::new(n, &choice.pairs(n, &pairs));
    let schedule = rounds::Schedule::round_robin(n);
    let start = timeline.map_or(Duration::ZERO, |t| t.now());
    let (outcomes, probed) = std::thread::scope(|s| {
        let pipeline = s.spawn(|| {
            timeline::from(timeline, start, || {
                probes::run(&plan, probe_window(n), timeline, |gate| {
                    let (o, a) = gate.pair();
                    let step = probe_step(isolate, facts, o, a, Some(gate));
                    progress(o, a, &step);
                    step
                })
            })
        });
        // The probes start now, beside the parent's contexts: each is a process of its own.
        let _ = system.prepare_verification(&pairs);
        let outcomes = rounds::run(&schedule, timeline, |pair| {
            pair.directions
                .iter()
                .map(|&(o, a)| {
                    let steps = in_process_steps(system, facts, o, a, &mut |step| progress(o, a, step));
                    PairResult { owner: o, accessor: a, steps }
                })
                .collect::<Vec<_>>()
        });
        let (probed, end) = pipeline.join().unwrap_or_else(|panic| {
            let failed = format!("the probes' thread {}", rounds::panic_message(panic.as_ref()));
            (plan.order().iter().map(|_| Err(failed.clone())).collect(), start)
        });
        if let Some(t) = timeline {
            t.set_now(t.now().max(end));
        }
        (outcomes, probed)
    });
    let mut probe_steps: std::collections::HashMap<(usize, usize), StepResult> = plan
        .order()
        .iter()
        .zip(probed)
        .map(|(&pair, outcome)| {
            let step = outcome.unwrap_or_else(|panic| StepResult {
                step: "negative_probe",
                status: Status::Failed,
                detail: format!("the probe's thread {panic}"),
                millis: 0,
            });
            (pair, step)
        })
        .collect();
    let mut results: Vec<PairResult> = Vec::new();
    for (round, outcomes) in schedule.rounds().iter().zip(outcomes) {
        for (pair, outcome) in round.pairs.iter().zip(outcomes) {
            match outcome {
                Ok(done) => results.extend(done),
                Err(panic) => results.extend(pair.directions.iter().map(|&(owner, accessor)| PairResult {
                    owner,
                    accessor,
                    steps: vec![StepResult {
                        step: "grant",
                        status: Status::Failed,
                        detail: format!("the pair's thread {panic}"),
                        millis: 0,
                    }],
                })),
            }
        }
    }
    for result in &mut results {
        let (o, a) = (result.owner, result.accessor);
        let step = probe_steps.remove(&(o, a)).unwrap_or_else(|| {
            let detail = match capable(o, a) {
                true => format!(
                    "not probed (--probes {}): this pair's ungranted access was not shown to fault",
                    choice.describe()
                ),
                false => "no peer path".to_string(),
            };
            let step = StepResult { step: "negative_probe", status: Status::Skipped, detail, millis: 0 };
            progress(o, a, &step);
            step
        });
        result.steps.push(step);
    }
    results.sort_by_key(|p| (p.owner, p.accessor));
    results
}

/// The steps of one pair that run in this process: grant, kernel write and read, atomics.
fn in_process_steps(
    system: &System,
    facts: &Facts,
    owner: usize,
    accessor: usize,
    progress: &mut dyn FnMut(&StepResult),
) -> Vec<StepResult> {
    let mut steps = Vec::new();
    let mut record = |step: &'static str, start: Instant, outcome: Result<String, (Status, String)>| {
        let (status, detail) = match outcome {
            Ok(seen) => (Status::Passed, seen),
            Err(other) => other,
        };
        let result = StepResult { step, status, detail, millis: start.elapsed().as_millis() as u64 };
        progress(&result);
        steps.push(result);
    };
    let fail = |e: &dyn std::fmt::Display| (Status::Failed, e.to_string());
    let start = Instant::now();
    let pool = match system.create_pool(owner, PoolOptions::default()) {
        Ok(pool) => pool,
        Err(e) => {
            record("grant", start, Err(fail(&format!("creating a pool on gpu{owner}: {e}"))));
            return steps;
        }
    };
    let granted = match system.grant(pool.as_ref(), accessor) {
        Ok(g @ (Grant::Granted { .. } | Grant::AlreadyGranted)) => Ok(format!("{g:?}")),
        Ok(other) => Err(fail(&format!("unexpected {other:?}"))),
        Err(e @ GrantError::Unsupported { .. }) => Err((Status::Skipped, e.to_string())),
        Err(e) => Err(fail(&e)),
    };
    let usable = granted.is_ok();
    let unsupported = matches!(&granted, Err((Status::Skipped, _)));
    record("grant", start, granted);
    let not_granted = if unsupported { "no peer path" } else { "the grant failed" };

    let start = Instant::now();
    let memory = if usable {
        system.alloc(pool.as_ref(), (WORDS * 4) as usize).map_err(|e| fail(&e))
    } else {
        skip(not_granted)
    };
    let kernel = |writer: usize, reader: usize, seed: u32| -> Result<String, (Status, String)> {
        let memory = memory.as_ref().map_err(Clone::clone)?.as_slice();
        system.with_kernels(writer, |k| k.fill(memory, seed)).map_err(|e| fail(&e))?;
        let seen = system.with_kernels(reader, |k| k.compare_pattern(memory, seed)).map_err(|e| fail(&e))?;
        match seen.first_mismatch {
            None => Ok(format!("{} MiB written by gpu{writer}, checked by gpu{reader}", (WORDS * 4) >> 20)),
            Some(first) => Err(fail(&format!("{} wrong words, the first at word {first}", seen.mismatches))),
        }
    };
    record("kernel_write", start, kernel(accessor, owner, 0xC0DE_0001));
    let start = Instant::now();
    record("kernel_read", start, kernel(owner, accessor, 0xC0DE_0002));

    let start = Instant::now();
    let atomics = facts.peer(accessor, owner).is_some_and(|p| p.native_atomics);
    let outcome = match (&memory, atomics) {
        (Err(_), _) => skip(not_granted),
        (Ok(_), false) => skip("no native atomics on this pair"),
        (Ok(memory), true) => atomics_from_both(system, memory, owner, accessor),
    };
    record("system_atomics", start, outcome);
    steps
}

/// The negative probe of one pair, isolated: skipped without a peer path (nothing to deny).
/// With a `gate` (a pipelined check), the probe is readied, then waits at the gate for its
/// GPUs, reports when its read has ended, and its process is waited for after that.
fn probe_step(
    isolate: &dyn Isolate,
    facts: &Facts,
    owner: usize,
    accessor: usize,
    mut gate: Option<&mut probes::Gate<'_>>,
) -> StepResult {
    let start = Instant::now();
    let fail = |e: &dyn std::fmt::Display| (Status::Failed, e.to_string());
    let outcome = if !facts.peer(accessor, owner).is_some_and(|p| p.can_access) {
        skip("no peer path")
    } else {
        let prepared = match gate.as_deref_mut() {
            Some(gate) => gate.in_turn(|| isolate.prepare(owner, accessor)),
            None => isolate.prepare(owner, accessor),
        };
        let ran = prepared.and_then(|mut ready| {
            if let Some(gate) = gate.as_deref() {
                gate.wait();
            }
            let read = ready.go();
            if let Some(gate) = gate {
                gate.report();
            }
            let reaped = ready.reap();
            let read = read?;
            reaped.map_err(|e| format!("the probe's read ended ({read:?}) but its process did not: {e}"))?;
            Ok(read)
        });
        match ran {
            Ok(Some((code, true))) if code == "CUDA_ERROR_ILLEGAL_ADDRESS" => {
                Ok("an ungranted read faulted with a sticky CUDA_ERROR_ILLEGAL_ADDRESS (isolated)".into())
            }
            Ok(Some((code, sticky))) => Err(fail(&format!("the isolated probe ended with {code} (sticky: {sticky})"))),
            Ok(None) => Err(fail(&"an ungranted kernel read did not fault")),
            Err(e) => Err(fail(&e)),
        }
    };
    let (status, detail) = match outcome {
        Ok(seen) => (Status::Passed, seen),
        Err(other) => other,
    };
    StepResult { step: "negative_probe", status, detail, millis: start.elapsed().as_millis() as u64 }
}

fn skip<T>(why: &str) -> Result<T, (Status, String)> {
    Err((Status::Skipped, why.to_string()))
}

/// Both GPUs add to the same counters at once with system-scope atomics; the totals must be
/// exact.
fn atomics_from_both(
    system: &System,
    memory: &crate::Allocation,
    owner: usize,
    accessor: usize,
) -> Result<String, (Status, String)> {
    let fail = |e: &dyn std::fmt::Display| (Status::Failed, e.to_string());
    let slots = 64u64;
    memory.write(&vec![0u8; (slots * 4) as usize]).map_err(|e| fail(&e))?;
    let shape = LaunchShape { grid: 64, block: BLOCK };
    let reps = 64u32;
    let counters = memory.words(slots).map_err(|e| fail(&e))?;
    let add = |device: usize| system.with_kernels(device, |k| k.atomic_add_sys(counters, reps, shape));
    let timeline = system.driver().timeline();
    let start = timeline.map_or(Duration::ZERO, |t| t.now());
    std::thread::scope(|s| {
        let other = s.spawn(|| timeline::from(timeline, start, || add(accessor)));
        let mine = add(owner);
        let (theirs, end) = other
            .join()
            .unwrap_or_else(|_| (Err(crate::Error::InvalidArgument("the atomics thread panicked".into())), start));
        if let Some(t) = timeline {
            t.set_now(t.now().max(end));
        }
        theirs?;
        mine
    })
    .map_err(|e| fail(&e))?;
    let expected = 2 * (shape.grid as u64 * shape.block as u64 / slots) * reps as u64;
    let words = memory.read_words(slots as usize).map_err(|e| fail(&e))?;
    match words.iter().position(|&w| w as u64 != expected) {
        None => {
            Ok(format!("{} system-scope adds from gpu{owner} and gpu{accessor}, every counter exact", expected * slots))
        }
        Some(i) => Err(fail(&format!("counter {i} is {}, expected {expected}", words[i]))),
    }
}

/// The negative probe itself: a fresh pool on `owner` that does not grant `accessor`, read by
/// the accessor's kernel. Expected to end in a sticky `CUDA_ERROR_ILLEGAL_ADDRESS`, which kills
/// this process's CUDA context: run it in isolation. [`ReadyProbe::prepare`] and
/// [`ReadyProbe::read`] one after the other.
pub fn negative_probe(system: &System, owner: usize, accessor: usize) -> crate::Result<()> {
    ReadyProbe::prepare(system, owner, accessor)?.read()
}

/// A negative probe readied up to its faulting read: the accessor's context made, an ungranted
/// pool on the owner allocated from, the accessor's kernels loaded. Everything that costs time
/// before the fault, so that a pipelined `check` can ready probes while others fault.
///
/// Only the accessor's context is made current: the pool is created and allocated from with it,
/// so a probe's process makes one context, not two (on the two H200s the driver allows it, the
/// owner's primary context stays inactive, and the read faults the same way:
/// `docs/hardware/2026-12-01-one-context-probe`). What the memory holds does not matter.
pub struct ReadyProbe {
    system: System,
    accessor: usize,
    pool: crate::driver::Pool,
    ptr: crate::driver::DevicePtr,
}

impl ReadyProbe {
    const BYTES: usize = 1 << 20;

    /// Readies the probe of `owner`'s memory read by `accessor`.
    pub fn prepare(system: &System, owner: usize, accessor: usize) -> crate::Result<ReadyProbe> {
        let device = system.device_handle(owner)?;
        system.device_handle(accessor)?;
        let driver = system.driver();
        system
            .within(accessor, || {
                let pool = driver.mem_pool_create(&PoolProps { device, ..PoolProps::default() })?;
                // SAFETY (the calls on `pool`): made just above; destroyed here only on failure.
                let ptr = match unsafe { driver.mem_pool_get_access(pool, accessor as i32) } {
                    Ok(Access::None) => unsafe { driver.mem_alloc_from_pool_async(Self::BYTES, pool, Stream::LEGACY) }
                        .and_then(|ptr| unsafe { driver.stream_synchronize(Stream::LEGACY) }.map(|()| ptr))
                        .map_err(Into::into),
                    Ok(_) => Err(crate::Error::InvalidArgument("a new pool already grants the accessor".into())),
                    Err(e) => Err(e.into()),
                };
                match ptr {
                    Ok(ptr) => Ok(ReadyProbe { system: system.clone(), accessor, pool, ptr }),
                    Err(e) => {
                        let _ = unsafe { driver.mem_pool_destroy(pool) };
                        Err(e)
                    }
                }
            })
            .and_then(|ready| system.with_kernels(accessor, |_| Ok(())).map(|()| ready))
    }

    /// The accessor's kernel reads the ungranted memory. `Ok` means it did not fault (the probe
    /// failed); a sticky `CUDA_ERROR_ILLEGAL_ADDRESS` is what a working pool permission gives.
    pub fn read(self) -> crate::Result<()> {
        let (system, driver) = (&self.system, self.system.driver());
        // SAFETY: `ptr` starts a live allocation of `BYTES` from `pool`, both made by `prepare`.
        let memory = unsafe { DeviceSlice::from_raw(self.ptr, Self::BYTES as u64) };
        let read = system.with_kernels(self.accessor, |k| k.compare_pattern(memory, 1));
        // A read that did not fault leaves the process usable: give the memory back.
        let sticky = read.as_ref().err().and_then(crate::Error::cuda).is_some_and(|e| e.sticky);
        if !sticky {
            let _ = system.within(self.accessor, || {
                let _ = unsafe { driver.mem_free_async(self.ptr, Stream::LEGACY) };
                let _ = unsafe { driver.stream_synchronize(Stream::LEGACY) };
                let _ = unsafe { driver.mem_pool_destroy(self.pool) };
                Ok::<(), crate::Error>(())
            });
        }
        read.map(drop)
    }
}

/// The matrix like `nvidia-smi topo -m`: rows read (accessor), columns own the pool. Each
/// verdict has the pair's link beside it where `facts` name one (`OK NV18`; NVML's names, see
/// [`crate::links`]).
pub fn render_matrix(facts: &Facts, pairs: &[PairResult]) -> String {
    let n = facts.devices.len();
    let linked = facts.peers.iter().any(|p| p.link.is_some());
    let width = if linked { 11 } else { 8 };
    let mut out = format!("{:>width$}", "");
    for owner in 0..n {
        out += &format!("{:>width$}", format!("GPU{owner}"));
    }
    out.push('\n');
    for accessor in 0..n {
        out += &format!("{:>width$}", format!("GPU{accessor}"));
        for owner in 0..n {
            let cell = if owner == accessor {
                "X".to_string()
            } else {
                let verdict =
                    pairs.iter().find(|p| p.owner == owner && p.accessor == accessor).map_or("-", PairResult::verdict);
                match facts.peer(accessor, owner).and_then(|p| p.link.as_deref()) {
                    Some(link) => format!("{verdict} {link}"),
                    None => verdict.to_string(),
                }
            };
            out += &format!("{cell:>width$}");
        }
        out.push('\n');
    }
    out += "\nrow: the GPU whose kernels access; column: the GPU that owns the pool.\n";
    out += "OK: granted, kernels read, write and add atomically, and an ungranted access faults;\n";
    out += "OK*: as OK, but no negative probe ran for this pair (--probes): its fault is not proven;\n";
    out += "FAIL: a step failed (listed below); N/A: no peer path; -: not checked.\n";
    if linked {
        out += "Beside each verdict, the link as NVML names it (NV<n>: n NVLinks; PIX, PXB, PHB, NODE, SYS: PCIe).\n";
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::PeerFacts;

    fn pair(owner: usize, accessor: usize, status: Status) -> PairResult {
        let step = |step, status| StepResult { step, status, detail: String::new(), millis: 0 };
        PairResult { owner, accessor, steps: vec![step("grant", status), step("negative_probe", Status::Passed)] }
    }

    #[test]
    fn a_pair_whose_probe_did_not_run_is_ok_star_and_a_failed_probe_fails() {
        let mut unprobed = pair(0, 1, Status::Passed);
        unprobed.steps[1].status = Status::Skipped;
        assert_eq!((unprobed.verdict(), unprobed.fault_proven()), ("OK*", false));
        let mut failed = pair(0, 1, Status::Passed);
        failed.steps[1].status = Status::Failed;
        assert_eq!(failed.verdict(), "FAIL");
        assert_eq!((pair(0, 1, Status::Passed).verdict(), pair(0, 1, Status::Skipped).verdict()), ("OK", "N/A"));
        let text = render_matrix(&facts([None, None]), &[unprobed, pair(1, 0, Status::Passed)]);
        let rows: Vec<Vec<&str>> = text.lines().skip(1).take(2).map(|l| l.split_whitespace().collect()).collect();
        assert_eq!(rows, [vec!["GPU0", "X", "OK"], vec!["GPU1", "OK*", "X"]], "{text}");
    }

    fn facts(links: [Option<&str>; 2]) -> Facts {
        let device = |ordinal| crate::facts::DeviceFacts {
            ordinal,
            name: "NVIDIA H200".into(),
            compute_capability: (9, 0),
            total_memory: 1 << 30,
            pools_supported: true,
            pool_handle_types: crate::driver::HandleKinds::POSIX_FD,
            current_pool_is_default: true,
            default_pool_access: vec![],
            pci_address: (0, 0x18 + ordinal as u32, 0),
        };
        let peer = |from, to, link: Option<&str>| PeerFacts {
            from,
            to,
            can_access: true,
            native_atomics: true,
            performance_rank: 0,
            link: link.map(str::to_string),
        };
        Facts {
            driver: "CUDA driver 13.0".into(),
            devices: vec![device(0), device(1)],
            peers: vec![peer(0, 1, links[0]), peer(1, 0, links[1])],
        }
    }

    #[test]
    fn the_matrix_shows_each_pair_s_link_beside_its_verdict() {
        let results = [pair(0, 1, Status::Passed), pair(1, 0, Status::Failed)];
        let text = render_matrix(&facts([Some("NV18"), Some("NV18")]), &results);
        let rows: Vec<&str> = text.lines().take(3).collect();
        assert_eq!(rows[1].split_whitespace().collect::<Vec<_>>(), ["GPU0", "X", "FAIL", "NV18"], "{text}");
        assert_eq!(rows[2].split_whitespace().collect::<Vec<_>>(), ["GPU1", "OK", "NV18", "X"], "{text}");
        assert!(text.contains("the link as NVML names it"), "{text}");
        let plain = render_matrix(&facts([None, None]), &results);
        assert_eq!(plain.lines().nth(2).unwrap().split_whitespace().collect::<Vec<_>>(), ["GPU1", "OK", "X"]);
        assert!(!plain.contains("NVML"), "{plain}");
    }
}
