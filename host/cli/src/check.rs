//! `peerpool check`: verify every ordered GPU pair, print the verdict matrix, write the report.

use crate::exit;
use indicatif::{ProgressBar, ProgressStyle};
use peerpool::check::{self, Isolate, PairResult, PreparedProbe, ProbeChoice, ReadyProbe, STEPS};
use peerpool::child::{self, Call, ChildError, ChildOutcome, ChildResult, Role, Running};
use peerpool::ipc::Channel;
use peerpool::owned_dir::OwnedDir;
use peerpool::report::{BuildRecord, HardwareRecord, Report, Status};
use peerpool::text::{echo, escaped};
use peerpool::{Error, System};
use peerpool_sim::select::{self, Choice};
use peerpool_sim::{Latencies, SimDriver, Topology};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the `negative-probe` child may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(60);

/// This binary as `check`'s child: one negative probe, `owner`'s memory read by `accessor`
/// (the parent's ordinals).
pub const NEGATIVE_PROBE: Role = Role::new("negative-probe", &["owner", "accessor"]);

/// Options of `peerpool check`.
pub struct Options {
    pub topology: Option<String>,
    pub timing: Option<PathBuf>,
    pub out: PathBuf,
    pub quiet: bool,
    /// At least this many real GPUs (`--require-gpus`, else `PEERPOOL_REQUIRE_GPUS`).
    pub require_gpus: Option<usize>,
    /// Which pairs' negative probes run (`--probes`).
    pub probes: ProbeChoice,
}

/// `--probes`: `all`, `sample`, or a number of pairs (at least one).
pub fn parse_probes(text: &str) -> Result<ProbeChoice, String> {
    match text {
        "all" => Ok(ProbeChoice::All),
        "sample" => Ok(ProbeChoice::PerGpu),
        _ => match text.parse::<usize>() {
            Ok(0) => Err("0 probes would prove no pair's fault: give at least 1, `sample` or `all`".into()),
            Ok(k) => Ok(ProbeChoice::Count(k)),
            Err(_) => Err(format!("`{}` is not `all`, `sample` or a number of pairs", echo(text))),
        },
    }
}

/// The system `check` runs on, how its probes are isolated, the first line it prints, and the
/// timing model its floor comes from (none through the libcuda shim).
type Opened = (System, Box<dyn Isolate>, String, Option<Latencies>);

/// How a probe ended: the `CudaCode` name and stickiness, `None` if it did not fail.
type ProbeResult = Result<Option<(String, bool)>, String>;

/// Why no system was opened, and the exit code that says so.
enum Refused {
    /// A setting is wrong: [`exit::BAD_INPUT`].
    BadInput(String),
    /// Fewer real GPUs than required, or a simulated topology in their place: [`exit::NO_GPU`].
    GpusRequired(String),
}

