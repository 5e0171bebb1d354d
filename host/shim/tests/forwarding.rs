//! The shim's real backend (`PEERPOOL_SHIM_BACKEND=real`), tested with no GPU: its "real"
//! library is a second copy of the shim, which pins itself to the simulator when the first one
//! opens it. Clients that know nothing of peerpool must see through the forwarding shim exactly
//! what they see on the simulator alone; the fault rules (before and after the call, sticky) and
//! the trace must act on forwarded calls, also on calls reached through `cuGetProcAddress`; a
//! library that is missing or not a library is one line on stderr and an error from `cuInit`.

mod support;

use libtest_mimic::{Arguments, Failed, Trial};
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use support::{CUDA_INCLUDE, PYTHON, c_program, clients, run, run_within, shim_dir, stderr, stdout, trial};

/// The second copy of the shim (a file of its own, not a link), standing in for NVIDIA's.
fn real_copy() -> Result<PathBuf, Failed> {
    let dir = shim_dir()?.join("real");
    let copy = dir.join("libcuda.so.1");
    if !copy.is_file() {
        std::fs::create_dir_all(&dir)?;
        std::fs::copy(shim_dir()?.join("libcuda.so.1"), &copy)?;
    }
    Ok(copy)
}

/// Runs `program` on the simulator alone and through the forwarding shim, with `settings`.
fn both_ways(program: impl Fn() -> Result<Command, Failed>, settings: &[(&str, &str)]) -> Result<[String; 2], Failed> {
    forwarding_also(program, settings, &[])
}

/// As [`both_ways`], with `extra` settings for the forwarding run only.
fn forwarding_also(
    program: impl Fn() -> Result<Command, Failed>,
    settings: &[(&str, &str)],
    extra: &[(&str, &str)],
) -> Result<[String; 2], Failed> {
    let copy = real_copy()?.display().to_string();
    let alone = run(&mut program()?, settings)?;
    let mut forwarded: Vec<(&str, &str)> = vec![("PEERPOOL_SHIM_BACKEND", "real"), ("PEERPOOL_SHIM_LIBCUDA", &copy)];
    forwarded.extend_from_slice(settings);
    forwarded.extend_from_slice(extra);
    let through = run(&mut program()?, &forwarded)?;
    if !stderr(&through).is_empty() && stderr(&alone).is_empty() {
        return Err(format!("only the forwarding run complained: {}", stderr(&through)).into());
    }
    Ok([stdout(&alone), stdout(&through)])
}

fn same(what: &str, [alone, through]: [String; 2]) -> Result<String, Failed> {
    match alone == through {
        true => Ok(through),
        false => {
            Err(format!("{what}: the simulator alone printed\n{alone}through the forwarding shim\n{through}").into())
        }
    }
}

fn c(name: &'static str) -> impl Fn() -> Result<Command, Failed> {
    move || Ok(Command::new(c_program(name)?))
}

fn python() -> Result<Command, Failed> {
    let mut script = Command::new(std::env::var(PYTHON)?);
    script.arg(clients().join("pools.py"));
    Ok(script)
}

fn the_c_client_sees_the_same_machine(topology: &'static str) -> Result<(), Failed> {
    let text = same("pools.c", both_ways(c("pools"), &[("PEERPOOL_TOPOLOGY", topology)])?)?;
    match text.contains(&format!("done version {}", peerpool_sim::DRIVER_VERSION)) {
        true => Ok(()),
        false => Err(format!("the client did not finish: {text}").into()),
    }
}

/// Before: the driver never sees the call. After: the memory is allocated and lost to the
/// caller. Sticky: every later call fails with the code.
fn rules_act_before_after_and_sticky() -> Result<(), Failed> {
    for (rule, expect) in [
        ("cuMemAlloc@1=OUT_OF_MEMORY", "alloc CUDA_ERROR_OUT_OF_MEMORY\nnext CUDA_SUCCESS\nshrank 0\n"),
        ("cuMemAlloc@1=OUT_OF_MEMORY!after", "alloc CUDA_ERROR_OUT_OF_MEMORY\nnext CUDA_SUCCESS\nshrank 1\n"),
        ("cuMemAlloc@1=ILLEGAL_ADDRESS", "alloc CUDA_ERROR_ILLEGAL_ADDRESS\nnext CUDA_ERROR_ILLEGAL_ADDRESS\n"),
        ("", "alloc CUDA_SUCCESS\nnext CUDA_SUCCESS\nshrank 1\n"),
    ] {
        let text = same(rule, both_ways(c("rules"), &[("PEERPOOL_SIM_FAULTS", rule)])?)?;
        if text != expect {
            return Err(format!("{rule:?}: printed\n{text}expected\n{expect}").into());
        }
    }
    Ok(())
}

