//! One topology setting, `PEERPOOL_TOPOLOGY`, for the shim and for code on peerpool that opens
//! its GPUs itself: under the shim, such code sees that its libcuda is the shim
//! (`select::Choice::Shim`) and opens it as the CUDA driver, and the shim simulates the
//! topology the same variable names. The deprecated names are read as it; two that disagree are
//! refused by both, naming the two.
//!
//! This binary runs again as its own child (role `topology-client`) with the shim first on the
//! library path: the child is the client, and prints what it found.

mod support;

use libtest_mimic::{Arguments, Failed, Trial};
use peerpool::child::{Finished, Role, Roles};
use peerpool_sim::select::{Choice, choice_from_env};
use std::process::ExitCode;
use std::time::Duration;

/// This binary as a client of the shim: prints the choice of hardware, then the driver's.
const CLIENT: Role = Role::new("topology-client", &[]);

/// What the child prints, one `key: value` line each.
fn client() -> ExitCode {
    match choice_from_env() {
        Ok(Choice::Shim { name, variable }) => println!("choice: the shim simulates {name} ({variable})"),
        Ok(Choice::Simulated { name, .. }) => println!("choice: simulated in this process: {name}"),
        Ok(Choice::Real) => println!("choice: real"),
        Err(e) => println!("choice: refused: {e}"),
    }
    match peerpool::System::open() {
        Ok(system) => println!("driver: {} with {} GPU(s)", system.driver().describe(), system.device_count()),
        Err(e) => println!("driver: {e}"),
    }
    ExitCode::SUCCESS
}

/// The client's stdout, and its stderr, with the shim as libcuda and `settings` its only ones.
fn run_client(settings: &[(&str, &str)]) -> Result<(String, String), Failed> {
    let mut command = CLIENT.command();
    command.env("LD_LIBRARY_PATH", support::shim_dir()?);
    for name in peerpool_sim::env::VARIABLES.into_iter().chain([peerpool_sim::visible::VISIBLE]) {
        command.env_remove(name);
    }
    for (name, value) in settings {
        command.env(name, value);
    }
    match peerpool::child::run(command.build()?, Duration::from_secs(60))? {
        Finished::Exited { status, stdout, stderr } if status.success() => {
            Ok((String::from_utf8_lossy(&stdout).into_owned(), String::from_utf8_lossy(&stderr).into_owned()))
        }
        Finished::Exited { status, stderr, .. } => {
            Err(format!("the client exited {status}: {}", String::from_utf8_lossy(&stderr)).into())
        }
        Finished::TimedOut { .. } => Err("the client ran past a minute".into()),
    }
}

fn ensure(ok: bool, what: &str, out: &(String, String)) -> Result<(), Failed> {
    match ok {
        true => Ok(()),
        false => Err(format!("{what}:\n{}{}", out.0, out.1).into()),
    }
}

fn the_variable_names_the_shims_machine() -> Result<(), Failed> {
    let out = run_client(&[("PEERPOOL_TOPOLOGY", "four_gpu_islands")])?;
    let choice = "choice: the shim simulates four_gpu_islands (PEERPOOL_TOPOLOGY)";
    ensure(out.0.contains(choice), "code on peerpool leaves the topology to the shim", &out)?;
    let driver = "driver: simulated by peerpool's libcuda shim: CUDA driver 13.5 with 4 GPU(s)";
    ensure(out.0.contains(driver), "the shim simulates the four GPUs", &out)?;
    let out = run_client(&[])?;
    ensure(out.0.contains("choice: real") && out.0.contains("with 2 GPU(s)"), "unset: the shim's default", &out)
}

fn deprecated_names_are_read_and_may_not_disagree() -> Result<(), Failed> {
    for name in peerpool_sim::env::TOPOLOGY_ALIASES {
        let out = run_client(&[(name, "one_gpu")])?;
        ensure(out.0.contains(&format!("one_gpu ({name})")) && out.0.contains("with 1 GPU(s)"), name, &out)?;
    }
    // The former in-process default still means the driver, which here is the shim's default.
    let out = run_client(&[("PEERPOOL_HARDWARE", "real")])?;
    ensure(out.0.contains("choice: real") && out.0.contains("with 2 GPU(s)"), "real is whatever libcuda is", &out)?;
    let out = run_client(&[("PEERPOOL_TOPOLOGY", "one_gpu"), ("PEERPOOL_SIM_TOPOLOGY", "four_gpu_islands")])?;
    let said = "PEERPOOL_TOPOLOGY=one_gpu and PEERPOOL_SIM_TOPOLOGY=four_gpu_islands disagree";
    ensure(out.0.contains(&format!("choice: refused: {said}")), "refused in process", &out)?;
    ensure(out.1.contains(said) && out.0.contains("driver: cuInit failed"), "and by the shim's cuInit", &out)
}

fn main() -> ExitCode {
    if let Some(code) = Roles::new().exiting(CLIENT, |_| client()).dispatch() {
        return code;
    }
    let args = Arguments::from_args();
    // Without the shim (an archive run with no PEERPOOL_SHIM) the trials skip with the reason.
    let missing = support::shim_dir().err().map(|e| e.message().unwrap_or("no shim").to_string());
    let trial = |name: &str, test: fn() -> Result<(), Failed>| match &missing {
        None => Trial::test(name, test),
        Some(why) => {
            eprintln!("skipped: {name}: {why}");
            Trial::test(name, test).with_ignored_flag(true)
        }
    };
    let trials = vec![
        trial("topology::the_variable_names_the_shims_machine", the_variable_names_the_shims_machine),
        trial(
            "topology::deprecated_names_are_read_and_may_not_disagree",
            deprecated_names_are_read_and_may_not_disagree,
        ),
    ];
    let code = libtest_mimic::run(&args, trials).exit_code();
    support::clean_up();
    code
}
