//! The clients recorded against NVIDIA's libcuda on one H200 (`docs/hardware/recorded/one-h200/`,
//! run `2026-12-01-clients`) print the same through the shim on `one_gpu`, line for line, less
//! the lines where the simulator answers otherwise on purpose ([`DIFFERENCES`]): page-locked,
//! managed and host-pool memory, every device attribute, the calls around kernels (stream and
//! context settings, host functions, 16-bit and 2D memsets, 2D copies), foreign images (PTX, a
//! cubin and fatbins as modules and libraries, and bad images), foreign kernels run from their PTX
//! (and what answers after one faults, fails a device assert or traps) or linked by the JIT
//! linker, numba-cuda's kernels (their PTX alone, and linked with other PTX, and a probe of
//! votes, matches, atomics, random numbers, libdevice math and float16), clusters' occupancy,
//! the PTX executor's corpus as nvcc, NVRTC and rustc compiled it and as a fast-math program
//! runs it (every word and line of device printf the same, but the approximate instructions'
//! words within the GPU's error bounds), and cuda.core's staging and pool sharing between
//! processes.
//!
//! The C clients need NVIDIA's `cuda.h` (`$PEERPOOL_CUDA_INCLUDE`), the scripts a Python with
//! cuda-core (`$PEERPOOL_PYTHON`), as the `clients` test, and the foreign-image client its images
//! built by NVIDIA's `nvcc` (`$PEERPOOL_NVCC`); without them the trials are skipped.

mod support;

use libtest_mimic::{Arguments, Failed};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use support::{
    CUDA_INCLUDE, NVCC, PYTHON, c_program, c_program_with, clients, corpus_dir, images, recorded, recorded_dir, run,
    shim_dir, stderr, stdout, trial, trial_needing,
};

/// Where the simulator answers otherwise than the H200 did, on purpose: the record, the line
/// the H200 printed, the line the simulator prints instead, and why.
/// Why an attribute the H200 answered 1 is 0 through the shim: it promises calls the simulator
/// does not serve (`peerpool_sim::attributes::PROMISES`).
const PROMISED: &str = "it promises calls the simulator does not serve";

const DIFFERENCES: &[(&str, &str, &str, &str)] = &[
    ("attributes.txt", "device 0 attribute 33 value 0", "device 0 attribute 33 value 24", "PCI bus ids are synthetic"),
    ("hardening.txt", "can use stream wait value nor 1", "can use stream wait value nor 0", PROMISED),
    ("hardening.txt", "can use 64-bit stream mem ops 1", "can use 64-bit stream mem ops 0", PROMISED),
    ("attributes.txt", "device 0 attribute 112 value 1", "device 0 attribute 112 value 0", PROMISED),
    ("attributes.txt", "device 0 attribute 114 value 1", "device 0 attribute 114 value 0", PROMISED),
    ("attributes.txt", "device 0 attribute 121 value 1", "device 0 attribute 121 value 0", PROMISED),
    ("attributes.txt", "device 0 attribute 122 value 1", "device 0 attribute 122 value 0", PROMISED),
    ("attributes.txt", "device 0 attribute 123 value 1", "device 0 attribute 123 value 0", PROMISED),
    ("attributes.txt", "device 0 attribute 124 value 1", "device 0 attribute 124 value 0", PROMISED),
    ("attributes.txt", "device 0 attribute 125 value 1", "device 0 attribute 125 value 0", PROMISED),
    ("attributes.txt", "device 0 attribute 127 value 1", "device 0 attribute 127 value 0", PROMISED),
    (
        "host_memory.txt",
        "cuMemcpy to a freed device pointer: CUDA_SUCCESS",
        "cuMemcpy to a freed device pointer: CUDA_ERROR_INVALID_VALUE",
        FREED,
    ),
    (
        "host_memory.txt",
        "cuMemcpy from a freed device pointer: CUDA_SUCCESS",
        "cuMemcpy from a freed device pointer: CUDA_ERROR_INVALID_VALUE",
        FREED,
    ),
    (
        "host_memory.txt",
        "cuMemcpyHtoD to a freed device pointer: CUDA_SUCCESS",
        "cuMemcpyHtoD to a freed device pointer: CUDA_ERROR_INVALID_VALUE",
        FREED,
    ),
    (
        "host_memory.txt",
        "case 3: the process died of signal 11",
        "cuMemcpy past the end of an allocation: CUDA_ERROR_INVALID_VALUE",
        FREED,
    ),
    (
        "images_launch.txt",
        "launch pp_test_add: CUDA_SUCCESS",
        "launch pp_test_add: CUDA_ERROR_NOT_SUPPORTED",
        MACHINE_CODE,
    ),
    ("images_launch.txt", "launched bytes: 1 1", "(nothing)", MACHINE_CODE),
];