pub fn run(options: Options) -> ExitCode {
    let required = match options.require_gpus {
        Some(n) => (n > 0).then_some((n, "--require-gpus")),
        None => match select::required_gpus_from_env() {
            Ok(n) => n.map(|n| (n, select::REQUIRE_GPUS)),
            Err(e) => {
                eprintln!("peerpool check: {}", escaped(&e));
                return exit::code(exit::BAD_INPUT);
            }
        },
    };
    let (system, isolate, first_line, model): Opened =
        match open(options.topology.as_deref(), options.timing.as_deref(), required) {
            Ok(opened) => opened,
            Err(Refused::BadInput(message)) => {
                eprintln!("peerpool check: {}", escaped(&message));
                return exit::code(exit::BAD_INPUT);
            }
            Err(Refused::GpusRequired(message)) => {
                eprintln!("peerpool check: GPUs required: {}", escaped(&message));
                return exit::code(exit::NO_GPU);
            }
        };
    // Before any pair is checked: a directory that cannot be ours, or a file in it that is not
    // one we may replace, is bad input, not a late failure.
    let out = match OwnedDir::create(&options.out).and_then(|out| {
        OUTPUTS.iter().try_for_each(|name| out.check_target(name))?;
        Ok(out)
    }) {
        Ok(out) => out,
        Err(e) => {
            eprintln!("peerpool check: --out: {}", escaped(&e.to_string()));
            return exit::code(exit::BAD_INPUT);
        }
    };
    println!("{first_line}");
    let started = Instant::now();
    let facts = match system.facts() {
        Ok(facts) => facts,
        Err(e) => {
            eprintln!("peerpool check: reading the driver's facts failed: {e}");
            return exit::code(exit::FAILURE);
        }
    };
    let n = facts.devices.len();
    let pair_count = n * n.saturating_sub(1);
    if pair_count == 0 {
        println!("{n} GPU(s): no pair to check");
    }
    let bar = if options.quiet { ProgressBar::hidden() } else { ProgressBar::new((pair_count * STEPS.len()) as u64) };
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}") {
        bar.set_style(style);
    }
    let progress = |owner: usize, accessor: usize, step: &check::StepResult| {
        bar.set_message(format!("gpu{owner} -> gpu{accessor} {} {:?}", step.step, step.status));
        bar.inc(1);
    };
    let results: Vec<PairResult> = check::check_all(&system, &facts, isolate.as_ref(), options.probes, &progress);
    bar.finish_and_clear();
    print!("\n{}", check::render_matrix(&facts, &results));
    let failures: Vec<String> = results
        .iter()
        .flat_map(|p| p.steps.iter().filter(|s| s.status == Status::Failed).map(move |s| (p, s)))
        .map(|(p, s)| format!("  gpu{} -> gpu{} {}: {}", p.owner, p.accessor, s.step, s.detail))
        .collect();
    if !failures.is_empty() {
        println!("\nfailed:\n{}", failures.join("\n"));
    }
    let probed: Vec<(usize, usize)> = results
        .iter()
        .filter(|p| p.steps.iter().any(|s| s.step == "negative_probe" && s.status != Status::Skipped))
        .map(|p| (p.owner, p.accessor))
        .collect();
    let unproven = results.iter().filter(|p| p.verdict() == "OK*").count();
    if unproven > 0 {
        println!(
            "\n{unproven} pair(s) marked OK* were not probed (--probes {}): their faults are not proven",
            options.probes.describe()
        );
    }
    println!("\n{}", timing_line(&system, started.elapsed(), n));
    match &model {
        Some(model) if n >= 2 => println!("{}", floor_line(&system, model, started.elapsed(), n, &probed)),
        Some(_) => {}
        None => println!(
            "floor: none: the probes ran on simulators of their own (the libcuda shim), apart from this projection"
        ),
    }
    let report = Report {
        hardware: HardwareRecord::from_facts(&facts),
        build: BuildRecord::current(),
        trials: results.iter().flat_map(PairResult::trials).collect(),
    };
    match write(&out, &report) {
        Ok(paths) => {
            let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
            println!("\nreport: {}", shown.join(", "));
        }
        Err(e) => {
            eprintln!("peerpool check: writing the report: {e}");
            return exit::code(exit::FAILURE);
        }
    }
    if !failures.is_empty() {
        exit::code(exit::FAILURE)
    } else if report.count(Status::Passed) == 0 {
        println!("nothing was checked: no pair with a peer path to verify");
        exit::code(exit::NOTHING_CHECKED)
    } else {
        exit::code(exit::SUCCESS)
    }
}