/// The forwarding shim's trace names the calls it forwarded, with their results; cuda.core
/// reaches every call through `cuGetProcAddress`, so its pool calls in the trace show that the
/// addresses handed out were the shim's.
fn calls_made_through_get_proc_address_are_traced() -> Result<(), Failed> {
    let trace = shim_dir()?.join("forwarded-trace.txt");
    let _ = std::fs::remove_file(&trace);
    let path = trace.display().to_string();
    let topology = [("PEERPOOL_TOPOLOGY", "four_gpu_islands")];
    same("pools.py", forwarding_also(python, &topology, &[("PEERPOOL_SIM_TRACE", &path)])?)?;
    let text = std::fs::read_to_string(&trace)?;
    let count = |prefix: &str| text.lines().filter(|l| l.starts_with(prefix)).count();
    let (lookups, grants) = (count("cuGetProcAddress symbol=cuMemPoolSetAccess"), count("cuMemPoolSetAccess "));
    match lookups >= 1 && grants >= 8 {
        true => Ok(()),
        false => Err(format!("{lookups} lookups and {grants} grants traced:\n{text}").into()),
    }
}

/// A fault rule reaches a call made through an address from `cuGetProcAddress`.
fn rules_reach_calls_through_get_proc_address() -> Result<(), Failed> {
    let settings = [("PEERPOOL_SIM_FAULTS", "cuMemPoolSetAccess@1=OUT_OF_MEMORY")];
    let text = same("pools.py", both_ways(python, &settings)?)?;
    match text.starts_with("devices 2\nfail CUDAError: CUDA_ERROR_OUT_OF_MEMORY") {
        true => Ok(()),
        false => Err(format!("the first grant should have failed:\n{text}").into()),
    }
}

fn a_bad_library_is_one_line_and_an_error_from_cu_init() -> Result<(), Failed> {
    let not_a_library = clients().join("rules.c").display().to_string();
    // The shim itself, through the link a program loads it by: it would forward to itself.
    let itself = shim_dir()?.join("libcuda.so.1").display().to_string();
    let cases = [
        ("/nonexistent/libcuda.so.1", "cannot be loaded"),
        (not_a_library.as_str(), "cannot be loaded"),
        ("libcuda.so.1", "not an absolute path"),
        (itself.as_str(), "is this shim itself"),
    ];
    for (library, says) in cases {
        let settings = [("PEERPOOL_SHIM_BACKEND", "real"), ("PEERPOOL_SHIM_LIBCUDA", library)];
        let out = run_within(&mut Command::new(c_program("pools")?), &settings, std::time::Duration::from_secs(30))?;
        let lines: Vec<String> = stderr(&out).lines().map(String::from).collect();
        let one_line = lines.len() == 1 && lines[0].starts_with("peerpool-shim: ") && lines[0].contains(says);
        if !one_line || !stdout(&out).contains("fail cuInit(0): CUDA_ERROR_INVALID_VALUE") {
            return Err(format!("{library}: stdout {:?}, stderr {lines:?}", stdout(&out)).into());
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let mut trials: Vec<Trial> = ["two_h200_nvlink", "four_gpu_islands"]
        .into_iter()
        .map(|t| {
            trial(format!("forwarded::c_client_sees_the_same_machine::{t}"), CUDA_INCLUDE, move || {
                the_c_client_sees_the_same_machine(t)
            })
        })
        .collect();
    trials.push(trial(
        "forwarded::rules_act_before_after_and_sticky".into(),
        CUDA_INCLUDE,
        rules_act_before_after_and_sticky,
    ));
    trials.push(trial(
        "forwarded::calls_made_through_get_proc_address_are_traced".into(),
        PYTHON,
        calls_made_through_get_proc_address_are_traced,
    ));
    trials.push(trial(
        "forwarded::rules_reach_calls_through_get_proc_address".into(),
        PYTHON,
        rules_reach_calls_through_get_proc_address,
    ));
    trials.push(trial(
        "forwarded::a_bad_library_is_one_line_and_an_error_from_cu_init".into(),
        CUDA_INCLUDE,
        a_bad_library_is_one_line_and_an_error_from_cu_init,
    ));
    let conclusion = libtest_mimic::run(&Arguments::from_args(), trials);
    support::clean_up();
    conclusion.exit_code()
}