const MACHINE_CODE: &str = "a cubin holds machine code only, and the simulator runs kernels from their PTX: \
                            launching one is refused with one line naming it (fatbins with PTX run: `kernels.txt`)";

const FREED: &str = "an address in no allocation is refused, never dereferenced: the driver's answer depends on \
                     what its allocator still maps (success, or a crash: both seen on the H200)";

/// Programs of `ptx_random.py` (seed 1, 3,000 programs) whose results on the H200 depend on how
/// ptxas compiled them, by reason; the simulator gives the result the PTX ISA describes.
const RANDOM_DIFFERENCES: [(&str, &[u32]); 3] = [
    (
        "two operands of an f64 operation are NaN: which one's payload the result carries depends on how \
         ptxas ordered them (the simulator takes the first)",
        &[
            27, 50, 330, 581, 713, 715, 719, 965, 1110, 1216, 1249, 1455, 1511, 1548, 1669, 2121, 2397, 2438, 2441,
            2503, 2893, 2942, 2951,
        ],
    ),
    (
        "an operand of 0x80000000 (slct's selector, cvt.rz/rm/rp.f32.u32, cvt.sat.u64.s32, sub.sat.s32): the \
         H200 gave the ISA's result in most programs and another in these",
        &[322, 850, 926, 1161, 1196, 1264, 1492, 1618, 1647, 1735, 1801, 2085, 2385, 2861, 2934],
    ),
    (
        "neg.f32 of a NaN feeding slct: ptxas flips the sign bit there, while neg.f32's own result is the canonical NaN",
        &[600],
    ),
];

/// Programs of `ptx_random.py --halves` (seed 2, 3,000 programs) whose results on the H200
/// depend on how ptxas compiled them, by reason.
const HALVES_DIFFERENCES: [(&str, &[u32]); 2] = [
    (
        "a 16-bit NaN that one instruction makes and the next takes: ptxas may fuse the two, and the second \
         sees the NaN before it was made canonical (its payload, its sign, or a number's conversion)",
        &[
            5, 91, 127, 189, 213, 279, 309, 508, 564, 583, 598, 599, 606, 637, 643, 652, 690, 727, 768, 841, 905, 934,
            1014, 1060, 1068, 1426, 1427, 1436, 1547, 1575, 1591, 1728, 1785, 1810, 1811, 1836, 1881, 1932, 2129, 2273,
            2299, 2302, 2409, 2410, 2543, 2676, 2736, 2738, 2765, 2820, 2999,
        ],
    ),
    (
        "cvt.rzi.s16.f16 of 1.5, -1.5 and 1.75 rounded away from zero in these programs, toward it in others",
        &[482, 1141, 1398],
    ),
];

/// The random programs of `ptx_random.py SEED 3000 [--halves]` run through the shim on
/// `one_gpu` as on the H200 (`record`): each refused or run alike, and the same results but for
/// the programs of `known`.
fn random_programs_as_on_one_h200(
    seed: &str,
    halves: bool,
    record: &str,
    known: &[(&str, &[u32])],
) -> Result<(), Failed> {
    let dir = shim_dir()?.join(format!("ptx_random-programs-{seed}"));
    std::fs::create_dir_all(&dir)?;
    let mut generate = python("ptx_random.py")?;
    generate.args([seed, "3000"]).arg(&dir).args(halves.then_some("--halves"));
    let made = generate.output()?;
    if !made.status.success() {
        return Err(format!("ptx_random.py: {}", String::from_utf8_lossy(&made.stderr)).into());
    }
    let want = recorded(&format!("one-h200/{record}"))?;
    let out = run(Command::new(c_program("ptx_random")?).arg(&dir), ONE_H200)?;
    let text = stdout(&out);
    let (want_lines, got_lines): (Vec<&str>, Vec<&str>) = (want.lines().collect(), text.lines().collect());
    if want_lines.len() != got_lines.len() {
        return Err(
            format!("{} lines, the H200's {}\nstderr: {}", got_lines.len(), want_lines.len(), stderr(&out)).into()
        );
    }
    let known = |i: usize| known.iter().any(|(_, programs)| programs.contains(&(i as u32)));
    let wrong: Vec<String> = (0..want_lines.len())
        .filter(|&i| want_lines[i] != got_lines[i] && !known(i))
        .map(|i| format!("the H200 printed `{}`, the shim `{}`", want_lines[i], got_lines[i]))
        .collect();
    match wrong.is_empty() {
        true => Ok(()),
        false => {
            Err(format!("{} programs differ (ptx_random_compare.py shows where):\n{}", wrong.len(), wrong.join("\n"))
                .into())
        }
    }
}

