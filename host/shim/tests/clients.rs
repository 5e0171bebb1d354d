//! Programs that know nothing of peerpool, run against the shim as their libcuda: a C program
//! linked with `-lcuda` (`clients/pools.c`) and cuda.core scripts (`clients/pools.py`,
//! `clients/pool_ipc.py`). What they observe of every ordered pair must be the simulated
//! topology's peer matrix, and a pool shared with a `multiprocessing` child must keep cuda.core's
//! semantics there; fault rules
//! and bad settings given by environment must reach them as documented; a C program that times
//! work with events (`clients/events.c`) must meet the driver's checks and a clock that runs.
//! Graph clients have a test of their own (`graphs.rs`).
//!
//! The C program needs NVIDIA's `cuda.h` (`$PEERPOOL_CUDA_INCLUDE`) and the script a Python
//! with cuda-core (`$PEERPOOL_PYTHON`): `.ci/run` installs both from PyPI into a throwaway
//! virtual environment. Without them those trials are skipped, with the reason in their name.

mod support;

use libtest_mimic::{Arguments, Failed};
use peerpool_sim::{Topology, catalog_topology};
use std::collections::BTreeMap;
use std::process::{Command, ExitCode};
use support::{
    CUDA_INCLUDE, NVCC, PYTHON, c_program, clients, corpus_dir, images, recorded, run, same_as_on_the_h200s, shim_dir,
    stderr, stdout, trial, trial_needing,
};

const TOPOLOGIES: [&str; 3] = ["two_h200_nvlink", "four_gpu_islands", "eight_gpu_nvswitch"];

/// `pair a->b ...` lines by ordered pair (accessor, owner).
fn pairs(text: &str) -> BTreeMap<(usize, usize), String> {
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("pair ")?;
            let (pair, facts) = rest.split_once(' ')?;
            let (a, o) = pair.split_once("->")?;
            Some(((a.parse().ok()?, o.parse().ok()?), facts.to_string()))
        })
        .collect()
}

/// What the C client must print for `accessor -> owner` on `topology`.
fn expected_c(topology: &Topology, accessor: usize, owner: usize) -> String {
    match topology.link(accessor, owner).access {
        true => "can_access 1 grant ok readback rw moved 1".into(),
        false => "can_access 0 grant CUDA_ERROR_INVALID_DEVICE readback none moved 0".into(),
    }
}

fn c_sees_the_peer_matrix(stem: &str) -> Result<(), Failed> {
    c_sees_the_matrix_of(stem, None)
}

/// The same with `CUDA_VISIBLE_DEVICES` set: the client sees those GPUs, renumbered in the
/// order listed, with the links among them.
fn c_sees_the_matrix_of(stem: &str, visible: Option<&str>) -> Result<(), Failed> {
    let full = catalog_topology(stem)?;
    let topology = match visible {
        Some(list) => full.visible(list).ok_or("a GPU listed twice")?,
        None => full.clone(),
    };
    let mut settings = vec![("PEERPOOL_TOPOLOGY", stem)];
    settings.extend(visible.map(|list| (peerpool_sim::visible::VISIBLE, list)));
    let out = run(&mut Command::new(c_program("pools")?), &settings)?;
    let text = stdout(&out);
    if !out.status.success() || !text.contains(&format!("done version {}", topology.driver_version)) {
        return Err(format!("the client failed: {text}{}", String::from_utf8_lossy(&out.stderr)).into());
    }
    let n = topology.device_count();
    let seen = pairs(&text);
    if seen.len() != n * (n - 1) {
        return Err(format!("{} pairs reported, {} expected", seen.len(), n * (n - 1)).into());
    }
    for ((accessor, owner), facts) in seen {
        let want = expected_c(&topology, accessor, owner);
        if facts != want {
            return Err(format!("gpu{accessor}->gpu{owner}: saw `{facts}`, the topology says `{want}`").into());
        }
    }
    Ok(())
}

