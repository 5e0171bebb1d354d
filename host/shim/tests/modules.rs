//! Modules loaded as NVIDIA's driver loads them: the `-gencode` table (`clients/gencode.c` over
//! `clients/images/globals.cu` built by nvcc in each form, by CUDA 13.0's nvcc and a newer
//! one's) on every catalog topology, each device running the code its compute capability
//! allows and the module's globals, function-pointer tables and virtual calls right; the
//! table's compute 9.0 column and the JIT's answers to PTX it refuses as NVIDIA's driver gave
//! them; and the driver's version deciding which PTX loads.
//!
//! Needs `$PEERPOOL_CUDA_INCLUDE` and `$PEERPOOL_NVCC` (and `$PEERPOOL_NVCC_NEWEST` for the
//! newer nvcc's images): `.ci/run` installs them from PyPI. Without them the trials are skipped,
//! with the reason.

mod support;

use libtest_mimic::{Arguments, Failed};
use peerpool_sim::{catalog, catalog_topology};
use std::path::Path;
use std::process::{Command, ExitCode};
use support::{
    CUDA_INCLUDE, NVCC, NVCC_NEWEST, c_program, gencode_images, recorded, run, stderr, stdout, trial_needing,
};

/// What the driver does with an image on a device of one compute capability.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    /// It runs the image's machine code (the simulator the PTX beside it).
    Machine,
    /// It compiles the image's PTX: refused where the PTX's ISA is newer than the driver's.
    Jit,
    /// It runs the image's machine code, and the image has no PTX the simulator could run.
    MachineOnly,
    /// No code for the device: `CUDA_ERROR_NO_BINARY_FOR_GPU`.
    NoBinary,
    /// PTX text for a newer target than the device: the JIT refuses it, `CUDA_ERROR_INVALID_PTX`.
    NewerTarget,
}

use Fate::{Jit, Machine, MachineOnly, NewerTarget, NoBinary};

/// The compute capabilities of the table's columns.
const COLUMNS: [(i32, i32); 4] = [(7, 0), (8, 0), (9, 0), (10, 0)];

/// The `-gencode` table (`clients/images/gencode.sh`'s forms): each image's fate on each column,
/// by the rules NVIDIA documents for its driver (machine code runs within its major version,
/// `sm_90a` on 9.0 only; else the newest PTX at most the device's compute capability).
const TABLE: [(&str, [Fate; 4]); 9] = [
    ("sm80_compute80.fatbin", [NoBinary, Machine, Jit, Jit]),
    ("sm90_compute90.fatbin", [NoBinary, NoBinary, Machine, Jit]),
    ("sm80_compute80_sm90_compute90.fatbin", [NoBinary, Machine, Machine, Jit]),
    ("compute80.fatbin", [NoBinary, Jit, Jit, Jit]),
    ("sm80.fatbin", [NoBinary, MachineOnly, NoBinary, NoBinary]),
    ("sm90.fatbin", [NoBinary, NoBinary, MachineOnly, NoBinary]),
    ("sm90a_compute90a.fatbin", [NoBinary, NoBinary, Machine, NoBinary]),
    ("compute100.fatbin", [NoBinary, NoBinary, NoBinary, Jit]),
    ("ptx80.ptx", [NewerTarget, Jit, Jit, Jit]),
];

/// What the kernel writes for `sel` 0 and 1: the pointer global's target, its index, a call
/// through the table of function pointers, a virtual call.
const RIGHT: [&str; 2] = ["30 2 6 101", "30 2 10 201"];

/// How a load goes where the driver decides `fate`, the image's PTX `too_new` for the driver:
/// the code it answers, and whether the kernel runs (`None`: it loads and cannot launch).
fn outcome(fate: Fate, too_new: bool, simulated: bool) -> (&'static str, Option<bool>) {
    match fate {
        NoBinary => ("CUDA_ERROR_NO_BINARY_FOR_GPU", Some(false)),
        NewerTarget => ("CUDA_ERROR_INVALID_PTX", Some(false)),
        Jit if too_new => ("CUDA_ERROR_UNSUPPORTED_PTX_VERSION", Some(false)),
        MachineOnly if simulated => ("CUDA_SUCCESS", None),
        Machine | Jit | MachineOnly => ("CUDA_SUCCESS", Some(true)),
    }
}