/// The simulated machine the records are compared on: one H200, its driver CUDA 13.0's.
const ONE_H200: &[(&str, &str)] = &[("PEERPOOL_TOPOLOGY", "one_gpu"), ("PEERPOOL_SIM_DRIVER_VERSION", "13.0")];

/// `program` through the shim on `one_gpu` prints `name`'s record, but for [`DIFFERENCES`].
fn same_as_on_one_h200(program: &mut Command, name: &str) -> Result<(), Failed> {
    same_as_recorded(program, "one-h200", name)
}

/// [`same_as_on_one_h200`] for a record in `dir` (`one-h100`: made on an H100, compute 9.0 with
/// the H200s' driver).
fn same_as_recorded(program: &mut Command, dir: &str, name: &str) -> Result<(), Failed> {
    let want = recorded(&format!("{dir}/{name}"))?;
    let out = run(program, ONE_H200)?;
    let text = stdout(&out);
    let (want_lines, got_lines): (Vec<&str>, Vec<&str>) = (want.lines().collect(), text.lines().collect());
    let mut wrong = Vec::new();
    for i in 0..want_lines.len().max(got_lines.len()) {
        let (w, g) =
            (want_lines.get(i).copied().unwrap_or("(nothing)"), got_lines.get(i).copied().unwrap_or("(nothing)"));
        let known = DIFFERENCES.iter().any(|&(file, h200, sim, _)| file == name && h200 == w && sim == g);
        if w != g && !known {
            wrong.push(format!("line {}: the H200 printed `{w}`, the shim `{g}`", i + 1));
        }
    }
    match wrong.is_empty() {
        true => Ok(()),
        false => Err(format!("{}\nstderr: {}", wrong.join("\n"), String::from_utf8_lossy(&out.stderr)).into()),
    }
}

/// Whether two words of `approx_math` agree within the GPU's error bounds (the PTX ISA's, as
/// `peerpool-ptx` states them): its first two words of each eight are `__sinf` and `__cosf`,
/// within 2^-20.9 absolute on [-pi, pi]; the others within 2 ulp.
fn approx_agree(index: usize, a: u32, b: u32) -> bool {
    let ordered = |w: u32| if w < 0x8000_0000 { w as i64 } else { 0x8000_0000 - w as i64 };
    let (x, y) = (f32::from_bits(a), f32::from_bits(b));
    match index % 8 {
        0 | 1 => (x - y).abs() as f64 <= 2f64.powf(-20.9),
        _ => (ordered(a) - ordered(b)).abs() <= 2,
    }
}

/// The corpus through the shim on `one_gpu` prints the record of `name` line for line, but for
/// `approx_math`'s words, which agree within the GPU's error bounds.
fn corpus_as_on_one_h200(dir: &Path, ptx: &str, name: &str) -> Result<(), Failed> {
    corpus_built_as_on_one_h200(c_program("corpus")?, dir, ptx, name)
}

/// [`corpus_as_on_one_h200`] for the corpus client as `program` was built.
fn corpus_built_as_on_one_h200(program: PathBuf, dir: &Path, ptx: &str, name: &str) -> Result<(), Failed> {
    let want = recorded(&format!("one-h200/{name}"))?;
    let mut program = Command::new(program);
    let out = run(program.arg(dir).arg(ptx), ONE_H200)?;
    let text = stdout(&out);
    let (want_lines, got_lines): (Vec<&str>, Vec<&str>) = (want.lines().collect(), text.lines().collect());
    if want_lines.len() != got_lines.len() {
        return Err(format!("{} lines, the H200 printed {}\n{text}", got_lines.len(), want_lines.len()).into());
    }
    let mut wrong = Vec::new();
    for (w, g) in want_lines.iter().zip(&got_lines) {
        let words = |l: &str| -> Vec<u32> {
            l.split(':')
                .nth(1)
                .unwrap_or("")
                .split_whitespace()
                .filter_map(|h| u32::from_str_radix(h, 16).ok())
                .collect()
        };
        let agree = match (w.strip_prefix("approx_math["), g.strip_prefix("approx_math[")) {
            (Some(_), Some(_)) => {
                let at: usize = w[12..].split(']').next().and_then(|i| i.parse().ok()).unwrap_or(0);
                let (a, b) = (words(w), words(g));
                a.len() == b.len() && a.iter().zip(&b).enumerate().all(|(i, (&a, &b))| approx_agree(at + i, a, b))
            }
            _ => w == g || (w.starts_with("approx_math: ") && g.starts_with("approx_math: ")),
        };
        if !agree {
            wrong.push(format!("the H200 printed `{w}`, the shim `{g}`"));
        }
    }
    match wrong.is_empty() {
        true => Ok(()),
        false => Err(format!("{}\nstderr: {}", wrong.join("\n"), stderr(&out)).into()),
    }
}