fn c_meets_a_fault_rule() -> Result<(), Failed> {
    let rule = [("PEERPOOL_SIM_FAULTS", "cuMemPoolSetAccess@1=OUT_OF_MEMORY")];
    let text = stdout(&run(&mut Command::new(c_program("pools")?), &rule)?);
    let first = pairs(&text).remove(&(1, 0)).unwrap_or_default();
    if first != "can_access 1 grant CUDA_ERROR_OUT_OF_MEMORY readback none moved 0" {
        return Err(format!("the first grant should meet the rule: {text}").into());
    }
    match pairs(&text).get(&(0, 1)).map(String::as_str) {
        Some("can_access 1 grant ok readback rw moved 1") => Ok(()),
        other => Err(format!("only the first call is failed; the second pair saw {other:?}").into()),
    }
}

fn c_meets_a_sticky_rule() -> Result<(), Failed> {
    let rule = [("PEERPOOL_SIM_FAULTS", "cuMemcpyDtoD@1=ILLEGAL_ADDRESS")];
    let out = run(&mut Command::new(c_program("pools")?), &rule)?;
    let text = stdout(&out);
    let died = text.contains("fail cuMemcpyDtoD(dst, src, sizeof out): CUDA_ERROR_ILLEGAL_ADDRESS")
        && text.contains("after CUDA_ERROR_ILLEGAL_ADDRESS");
    match (died, out.status.code()) {
        (true, Some(1)) => Ok(()),
        _ => Err(format!("expected the context dead after the sticky fault: {text}").into()),
    }
}

fn c_gets_one_line_for_bad_settings() -> Result<(), Failed> {
    for (name, value, says) in [
        ("PEERPOOL_TOPOLOGY", "no_such_machine", "no such catalog topology"),
        ("PEERPOOL_SIM_FAULTS", "cuMemAlloc=NOT_A_CODE", "not a CUresult name"),
        ("PEERPOOL_SIM_TRACE", "/nonexistent/dir/trace.txt", "cannot open"),
    ] {
        let out = run(&mut Command::new(c_program("pools")?), &[(name, value)])?;
        let (text, err) = (stdout(&out), String::from_utf8_lossy(&out.stderr).into_owned());
        let lines: Vec<&str> = err.lines().collect();
        let one_line = lines.len() == 1 && lines[0].starts_with("peerpool-shim: ") && lines[0].contains(says);
        if !one_line || !text.contains("fail cuInit(0): CUDA_ERROR_INVALID_VALUE") || out.status.code() != Some(1) {
            return Err(format!("{name}={value}: stdout {text:?}, stderr {err:?}, {}", out.status).into());
        }
    }
    Ok(())
}

/// A rule that fails `cuInit` leaves the driver unstarted: the next call is
/// `CUDA_ERROR_NOT_INITIALIZED`, as on a driver whose `cuInit` failed.
fn c_meets_a_rule_on_cu_init() -> Result<(), Failed> {
    let rule = [("PEERPOOL_SIM_FAULTS", "cuInit@1=UNKNOWN")];
    let text = stdout(&run(&mut Command::new(c_program("pools")?), &rule)?);
    match text.as_str() {
        "fail cuInit(0): CUDA_ERROR_UNKNOWN\nafter CUDA_ERROR_NOT_INITIALIZED\n" => Ok(()),
        _ => Err(format!("expected the driver unstarted after the failed cuInit: {text}").into()),
    }
}

/// A trace whose reader goes away (stderr piped to a reader that stops, as `| head` does) ends
/// with one line; the traced program goes on and exits as it would, not killed by SIGPIPE.
fn c_outlives_its_trace_reader() -> Result<(), Failed> {
    use std::io::{BufRead, BufReader};
    let dir = shim_dir()?;
    let mut program = Command::new(c_program("soak")?);
    program.args(["alloc", "20000"]).env("LD_LIBRARY_PATH", dir).env("PEERPOOL_SIM_TRACE", "-");
    program.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let mut child = program.spawn()?;
    let mut reader = BufReader::new(child.stderr.take().ok_or("no stderr")?);
    let mut first = String::new();
    reader.read_line(&mut first)?;
    drop(reader); // the reader goes away after one line
    let status = child.wait()?;
    match status.code() {
        Some(0) => Ok(()),
        _ => {
            Err(format!("the traced program ended {status} after its trace's reader left (first line {first:?})")
                .into())
        }
    }
}