/// What `gencode` prints on devices of compute capabilities `devices` for `form`: as the
/// simulator answers it (`simulated`), or as NVIDIA's driver does, which runs machine code.
fn expected(form: &str, devices: &[(i32, i32)], too_new: bool, simulated: bool) -> Result<String, Failed> {
    let (_, fates) = TABLE.iter().find(|(f, _)| *f == form).ok_or(format!("{form} is not in the table"))?;
    let mut out = String::new();
    for (d, cc) in devices.iter().enumerate() {
        let column = COLUMNS.iter().position(|c| c == cc).ok_or(format!("no column for compute {cc:?}"))?;
        let (code, runs) = outcome(fates[column], too_new, simulated);
        out += &format!("gpu{d} compute {}.{}\ngpu{d} module load {code}\n", cc.0, cc.1);
        let launches = |how: &str, out: &mut String| match runs {
            Some(true) => (0..2).for_each(|sel| *out += &format!("gpu{d} {how} sel {sel}: {}\n", RIGHT[sel])),
            None => *out += &format!("gpu{d} {how} sel 0 launch CUDA_ERROR_NOT_SUPPORTED\n"),
            Some(false) => {}
        };
        if code == "CUDA_SUCCESS" {
            out += &format!("gpu{d} module function CUDA_SUCCESS\n");
            launches("module", &mut out);
        }
        out += &format!("gpu{d} library load CUDA_SUCCESS\ngpu{d} library kernel {code}\n");
        if code == "CUDA_SUCCESS" {
            launches("library", &mut out);
        }
    }
    Ok(out + "done\n")
}

/// Runs `gencode` on `image` with `settings`: what it printed, or why it failed.
fn gencode(image: &Path, settings: &[(&str, &str)]) -> Result<(String, String), Failed> {
    let out = run(Command::new(c_program("gencode")?).arg(image), settings)?;
    match out.status.success() {
        true => Ok((stdout(&out), stderr(&out))),
        false => Err(format!("gencode {}: {}\n{}{}", image.display(), out.status, stdout(&out), stderr(&out)).into()),
    }
}

/// Every image of the table built by `nvcc` (`label`) on topology `stem`, each device as the
/// table says; `driver` the simulated driver's version, if not the default.
fn table_on(nvcc: &'static str, label: &'static str, stem: &str, driver: Option<&str>) -> Result<(), Failed> {
    let dir = gencode_images(nvcc, label)?;
    let topology = catalog_topology(stem)?;
    let devices: Vec<(i32, i32)> = topology.devices.iter().map(|d| d.compute_capability).collect();
    // The newer nvcc's PTX is too new for a 13.0 driver; the default driver reads it.
    let too_new = label != "13.0" && driver.is_some();
    let mut settings = vec![("PEERPOOL_TOPOLOGY", stem)];
    settings.extend(driver.map(|d| ("PEERPOOL_SIM_DRIVER_VERSION", d)));
    let mut wrong = Vec::new();
    for (form, _) in TABLE {
        let (printed, said) = gencode(&dir.join(format!("{label}-{form}")), &settings)?;
        let want = expected(form, &devices, too_new, true)?;
        if printed != want {
            wrong.push(format!("{label}-{form}:\nwant:\n{want}printed:\n{printed}stderr:\n{said}"));
        }
    }
    match wrong.is_empty() {
        true => Ok(()),
        false => Err(wrong.join("\n").into()),
    }
}

/// The table's compute 9.0 column as NVIDIA's driver answered it on one H100
/// (`docs/hardware/recorded/one-h100/gencode_*.txt`, CUDA 13.0): it runs machine code alone,
/// which the simulator cannot. The same images then give the same lines on the simulated
/// one-GPU machine with a 13.0 driver, but for that.
fn the_gpus_column() -> Result<(), Failed> {
    let mut wrong = Vec::new();
    for (label, nvcc) in [("13.0", NVCC), ("13.5", NVCC_NEWEST)] {
        let dir = gencode_images(nvcc, label)?;
        for (form, _) in TABLE {
            let name = format!("{label}-{form}");
            let stem = name.rsplit_once('.').map_or(name.as_str(), |(s, _)| s);
            let record = recorded(&format!("one-h100/gencode_{stem}.txt"))?;
            let driver = expected(form, &[(9, 0)], label != "13.0", false)?;
            if record != driver {
                wrong.push(format!("{name}: the table says\n{driver}the H100 printed\n{record}"));
            }
            let settings = [("PEERPOOL_TOPOLOGY", "one_gpu"), ("PEERPOOL_SIM_DRIVER_VERSION", "13.0")];
            let (printed, _) = gencode(&dir.join(&name), &settings)?;
            let simulated = expected(form, &[(9, 0)], label != "13.0", true)?;
            if printed != simulated {
                wrong.push(format!("{name} on a simulated 13.0 driver: want\n{simulated}printed\n{printed}"));
            }
        }
    }
    match wrong.is_empty() {
        true => Ok(()),
        false => Err(wrong.join("\n").into()),
    }
}

/// `--trace` names, for each load, the code the driver takes and the PTX that runs.
fn the_trace_names_what_ran() -> Result<(), Failed> {
    let dir = gencode_images(NVCC, "13.0")?;
    let trace = support::shim_dir()?.join("modules-trace.txt");
    let _ = std::fs::remove_file(&trace);
    let settings =
        [("PEERPOOL_TOPOLOGY", "two_h200_nvlink"), ("PEERPOOL_SIM_TRACE", trace.to_str().unwrap_or_default())];
    gencode(&dir.join("13.0-sm80_compute80_sm90_compute90.fatbin"), &settings)?;
    let text = std::fs::read_to_string(&trace)?;
    let loads: Vec<&str> = text.lines().filter(|l| l.starts_with("cuModuleLoadData ")).collect();
    let named = |l: &&str| {
        l.ends_with("=> CUDA_SUCCESS") && l.contains("(the driver takes sm_90 machine code; runs compute_90 PTX)")
    };
    match loads.len() == 2 && loads.iter().all(named) {
        true => Ok(()),
        false => Err(format!("the loads traced: {loads:#?}").into()),
    }
}