/// The real GPUs, or a simulated topology: asked for by `--topology` or `PEERPOOL_TOPOLOGY`, or
/// because there is no GPU, unless `required` GPUs (and by what) must be real. `timing` times a
/// simulated machine. A topology named by the environment is simulated by the libcuda shim
/// when that is this process's libcuda (which reads the same setting), else in this process;
/// `--topology` always simulates it here.
fn open(topology: Option<&str>, timing: Option<&Path>, required: Option<(usize, &str)>) -> Result<Opened, Refused> {
    let asked = match topology {
        Some(name) => Some((name.to_string(), "--topology")),
        None => match select::choice_from_env() {
            Ok(Choice::Real) => None,
            Ok(Choice::Shim { name, variable }) => {
                refuse_simulated(required, &name, variable)?;
                None
            }
            Ok(Choice::Simulated { name, variable, .. }) => Some((name, variable)),
            Err(e) => return Err(Refused::BadInput(e)),
        },
    };
    if let Some((name, by)) = asked {
        refuse_simulated(required, &name, by)?;
        let topo = load_topology(&name).map_err(Refused::BadInput)?;
        return simulated(topo, timing, format!("peerpool check: simulated topology `{}`", echo(&name)))
            .map_err(Refused::BadInput);
    }
    let why = match System::open() {
        Ok(system) if system.device_count() > 0 && timing.is_some() => {
            return Err(Refused::BadInput("--timing times a simulated machine: name one with --topology".into()));
        }
        Ok(system) if system.device_count() > 0 => {
            let driver = system.driver().describe();
            if let Some((n, how)) = required.filter(|_| driver.starts_with("simulated")) {
                return Err(Refused::GpusRequired(format!(
                    "{n} real GPU(s) are required ({how}), but these are {driver}"
                )));
            }
            if let Some((n, how)) = required.filter(|&(n, _)| system.device_count() < n) {
                return Err(Refused::GpusRequired(format!(
                    "{n} real GPU(s) are required ({how}), found {}",
                    system.device_count()
                )));
            }
            let line = format!("peerpool check: {} with {} GPU(s)", system.driver().describe(), system.device_count());
            let probe = ChildProbe(system.clone());
            // Real GPUs: their run is compared with the committed calibration's floor. On the
            // libcuda shim each probe child runs a simulator of its own, whose contexts the
            // parent's projection never shares: no floor to compare it with.
            let model = system.driver().timeline().is_none().then(Latencies::h200);
            return Ok((system, Box::new(probe), line, model));
        }
        Ok(_) => "the CUDA driver reports no GPU".to_string(),
        Err(Error::NoDriver { .. }) => "no CUDA driver".to_string(),
        Err(e) => format!("the CUDA driver is unusable ({e})"),
    };
    if let Some((n, how)) = required {
        return Err(Refused::GpusRequired(format!(
            "{n} real GPU(s) are required ({how}), but {why} here (no simulated fallback)"
        )));
    }
    let line = format!(
        "peerpool check: SIMULATED: {why} here, so this run uses the built-in simulated topology \
         (2 x NVIDIA H200 over NVLink); no real GPU is checked"
    );
    simulated(Topology::two_h200(), timing, line).map_err(Refused::BadInput)
}

/// Refuses the simulated topology `name`, asked for `by` a flag or variable, when real GPUs are
/// `required`.
fn refuse_simulated(required: Option<(usize, &str)>, name: &str, by: &str) -> Result<(), Refused> {
    match required {
        Some((n, how)) => Err(Refused::GpusRequired(format!(
            "{n} real GPU(s) are required ({how}), but {by} asks for the simulated topology `{}`",
            echo(name)
        ))),
        None => Ok(()),
    }
}

fn simulated(topology: Topology, timing: Option<&Path>, line: String) -> Result<Opened, String> {
    let mut sim = SimDriver::new(topology);
    if let Some(path) = timing {
        sim = sim.timed(Latencies::load(path)?);
    }
    let sim = Arc::new(sim);
    // As `System::open` does on a GPU machine: the clock counts cuInit.
    sim.init(0).map_err(|e| e.to_string())?;
    let system = System::with_driver(sim.clone()).map_err(|e| e.to_string())?;
    let model = sim.latencies();
    Ok((system, Box::new(ChildSim(sim)), line, Some(model)))
}

/// The most GPUs `check` takes on a simulated topology. It checks N × (N − 1) ordered pairs,
/// 8 to 12 ms each on the simulator: on this project's 2-core machine 72 GPUs' 5,112 pairs
/// took 40 s and 128 GPUs' 16,256 pairs about 200 s, while the 1,024 a topology may hold
/// would take hours.
pub const MAX_CHECK_GPUS: usize = 128;