fn python(script: &str) -> Result<Command, Failed> {
    let mut command = Command::new(std::env::var(PYTHON)?);
    command.arg(clients().join(script));
    Ok(command)
}

fn main() -> ExitCode {
    let mut trials = Vec::new();
    for name in ["attributes", "host_memory", "managed", "outside_kernels", "cluster_occupancy"] {
        trials.push(trial(format!("{name}_prints_what_it_printed_on_one_h200"), CUDA_INCLUDE, move || {
            same_as_on_one_h200(&mut Command::new(c_program(name)?), &format!("{name}.txt"))
        }));
    }
    let needs = [CUDA_INCLUDE, NVCC];
    // The driver's contracts as an H100 kept them: a CUDA 12.x context, host functions on a
    // thread of their own, hints, a managed pool with no location, a kernel query without a
    // context, pool reserves in cuMemGetInfo, device printf in the program's stdio (its stdout a
    // pipe here), and 1,000 cycles of 1 GiB.
    trials.push(trial("the_drivers_contracts_hold_as_on_one_h100".into(), CUDA_INCLUDE, || {
        same_as_recorded(&mut Command::new(c_program("hardening")?), "one-h100", "hardening.txt")
    }));
    trials.push(trial_needing("images_prints_what_it_printed_on_one_h200".into(), &needs, || {
        let mut program = Command::new(c_program("images")?);
        same_as_on_one_h200(program.arg(images()?), "images.txt")
    }));
    trials.push(trial_needing("launching_machine_code_alone_is_refused_with_one_line".into(), &needs, || {
        let mut program = Command::new(c_program("images")?);
        same_as_on_one_h200(program.arg(images()?).arg("launch"), "images_launch.txt")?;
        let mut program = Command::new(c_program("images")?);
        let out = run(program.arg(images()?).arg("launch"), ONE_H200)?;
        let said: Vec<String> =
            stderr(&out).lines().filter(|l| l.starts_with("peerpool-")).map(str::to_owned).collect();
        let line = "peerpool-sim: a module of sm_90 machine code alone loads, and its kernels cannot be launched: \
                    the simulator runs kernels from PTX (build with PTX beside the machine code, as nvcc's -gencode \
                    arch=compute_90,code=[sm_90,compute_90] does)";
        match (out.status.success(), said == [line]) {
            (true, true) => Ok(()),
            _ => Err(format!("{}; stderr said {said:?}, not [{line:?}]", out.status).into()),
        }
    }));
    trials.push(trial_needing("foreign_kernels_print_what_they_printed_on_one_h200".into(), &needs, || {
        let mut program = Command::new(c_program("kernels")?);
        same_as_on_one_h200(program.arg(images()?), "kernels.txt")?;
        let mut program = Command::new(c_program("kernels")?);
        same_as_on_one_h200(program.arg(images()?).arg("link"), "kernels_link.txt")?;
        let mut program = Command::new(c_program("kernels")?);
        let out = run(program.arg(images()?), ONE_H200)?;
        let line = "peerpool-sim: kernel pp_test_add on GPU 0: block (0,0,0) thread (0,0,0) PTX line 42: illegal \
                    address 0x10: in no allocation: CUDA_ERROR_ILLEGAL_ADDRESS";
        match stderr(&out).lines().any(|l| l == line) {
            true => Ok(()),
            false => Err(format!("stderr does not say {line:?}: {}", stderr(&out)).into()),
        }
    }));
    trials.push(trial_needing("a_failed_assert_and_a_trap_stop_a_kernel_as_on_one_h200".into(), &needs, || {
        for mode in ["assert", "trap"] {
            let mut program = Command::new(c_program("kernels")?);
            same_as_on_one_h200(program.arg(images()?).arg(mode), &format!("kernels_{mode}.txt"))?;
        }
        // The assert's message, as the driver wrote it to stderr.
        let record = recorded("one-h200/kernels_assert.stderr")?;
        let line = record.lines().find(|l| l.contains("Assertion")).ok_or("the record holds no assertion")?;
        let mut program = Command::new(c_program("kernels")?);
        let out = run(program.arg(images()?).arg("assert"), ONE_H200)?;
        match stderr(&out).lines().any(|l| l == line) {
            true => Ok(()),
            false => Err(format!("stderr does not say {line:?}: {}", stderr(&out)).into()),
        }
    }));
    for (ptx, record) in [("corpus.ptx", "corpus.txt"), ("corpus.nvrtc.ptx", "corpus_nvrtc.txt")] {
        trials.push(trial(format!("ptx_corpus_computes_what_one_h200_did::{ptx}"), CUDA_INCLUDE, move || {
            corpus_as_on_one_h200(&corpus_dir(), ptx, record)
        }));
    }
    // A program built with fast-math sets flush-to-zero and denormals-are-zero at its start;
    // the kernels it launches compute subnormals as the GPU does all the same.
    trials.push(trial("ptx_corpus_computes_what_one_h200_did::fast_math_host".into(), CUDA_INCLUDE, || {
        let program = c_program_with("corpus", &["-ffast-math"])?;
        corpus_built_as_on_one_h200(program, &corpus_dir(), "corpus.ptx", "corpus_fast_math.txt")
    }));
    // rustc's jump tables (`brx.idx`), beside the corpus.
    trials.push(trial("ptx_corpus_computes_what_one_h200_did::rustc".into(), CUDA_INCLUDE, || {
        corpus_as_on_one_h200(&corpus_dir().join("../rustc"), "kernels.ptx", "corpus_rustc.txt")
    }));
    // Functions and a kernel whose code runs off its end return and exit.
    trials.push(trial("code_that_runs_off_its_end_returns_as_on_one_h200".into(), CUDA_INCLUDE, || {
        same_as_on_one_h200(&mut Command::new(c_program("implicit_ret")?), "implicit_ret.txt")
    }));
    trials.push(trial("cooperative_and_cluster_launches_do_what_they_did_on_one_h200".into(), CUDA_INCLUDE, || {
        for mode in ["cooperative", "first-ordinary", "clusters"] {
            let mut program = Command::new(c_program("corpus")?);
            let record = format!("corpus_{}.txt", mode.replace('-', "_"));
            same_as_on_one_h200(program.arg(corpus_dir()).arg("corpus.ptx").arg(mode), &record)?;
        }
        Ok(())
    }));
    for name in ["staging", "pool_ipc"] {
        trials.push(trial(format!("cuda_core_{name}_prints_what_it_printed_on_one_h200"), PYTHON, move || {
            same_as_on_one_h200(&mut python(&format!("{name}.py"))?, &format!("{name}.txt"))
        }));
    }
    // numba-cuda compiles with NVVM and links through the driver's JIT linker.
    trials.push(trial("numba_kernels_print_what_they_printed_on_one_h200".into(), PYTHON, || {
        same_as_on_one_h200(&mut python("numba_kernels.py")?, "numba_kernels.txt")
    }));
    // Its PTX linked with NVRTC's of CUDA C, and with numba-cuda's float16 functions.
    trials.push(trial("numba_linked_kernels_print_what_they_printed_on_one_h200".into(), PYTHON, || {
        same_as_on_one_h200(&mut python("numba_linked.py")?, "numba_linked.txt")
    }));
    // More of numba-cuda: votes, matches, atomics, random numbers, libdevice math, float16.
    // The script compares with the record itself: word for word, but for the libdevice
    // functions built on the GPU's approximate instructions, within 2 ulp.
    trials.push(trial("numba_probe_computes_what_it_computed_on_one_h200".into(), PYTHON, || {
        let mut program = python("numba_probe.py")?;
        let out = run(program.arg("--against").arg(recorded_dir()?.join("one-h200")), ONE_H200)?;
        match out.status.success() {
            true => Ok(()),
            false => Err(format!("{}\nstderr: {}", stdout(&out), stderr(&out)).into()),
        }
    }));
    // Random programs of exact instructions at the edges of their types.
    trials.push(trial_needing(
        "random_exact_instructions_compute_what_one_h200_did".into(),
        &[CUDA_INCLUDE, PYTHON],
        || random_programs_as_on_one_h200("1", false, "ptx_random.txt", &RANDOM_DIFFERENCES),
    ));
    trials.push(trial_needing(
        "random_half_instructions_compute_what_one_h200_did".into(),
        &[CUDA_INCLUDE, PYTHON],
        || random_programs_as_on_one_h200("2", true, "ptx_random_halves.txt", &HALVES_DIFFERENCES),
    ));
    let conclusion = libtest_mimic::run(&Arguments::from_args(), trials);
    support::clean_up();
    conclusion.exit_code()
}