fn c_leaves_a_trace() -> Result<(), Failed> {
    let trace = shim_dir()?.join("trace.txt");
    let _ = std::fs::remove_file(&trace);
    let out = run(&mut Command::new(c_program("pools")?), &[("PEERPOOL_SIM_TRACE", &trace.display().to_string())])?;
    if !out.status.success() {
        return Err(format!("the client failed: {}", stdout(&out)).into());
    }
    let text = std::fs::read_to_string(&trace)?;
    let lines: Vec<&str> = text.lines().collect();
    let named = |prefix: &str, result: &str| lines.iter().any(|l| l.starts_with(prefix) && l.ends_with(result));
    if !(lines[0] == "cuInit flags=0 => CUDA_SUCCESS"
        && named("cuMemPoolSetAccess memory_pool=", "=> CUDA_SUCCESS")
        && named("cuMemAlloc ", "=> CUDA_SUCCESS"))
    {
        return Err(format!("unexpected trace:\n{text}").into());
    }
    Ok(())
}

/// A destroyed pool's handle is an error code and one line on stderr, never a panic's text.
fn c_client_meets_a_destroyed_pool() -> Result<(), Failed> {
    let out = run(&mut Command::new(c_program("stale_pool")?), &[("RUST_BACKTRACE", "1")])?;
    let (text, err) = (stdout(&out), String::from_utf8_lossy(&out.stderr).into_owned());
    let want = "get access: CUDA_ERROR_INVALID_HANDLE\nset access: CUDA_ERROR_INVALID_HANDLE\n\
                allocate: CUDA_ERROR_INVALID_HANDLE\ndestroy again: CUDA_ERROR_INVALID_HANDLE\n\
                the process goes on: CUDA_SUCCESS\n";
    let one_line = err.lines().count() == 1 && err.contains("destroyed pool") && !err.contains("panicked");
    match (text == want, one_line) {
        (true, true) => Ok(()),
        _ => Err(format!("stdout:\n{text}stderr:\n{err}").into()),
    }
}

fn python_sees_the_peer_matrix(stem: &str) -> Result<(), Failed> {
    let python = std::env::var(PYTHON)?;
    let topology = catalog_topology(stem)?;
    let mut script = Command::new(python);
    script.arg(clients().join("pools.py"));
    let out = run(&mut script, &[("PEERPOOL_TOPOLOGY", stem)])?;
    let text = stdout(&out);
    if !out.status.success() || !text.ends_with("done\n") {
        return Err(format!("the script failed: {text}{}", String::from_utf8_lossy(&out.stderr)).into());
    }
    let n = topology.device_count();
    for owner in 0..n {
        let reach: Vec<usize> = (0..n).filter(|&a| a != owner && topology.link(a, owner).access).collect();
        let want = format!("pool {owner} reach {reach:?} peers {reach:?}");
        if !text.lines().any(|l| l == want) {
            return Err(format!("missing `{want}` in:\n{text}").into());
        }
        for peer in &reach {
            if !text.lines().any(|l| l == format!("copy {owner}->{peer} moved 1")) {
                return Err(format!("no bytes moved {owner}->{peer}:\n{text}").into());
            }
        }
        if !text.lines().any(|l| l == format!("pool {owner} after revoke []")) {
            return Err(format!("pool {owner} kept peers after the revoke:\n{text}").into());
        }
    }
    Ok(())
}