/// A catalog stem (`four_gpu_islands`) or a path to a topology file (anything with a `/`, a
/// `.toml` ending, or an existing file), refused when `check` would take too long on it.
fn load_topology(name: &str) -> Result<Topology, String> {
    let topology = peerpool_sim::select::resolve_topology(name)?;
    if topology.device_count() > MAX_CHECK_GPUS {
        return Err(format!(
            "topology {} has {} GPUs; check takes at most {MAX_CHECK_GPUS} ({} ordered pairs would take too long)",
            echo(name),
            topology.device_count(),
            topology.device_count() * (topology.device_count() - 1)
        ));
    }
    Ok(topology)
}

/// check.json, check.md and junit.xml, all staged before any replaces its old copy.
/// The files `check` writes in its `--out` directory, in [`write()`]'s order.
const OUTPUTS: [&str; 3] = ["check.json", "check.md", "junit.xml"];

fn write(out: &OwnedDir, report: &Report) -> Result<Vec<PathBuf>, String> {
    let json = serde_json::to_string_pretty(report).map_err(|e| e.to_string())?;
    let junit = crate::junit::render(report, "peerpool check")?;
    let files = OUTPUTS.into_iter().zip([json, report.to_markdown(), junit]);
    let staged: Vec<_> = files
        .map(|(name, text)| out.stage(name, text.as_bytes()))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    staged.into_iter().map(|s| s.commit().map_err(|e| e.to_string())).collect()
}

/// How long the run took, and on a simulated machine what it would take on the real one (the
/// simulator's timing model, its process start and exit included).
fn timing_line(system: &System, took: Duration, devices: usize) -> String {
    let took = format!("took {:.2} s", took.as_secs_f64());
    match system.driver().timeline() {
        Some(timeline) => {
            let projected = timeline.wall();
            format!(
                "timing: {took} here; projected on the simulated machine ({devices} GPU(s), the timing model of {}): {:.2} s",
                timeline.describe(),
                projected.as_secs_f64()
            )
        }
        None => format!("timing: {took}"),
    }
}

/// The floor of this check ([`Latencies::check_floor`]: what its serial resources alone
/// hold, from the model's measured constants) and the ratio of the projected wall time (on a
/// simulated machine) or the measured one (on real GPUs, against the committed calibration) to
/// it.
fn floor_line(system: &System, model: &Latencies, took: Duration, devices: usize, probed: &[(usize, usize)]) -> String {
    let floor = model.check_floor(devices, probed);
    let (wall, what) = match system.driver().timeline() {
        Some(timeline) => (timeline.wall(), "projected"),
        None => (took, "measured, against the floor of the H200 calibration"),
    };
    let floor_s = floor.wall.as_secs_f64();
    let ratio = if floor_s > 0.0 { wall.as_secs_f64() / floor_s } else { f64::INFINITY };
    format!("floor: {floor_s:.2} s ({}, {} probe(s)); {what} / floor: {ratio:.2}x", floor.bound, probed.len())
}

/// Negative probes in a new simulated process on the same machine, as on GPUs in a child
/// process: the child dies, this one lives on. Like [`ChildProbe`]'s, it sees only the pair.
struct ChildSim(Arc<SimDriver>);

impl Isolate for ChildSim {
    fn prepare(&self, owner: usize, accessor: usize) -> Result<Box<dyn PreparedProbe + '_>, String> {
        // Started by the calling thread now: its cuInit and context take the machine's locks.
        let child = Arc::new(self.0.child_process_seeing(2));
        let fork = System::with_driver(child.clone()).map_err(|e| e.to_string())?;
        let ready = ReadyProbe::prepare(&fork, owner, accessor).map_err(|e| e.to_string());
        Ok(Box::new(SimProbe { parent: &self.0, child, ready: Some(ready) }))
    }
}

/// A simulated probe process, readied on the calling thread.
struct SimProbe<'p> {
    parent: &'p SimDriver,
    child: Arc<SimDriver>,
    ready: Option<Result<ReadyProbe, String>>,
}

