//! CCCL's device algorithms (Thrust, CUB) and libraries (cooperative groups, libcu++, the
//! math and SIMD intrinsics), compiled for sm_90 by NVIDIA's nvcc (`$PEERPOOL_NVCC`, with
//! CUDA's headers in `$PEERPOOL_CUDA_INCLUDE`): every kernel of the PTX loads, so a module that
//! holds any of them is not refused. Without nvcc the trial is skipped, with its reason.

use libtest_mimic::{Arguments, Failed, Trial};
use std::path::PathBuf;
use std::process::Command;

const SOURCE: &str = include_str!("cccl/algorithms.cu");

fn main() {
    let args = Arguments::from_args();
    let name = "every_kernel_of_cccl_device_algorithms_loads";
    let needs = ["PEERPOOL_NVCC", "PEERPOOL_CUDA_INCLUDE"];
    let trial = Trial::test(name, every_kernel_loads);
    let trial = match needs.iter().find(|n| std::env::var_os(n).is_none()) {
        None => trial,
        Some(missing) => {
            eprintln!("skipped: {name}: {missing} is not set");
            trial.with_ignored_flag(true)
        }
    };
    libtest_mimic::run(&args, vec![trial]).exit();
}

fn every_kernel_loads() -> Result<(), Failed> {
    let var = |n: &str| PathBuf::from(std::env::var_os(n).unwrap_or_default());
    let (nvcc, include) = (var("PEERPOOL_NVCC"), var("PEERPOOL_CUDA_INCLUDE"));
    // The source is written out at run time: an archived test runs far from its checkout.
    let dir = std::env::temp_dir().join(format!("peerpool-cccl-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let (cu, ptx) = (dir.join("algorithms.cu"), dir.join("algorithms.ptx"));
    std::fs::write(&cu, SOURCE)?;
    let made = Command::new(&nvcc)
        .args(["-std=c++17", "-ptx", "-arch=compute_90"])
        .arg(format!("-I{}", include.display()))
        .arg(format!("-I{}", include.join("cccl").display()))
        .arg(&cu)
        .arg("-o")
        .arg(&ptx)
        .output()
        .map_err(|e| format!("running {}: {e}", nvcc.display()))?;
    if !made.status.success() {
        return Err(format!("nvcc failed: {}", String::from_utf8_lossy(&made.stderr)).into());
    }
    let text = std::fs::read_to_string(&ptx)?;
    let _ = std::fs::remove_dir_all(&dir);
    let module = peerpool_ptx::load(&text).map_err(|e| format!("{}: {e}", ptx.display()))?;
    // Every `.entry` of the text is a kernel of the module, Thrust's and CUB's among them.
    let entries: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix(".visible .entry ").or_else(|| l.trim().strip_prefix(".entry ")))
        .map(|l| l.split('(').next().unwrap_or(l).trim())
        .collect();
    let missing: Vec<&&str> = entries.iter().filter(|e| module.kernel(e).is_none()).collect();
    if !missing.is_empty() {
        return Err(format!("{} of {} kernels missing: {missing:?}", missing.len(), entries.len()).into());
    }
    let families = [
        "transform_kernel",
        "DeviceRadixSort",
        "DeviceReduce",
        "DeviceScan",
        "DeviceMergeSort",
        "DeviceSelect",
        "DeviceHistogram",
        "DeviceSegmentedSort",
        "DeviceAdjacentDifference",
    ];
    for family in families {
        if !entries.iter().any(|e| e.contains(family)) {
            return Err(
                format!("no kernel of {family} among the {} compiled: the source changed?", entries.len()).into()
            );
        }
    }
    eprintln!("{}: all {} kernels loaded", ptx.display(), entries.len());
    Ok(())
}