/// The simulated driver's version: 13.5 by default, else as asked; `cuDriverGetVersion`
/// answers it (the `pools` client prints it last).
fn the_driver_is_the_version_asked() -> Result<(), Failed> {
    for (asked, answered) in [(None, "13050"), (Some("13.0"), "13000"), (Some("12040"), "12040")] {
        let mut settings = vec![("PEERPOOL_TOPOLOGY", "two_h200_nvlink")];
        settings.extend(asked.map(|a| ("PEERPOOL_SIM_DRIVER_VERSION", a)));
        let out = run(&mut Command::new(c_program("pools")?), &settings)?;
        if !stdout(&out).contains(&format!("done version {answered}\n")) {
            return Err(format!("asked {asked:?}: {}{}", stdout(&out), stderr(&out)).into());
        }
    }
    let out = run(&mut Command::new(c_program("pools")?), &[("PEERPOOL_SIM_DRIVER_VERSION", "thirteen")])?;
    let said = stderr(&out);
    match said.contains("PEERPOOL_SIM_DRIVER_VERSION: \"thirteen\" is not a CUDA version") && !out.status.success() {
        true => Ok(()),
        false => Err(format!("a bad version: {}, {said}", out.status).into()),
    }
}

/// The JIT's answers as NVIDIA's driver gave them on one H100 (`one-h100/jit_logs.txt`):
/// codes at each call, logs, and the log sizes written back, line for line; but ptxas adds a
/// second error to two of them (a state space's mismatch after an unknown modifier, the
/// arguments' after an unknown symbol), which the simulator does not, so those logs are
/// shorter.
fn the_jit_answers_as_the_gpu_did() -> Result<(), Failed> {
    let record = recorded("one-h100/jit_logs.txt")?;
    let settings = [("PEERPOOL_TOPOLOGY", "one_gpu"), ("PEERPOOL_SIM_DRIVER_VERSION", "13.0")];
    let out = run(&mut Command::new(c_program("jit_logs")?), &settings)?;
    let second = ["State space mismatch between instruction", "Arguments mismatch for instruction"];
    let shorter = ["unknown_state_space ", "undeclared_register "];
    let sizes = |l: &str| match shorter.iter().any(|c| l.starts_with(c)) {
        true => l.split(" error_size ").next().unwrap_or(l).to_owned(),
        false => l.to_owned(),
    };
    let want: Vec<String> = record.lines().filter(|l| !second.iter().any(|s| l.contains(s))).map(sizes).collect();
    let got: Vec<String> = stdout(&out).lines().map(sizes).collect();
    match want == got {
        true => Ok(()),
        false => Err(format!("the H100 printed\n{}\nthe simulator\n{}", want.join("\n"), got.join("\n")).into()),
    }
}

fn main() -> ExitCode {
    let mut trials = Vec::new();
    for entry in catalog() {
        let stem = entry.stem();
        trials.push(trial_needing(format!("gencode_table::13.0::{stem}"), &[CUDA_INCLUDE, NVCC], move || {
            table_on(NVCC, "13.0", stem, None)
        }));
    }
    for stem in ["two_h200_nvlink", "four_gpu_islands", "eight_gpu_nvswitch"] {
        trials.push(trial_needing(format!("gencode_table::13.5::{stem}"), &[CUDA_INCLUDE, NVCC_NEWEST], move || {
            table_on(NVCC_NEWEST, "13.5", stem, None)
        }));
        let name = format!("gencode_table::13.5_on_a_13.0_driver::{stem}");
        trials.push(trial_needing(name, &[CUDA_INCLUDE, NVCC_NEWEST], move || {
            table_on(NVCC_NEWEST, "13.5", stem, Some("13.0"))
        }));
    }
    trials.push(trial_needing("the_trace_names_what_ran".into(), &[CUDA_INCLUDE, NVCC], the_trace_names_what_ran));
    let needs = [CUDA_INCLUDE, NVCC, NVCC_NEWEST];
    trials.push(trial_needing("gencode_table::the_gpus_column".into(), &needs, the_gpus_column));
    let name = "the_jit_answers_as_the_gpu_did".into();
    trials.push(trial_needing(name, &[CUDA_INCLUDE], the_jit_answers_as_the_gpu_did));
    let name = "the_driver_is_the_version_asked".into();
    trials.push(trial_needing(name, &[CUDA_INCLUDE], the_driver_is_the_version_asked));
    let conclusion = libtest_mimic::run(&Arguments::from_args(), trials);
    support::clean_up();
    conclusion.exit_code()
}