impl PreparedProbe for SimProbe<'_> {
    fn go(&mut self) -> ProbeResult {
        use peerpool::driver::Timeline;
        let ready = self.ready.take().ok_or("the probe was let go twice")??;
        // The read starts when this thread was let go, or when the child was ready if later;
        // the report reaches this thread when the read has ended.
        self.child.set_now(Timeline::now(self.parent).max(Timeline::now(&*self.child)));
        let outcome = ready.read().err().and_then(|e| e.cuda().map(|c| (c.code_name(), c.sticky)));
        self.parent.set_now(Timeline::now(self.parent).max(Timeline::now(&*self.child)));
        Ok(outcome)
    }

    fn reap(self: Box<Self>) -> Result<(), String> {
        let SimProbe { parent, child, ready } = *self;
        drop(ready);
        // The parent waits for its child process: on the simulator's clock too.
        parent.wait_for(&child);
        Ok(())
    }
}

/// Negative probes in a child process: this binary as [`NEGATIVE_PROBE`], with a timeout, on a
/// channel. The child sees only the pair (`CUDA_VISIBLE_DEVICES`, by UUID) and finds both GPUs
/// by their UUIDs: `cuInit` then sets up two devices, not the machine's every one. It says
/// `ready` when its read is all that is left, reads when told `go`, and sends its report
/// before it exits. On the libcuda shim (a driver with a timeline) the child reports its
/// projected wall time, which this thread waited for from the child's start.
struct ChildProbe(System);

/// What the probe child sends when only its read is left, and what it is then sent.
const READY: &[u8] = b"ready";
const GO: &[u8] = b"go";

impl Isolate for ChildProbe {
    fn prepare(&self, owner: usize, accessor: usize) -> Result<Box<dyn PreparedProbe + '_>, String> {
        let mut command = NEGATIVE_PROBE.command();
        command.arg("owner", owner).arg("accessor", accessor);
        child::see_only_pair(&mut command, &self.0, (owner, accessor));
        let command = command.build().map_err(|e| e.to_string())?;
        let started = self.0.driver().timeline().map(|t| t.now());
        let (channel, running) =
            child::spawn_with_channel(command, PROBE_TIMEOUT).map_err(|e| format!("the probe could not start: {e}"))?;
        // No pid check on our end: a socketpair's peer credentials name its creator (us), and
        // only the child holds the other end.
        // The child is killed at its timeout, which closes the channel: no shorter wait here.
        channel.set_timeout(Some(PROBE_TIMEOUT)).map_err(|e| format!("the probe's channel: {e}"))?;
        let mut probe = RealProbe { system: &self.0, channel, running: Some(running), started, early: None };
        match probe.channel.recv() {
            Ok(message) if message.bytes == READY => {}
            // It ended before its read: what it reported, or how it ended.
            Ok(message) => probe.early = Some(reported(&message.bytes)),
            Err(_) => probe.early = Some(probe.finish().0),
        }
        Ok(Box::new(probe))
    }
}

/// A probe child waiting for `go`.
struct RealProbe<'s> {
    system: &'s System,
    channel: Channel,
    running: Option<Running>,
    /// The parent thread's virtual time at the child's start, on the shim.
    started: Option<Duration>,
    /// How it ended, if it did before its read.
    early: Option<ProbeResult>,
}

impl RealProbe<'_> {
    /// Waits for the child's end (at most once): how it ended; on the shim, its projected end
    /// on this thread's clock.
    fn finish(&mut self) -> (ProbeResult, Option<ChildOutcome>) {
        let Some(running) = self.running.take() else { return (Err("the probe was waited for twice".into()), None) };
        let (outcome, wall) = running.wait_reporting();
        if let (Some(timeline), Some(started), Some(wall)) = (self.system.driver().timeline(), self.started, wall) {
            timeline.set_now(timeline.now().max(started + wall));
        }
        (outcome_of(&outcome), Some(outcome))
    }
}