/// A pool shared with a `multiprocessing` child keeps cuda.core's semantics there, on every
/// topology: no peer on import, the child's own grant and revoke, an ungranted peer's copy
/// refused with `CUDA_ERROR_INVALID_VALUE` (what cuda.core's own memory IPC tests assert).
fn cuda_core_shares_a_pool_with_a_child(stem: &str) -> Result<(), Failed> {
    let mut script = Command::new(std::env::var(PYTHON)?);
    script.arg(clients().join("pool_ipc.py"));
    let text = stdout(&run(&mut script, &[("PEERPOOL_TOPOLOGY", stem)])?);
    let n = catalog_topology(stem)?.device_count();
    let want = format!(
        "parent: devices {n} pool ipc 1\nchild: mapped 1 peers []\nchild: bytes arrived 1\n\
         child: gpu1 copies before a grant: CUDA_ERROR_INVALID_VALUE moved 0\nchild: granted, peers [1]\n\
         child: gpu1 copies after the grant: CUDA_SUCCESS moved 1\nchild: revoked, peers []\n\
         child: gpu1 copies after the revoke: CUDA_ERROR_INVALID_VALUE moved 0\nchild exit 0\n\
         parent: peers still []\ndone\n"
    );
    match text == want {
        true => Ok(()),
        false => Err(format!("expected:\n{want}printed:\n{text}").into()),
    }
}

/// numba-cuda's kernels of `script`, compiled by NVVM and linked by the driver's JIT linker, run
/// from their PTX on every simulated GPU, each result exact: `numba_kernels.py`'s, and
/// `numba_linked.py`'s, whose PTX is linked with NVRTC's of CUDA C and with numba-cuda's float16
/// functions (their checksums are compared with the H200's by the `one_h200` test).
fn numba_run(stem: &str, script: &str, kernels: &[&str]) -> Result<(), Failed> {
    let python = std::env::var(PYTHON)?;
    let probe = Command::new(&python).args(["-c", "import numba.cuda"]).output()?;
    if !probe.status.success() {
        return Err(format!("numba-cuda does not import in {python}").into());
    }
    let mut command = Command::new(python);
    let out = run(command.arg(clients().join(script)), &[("PEERPOOL_TOPOLOGY", stem)])?;
    let n = catalog_topology(stem)?.device_count();
    let mut want = format!("devices: {n}\n");
    for gpu in 0..n {
        for kernel in kernels {
            want.push_str(&format!("gpu {gpu} {kernel}: ok\n"));
        }
    }
    let text: String = stdout(&out).lines().map(|l| format!("{}\n", l.split(" crc32 ").next().unwrap_or(l))).collect();
    match (out.status.success(), text) {
        (true, text) if text == want => Ok(()),
        (_, text) => Err(format!("{}\nexpected:\n{want}printed:\n{text}stderr: {}", out.status, stderr(&out)).into()),
    }
}

/// cuda.core's cooperative launch of the corpus's `grid_sync`, sized by the occupancy the
/// simulator reports, on every simulated GPU: each output word as numpy computes it.
fn cuda_core_launches_cooperatively(stem: &str) -> Result<(), Failed> {
    let mut command = Command::new(std::env::var(PYTHON)?);
    let ptx = corpus_dir().join("corpus.ptx");
    let out = run(command.arg(clients().join("cooperative.py")).arg(ptx), &[("PEERPOOL_TOPOLOGY", stem)])?;
    let n = catalog_topology(stem)?.device_count();
    let mut want = format!("devices: {n}\n");
    for gpu in 0..n {
        want.push_str(&format!("gpu {gpu} grid_sync: 32 blocks a multiprocessor, 64 launched, ok\n"));
    }
    match (out.status.success(), stdout(&out)) {
        (true, text) if text == want => Ok(()),
        (_, text) => Err(format!("{}\nexpected:\n{want}printed:\n{text}stderr: {}", out.status, stderr(&out)).into()),
    }
}

/// Events through the shim: flags checked as NVIDIA's driver checks them, and time kept on the
/// simulator's virtual clock (`clients/events.c` prints no absolute time).
fn c_client_times_with_events() -> Result<(), Failed> {
    same_as_on_the_h200s(&mut Command::new(c_program("events")?), "clients-events.txt")
}