impl PreparedProbe for RealProbe<'_> {
    fn go(&mut self) -> ProbeResult {
        if let Some(early) = self.early.take() {
            return early;
        }
        if self.channel.send(GO, &[]).is_ok()
            && let Ok(message) = self.channel.recv()
        {
            return reported(&message.bytes);
        }
        self.finish().0
    }

    fn reap(mut self: Box<Self>) -> Result<(), String> {
        if self.running.is_none() {
            return Ok(());
        }
        match self.finish() {
            (_, Some(ChildOutcome::Returned(_))) => Ok(()),
            (Err(e), _) => Err(e),
            (Ok(_), _) => Err("it ended without its report".into()),
        }
    }
}

/// The probe's result from the result line the child sent.
fn reported(bytes: &[u8]) -> ProbeResult {
    match ChildResult::find(bytes) {
        Some(report) => outcome_of(&ChildOutcome::Returned(report)),
        None => Err(format!("the probe sent {} instead of its result line", escaped(&String::from_utf8_lossy(bytes)))),
    }
}

/// The probe's result from how its child ended.
fn outcome_of(outcome: &ChildOutcome) -> ProbeResult {
    match outcome {
        ChildOutcome::Returned(ChildResult::Ok) => Ok(None),
        ChildOutcome::Returned(ChildResult::CudaError { code, sticky, .. }) => Ok(Some((code.clone(), *sticky))),
        ChildOutcome::Returned(ChildResult::Failed { message }) => Err(format!("the probe could not run: {message}")),
        ChildOutcome::TimedOut { after } => Err(format!("the probe hung for {} s and was killed", after.as_secs())),
        ChildOutcome::NoResult { status, stderr } => {
            Err(format!("the probe exited ({status}) without a result: {}", stderr.trim()))
        }
        ChildOutcome::SpawnFailed(e) => Err(format!("the probe could not start: {e}")),
    }
}

/// The [`NEGATIVE_PROBE`] child: readies the probe on the real GPUs, says so on the channel
/// its parent gave it (on its stdin; without one it reads at once), reads when told to, and
/// sends its report before exiting (and, on the
/// libcuda shim, prints its projected wall time); its result is the child's result line. `owner`
/// and `accessor` are the parent's ordinals; a child that sees only the pair finds it by UUID
/// ([`child::pair_here`]).
pub fn negative_probe(call: &Call) -> Result<(), ChildError> {
    let (owner, accessor) = (call.value("owner")?, call.value("accessor")?);
    // Run by hand, without a channel on its stdin, it reads as soon as it is ready.
    let channel = child::inherited_channel().ok();
    if let Some(channel) = &channel {
        // Its turn may come after other probes' faults: wait as long as the parent lets it live.
        channel.set_timeout(Some(PROBE_TIMEOUT))?;
    }
    let system = System::open();
    let ready = system.as_ref().map_err(Clone::clone).and_then(|s| {
        let (owner, accessor) = child::pair_here(s, (owner, accessor))?;
        ReadyProbe::prepare(s, owner, accessor)
    });
    let result: Result<(), ChildError> = match (ready, &channel) {
        (Ok(ready), None) => ready.read().map_err(Into::into),
        (Ok(ready), Some(channel)) => {
            channel.send(READY, &[])?;
            match channel.recv() {
                Ok(message) if message.bytes == GO => ready.read().map_err(Into::into),
                Ok(_) => Err("the parent sent something other than go".into()),
                Err(e) => Err(format!("the parent never said go: {e}").into()),
            }
        }
        (Err(e), _) => Err(e.into()),
    };
    // Sent before the exit, whose teardown of a faulted context the parent need not wait for.
    if let Some(channel) = &channel {
        let report = ChildResult::from_result(match &result {
            Ok(()) => Ok(()),
            Err(e) => Err(clone_error(e.as_ref())),
        });
        let _ = channel.send(report.line().as_bytes(), &[]);
    }
    if let Some(timeline) = system.as_ref().ok().and_then(|s| s.driver().timeline()) {
        println!("{}", child::wall_line(timeline.wall()));
    }
    result
}

/// A copy of `error` that keeps a driver error where [`ChildResult::from_result`] finds it.
fn clone_error(error: &(dyn std::error::Error + Send + Sync + 'static)) -> ChildError {
    match error.downcast_ref::<Error>() {
        Some(e) => Box::new(e.clone()),
        None => error.to_string().into(),
    }
}