/// A kernel that is not peerpool's, run from its PTX on GPU 0 over GPU 1's pool: it adds while
/// the pool is granted, and faults once it is not, naming kernel, thread, address and pool.
fn c_kernel_touches_a_peer_pool(stem: &str) -> Result<(), Failed> {
    let mut program = Command::new(c_program("kernels")?);
    let out = run(program.arg(images()?).arg("peer"), &[("PEERPOOL_TOPOLOGY", stem)])?;
    let text = stdout(&out);
    let want = [
        "peer granted: 1",
        "peer ungranted launch: CUDA_SUCCESS",
        "peer ungranted synchronize: CUDA_ERROR_ILLEGAL_ADDRESS",
    ];
    let line = stderr(&out).lines().find(|l| l.starts_with("peerpool-sim: kernel pp_test_add")).map(str::to_owned);
    let named = line.as_deref().is_some_and(|l| {
        l.contains("GPU 0: block (0,0,0) thread (0,0,0)") && l.contains("of GPU 1, to which GPU 0 has no access")
    });
    match want.iter().all(|w| text.lines().any(|l| l == *w)) && named && out.status.success() {
        true => Ok(()),
        false => Err(format!("{}\nstdout:\n{text}stderr: {}", out.status, stderr(&out)).into()),
    }
}

/// PTX through the JIT linker: the image it gives loads and its kernels run as on one H200
/// (`kernels_link.txt`), here on two GPUs.
fn c_links_ptx_and_runs_it() -> Result<(), Failed> {
    let mut program = Command::new(c_program("kernels")?);
    let out = run(program.arg(images()?).arg("link"), &[("PEERPOOL_TOPOLOGY", "two_h200_nvlink")])?;
    let text = stdout(&out);
    let want = recorded("one-h200/kernels_link.txt")?;
    match out.status.success() && text == want {
        true => Ok(()),
        false => Err(format!("{}\nwant:\n{want}printed:\n{text}stderr: {}", out.status, stderr(&out)).into()),
    }
}

/// A kernel waiting for a flag nobody sets meets the simulated driver's watchdog by time
/// (`--kernel-timeout`, here 2 s): a line while it still runs, then `CUDA_ERROR_LAUNCH_TIMEOUT`
/// and the line naming the watchdog.
fn a_spinning_kernel_meets_the_watchdog() -> Result<(), Failed> {
    let started = std::time::Instant::now();
    let out = run(Command::new(c_program("hardening")?).arg("spin"), &[("PEERPOOL_SIM_KERNEL_TIMEOUT", "2")])?;
    let (text, said, took) = (stdout(&out), stderr(&out), started.elapsed());
    let progress = said.lines().any(|l| l.starts_with("peerpool-sim: kernel spin on GPU 0 still running after 1 s"));
    let fired =
        said.lines().any(|l| l.contains("the simulated driver's watchdog") && l.ends_with("CUDA_ERROR_LAUNCH_TIMEOUT"));
    let code = text.contains("spin synchronize: CUDA_ERROR_LAUNCH_TIMEOUT");
    match (progress, fired, code, took < std::time::Duration::from_secs(30)) {
        (true, true, true, true) => Ok(()),
        _ => Err(format!("after {took:?}: stdout {text:?}, stderr {said:?}").into()),
    }
}

/// An access past a block's shared memory is named for what it is: shared memory, its offset,
/// the block's size and the window (it read "in no allocation").
fn a_shared_fault_names_shared_memory() -> Result<(), Failed> {
    let out = run(Command::new(c_program("hardening")?).arg("shared"), &[])?;
    let (text, said) = (stdout(&out), stderr(&out));
    let line = "block (0,0,0) thread (0,0,0) PTX line 9: illegal address 0xfe00000000000140: shared memory, offset \
                0x140, outside the block's 256 bytes (window 0xfe00000000000000 to 0xfe00000000000100): \
                CUDA_ERROR_ILLEGAL_ADDRESS";
    match said.contains(line) && text.contains("past synchronize: CUDA_ERROR_ILLEGAL_ADDRESS") {
        true => Ok(()),
        false => Err(format!("stdout {text:?}, stderr {said:?}").into()),
    }
}

fn main() -> ExitCode {
    let mut trials = Vec::new();
    for stem in TOPOLOGIES {
        trials.push(trial(format!("c_client_sees_the_peer_matrix::{stem}"), CUDA_INCLUDE, move || {
            c_sees_the_peer_matrix(stem)
        }));
        trials.push(trial(format!("cuda_core_sees_the_peer_matrix::{stem}"), PYTHON, move || {
            python_sees_the_peer_matrix(stem)
        }));
        trials.push(trial(format!("cuda_core_shares_a_pool_with_a_child::{stem}"), PYTHON, move || {
            cuda_core_shares_a_pool_with_a_child(stem)
        }));
        trials.push(trial(format!("numba_kernels_run::{stem}"), PYTHON, move || {
            numba_run(stem, "numba_kernels.py", &["axpy", "block_sum", "warp_sums", "collatz", "grid_sum"])
        }));
        trials.push(trial(format!("numba_linked_kernels_run::{stem}"), PYTHON, move || {
            numba_run(stem, "numba_linked.py", &["half_add", "half_mul", "mix", "scaled", "trig"])
        }));
    }
    // The kernels are PTX for sm_90: four_gpu_islands' GPUs (sm_80) refuse it, as the driver would.
    for stem in ["two_h200_nvlink", "eight_gpu_nvswitch"] {
        trials.push(trial(format!("cuda_core_launches_cooperatively::{stem}"), PYTHON, move || {
            cuda_core_launches_cooperatively(stem)
        }));
        let needs = [CUDA_INCLUDE, NVCC];
        trials.push(trial_needing(format!("c_kernel_touches_a_peer_pool::{stem}"), &needs, move || {
            c_kernel_touches_a_peer_pool(stem)
        }));
    }
    trials.push(trial_needing("c_links_ptx_and_runs_it".into(), &[CUDA_INCLUDE, NVCC], c_links_ptx_and_runs_it));
    // Islands {0, 1} and {2, 3}: listed as 3,0,2 the client's gpu0 and gpu2 are one island.
    trials.push(trial("c_client_sees_only_the_visible_devices".into(), CUDA_INCLUDE, || {
        c_sees_the_matrix_of("four_gpu_islands", Some("3,0,2"))
    }));
    trials.push(trial("c_client_prints_what_it_printed_on_the_h200s".into(), CUDA_INCLUDE, || {
        same_as_on_the_h200s(&mut Command::new(c_program("pools")?), "clients-c.txt")
    }));
    trials.push(trial("cuda_core_prints_what_it_printed_on_the_h200s".into(), PYTHON, || {
        let mut script = Command::new(std::env::var(PYTHON)?);
        same_as_on_the_h200s(script.arg(clients().join("pools.py")), "clients-cuda-core.txt")
    }));
    trials.push(trial("c_client_meets_a_fault_rule".into(), CUDA_INCLUDE, c_meets_a_fault_rule));
    trials.push(trial(
        "a_spinning_kernel_meets_the_watchdog".into(),
        CUDA_INCLUDE,
        a_spinning_kernel_meets_the_watchdog,
    ));
    trials.push(trial("a_shared_fault_names_shared_memory".into(), CUDA_INCLUDE, a_shared_fault_names_shared_memory));
    trials.push(trial("c_client_meets_a_sticky_rule".into(), CUDA_INCLUDE, c_meets_a_sticky_rule));
    trials.push(trial(
        "c_client_gets_one_line_for_bad_settings".into(),
        CUDA_INCLUDE,
        c_gets_one_line_for_bad_settings,
    ));
    trials.push(trial("c_client_leaves_a_trace".into(), CUDA_INCLUDE, c_leaves_a_trace));
    trials.push(trial("c_client_meets_a_rule_on_cu_init".into(), CUDA_INCLUDE, c_meets_a_rule_on_cu_init));
    trials.push(trial("c_client_outlives_its_trace_reader".into(), CUDA_INCLUDE, c_outlives_its_trace_reader));
    trials.push(trial("c_client_times_with_events".into(), CUDA_INCLUDE, c_client_times_with_events));
    trials.push(trial("c_client_meets_a_destroyed_pool".into(), CUDA_INCLUDE, c_client_meets_a_destroyed_pool));
    let conclusion = libtest_mimic::run(&Arguments::from_args(), trials);
    support::clean_up();
    conclusion.exit_code()
}
