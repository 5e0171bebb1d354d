//! A module's image compiled for a device, as the driver does at `cuModuleLoadData`: the code
//! the driver takes is chosen (`image/`), and the PTX the simulator runs is loaded by the
//! executor whole, so that what the driver's JIT refuses is refused at load with its code, and
//! what the executor cannot run is refused there too rather than at a launch.
//!
//! | the image | the driver answers | here |
//! | --- | --- | --- |
//! | PTX of an ISA newer than the driver's | `CUDA_ERROR_UNSUPPORTED_PTX_VERSION` | the same, with a line naming both ways out |
//! | PTX that ptxas refuses (a name or modifier PTX does not have, an unresolved call) | `CUDA_ERROR_INVALID_PTX`, the JIT's error log | the same, the log in ptxas's words |
//! | valid PTX with an instruction the executor lacks | success | `CUDA_ERROR_NOT_SUPPORTED`, a line naming it |
//! | machine code for the device and no PTX for it | success | success, a line: its kernels cannot be launched |
//!
//! The logs are what `CU_JIT_ERROR_LOG_BUFFER` and `CU_JIT_INFO_LOG_BUFFER` receive: the error
//! in ptxas's words where the simulator knows them (an unknown modifier or instruction, an
//! illegal `.sat`, an unknown symbol, an unresolved call, a newer ISA or target), its lines
//! joined without a last newline, as NVIDIA's driver writes them; the info log stays empty, as
//! the driver's did even with `CU_JIT_LOG_VERBOSE` (`docs/hardware/2026-12-07-modules-h100`).

use crate::image::{self, ComputeCapability, Contents, Refusal, choose::Offer};
use peerpool::CudaCode;
use peerpool_ptx::LoadError;
use std::sync::Arc;

/// What the JIT compiler writes of one load: its error log and its info log.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JitLog {
    pub error: String,
    pub info: String,
}

/// An image read for a device, with its PTX as the executor loaded it (`None` for machine code
/// alone): what a module is made from.
#[derive(Clone)]
pub(crate) struct Compiled {
    pub(crate) contents: Arc<Contents>,
    pub(crate) program: Option<Arc<peerpool_ptx::Module>>,
}

/// What compiling is for, which decides what a call no image defines is.
#[derive(Clone, Copy)]
pub enum Purpose<'a> {
    /// A module: the JIT refuses it (`CUDA_ERROR_INVALID_PTX`).
    Module,
    /// One input of the JIT linker, compiled as it is added: another input may define it.
    LinkInput,
    /// What the JIT linker linked, at `cuLinkComplete`: `CUDA_ERROR_UNKNOWN`, naming the input
    /// (by its name as added) that calls it. Each input: its name and bytes.
    Linked(&'a [(String, Vec<u8>)]),
}

/// Compiles `image` for a device of compute capability `device` under a driver of CUDA
/// `driver_version` (`cuDriverGetVersion`'s), writing the JIT's logs into `log`.
pub(crate) fn compile(
    image: &[u8],
    device: ComputeCapability,
    driver_version: i32,
    log: &mut JitLog,
) -> Result<Compiled, CudaCode> {
    compile_for(image, device, driver_version, Purpose::Module, log)
}

/// [`compile`] for `purpose` (a link input whose calls are left for the linker keeps no
/// program).
pub(crate) fn compile_for(
    image: &[u8],
    device: ComputeCapability,
    driver_version: i32,
    purpose: Purpose<'_>,
    log: &mut JitLog,
) -> Result<Compiled, CudaCode> {
    let isa = image::ptx::driver_isa(driver_version);
    let contents =
        image::read(image, device, isa).map_err(|refusal| refused(image, device, driver_version, &refusal, log))?;
    let Some(text) = contents.ptx.clone() else {
        // peerpool's own kernels run natively, from any image.
        let foreign = contents.kernels.iter().any(|k| crate::own_kernels::peerpools(k).is_none());
        let what = image::describe(contents.chosen.0);
        if foreign {
            once(&format!(
                "peerpool-sim: a module of {what} alone loads, and its kernels cannot be launched: the simulator \
                 runs kernels from PTX (build with PTX beside the machine code, as nvcc's -gencode \
                 arch=compute_{0}{1},code=[sm_{0}{1},compute_{0}{1}] does)",
                device.0, device.1
            ));
        }
        return Ok(Compiled { contents: Arc::new(contents), program: None });
    };
    let program = match peerpool_ptx::load(&text) {
        Ok(program) => Some(Arc::new(program)),
        Err(LoadError::Unresolved { .. }) if matches!(purpose, Purpose::LinkInput) => None,
        Err(LoadError::Unresolved { name, .. }) if let Purpose::Linked(inputs) = purpose => {
            let calls = |(_, text): &&(String, Vec<u8>)| text.windows(name.len()).any(|w| w == name.as_bytes());
            let input = inputs.iter().find(calls).map_or("", |(input, _)| input.as_str());
            log.error = format!("error   : Undefined reference to '{name}' in '{input}'");
            once(&format!("peerpool-sim: the JIT linker found no definition of {name}: CUDA_ERROR_UNKNOWN"));
            return Err(CudaCode::CUDA_ERROR_UNKNOWN);
        }
        Err(e) => return Err(not_loaded(&contents.chosen, &e, log)),
    };
    Ok(Compiled { contents: Arc::new(contents), program })
}

/// The code for an image the driver refuses, its log and line.
fn refused(
    image: &[u8],
    device: ComputeCapability,
    driver_version: i32,
    refusal: &Refusal,
    log: &mut JitLog,
) -> CudaCode {
    match refusal {
        Refusal::PtxVersion(isa, most) => {
            log.error = format!(
                "ptxas application ptx input, line 1; fatal   : Unsupported .version {}.{}; current version is '{}.{}'",
                isa.0, isa.1, most.0, most.1
            );
            let needs = image::ptx::driver_for_isa(*isa);
            once(&format!(
                "peerpool-sim: PTX ISA {}.{} is newer than the simulated driver's CUDA {} reads (ISA {}.{} at most): \
                 simulate a newer driver with `peerpool sim --driver-version {}`, or build the image with that \
                 driver's toolkit (pip install 'nvidia-cuda-nvcc=={}.*'): CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
                isa.0,
                isa.1,
                cuda(driver_version),
                most.0,
                most.1,
                cuda(needs),
                cuda(driver_version),
            ));
        }
        Refusal::InvalidPtx(what) => log.error = ptxas_error(1, what),
        Refusal::PtxTarget(..) => {
            log.error =
                "ptxas fatal   : SM version specified by .target is higher than default SM version assumed".into();
        }
        Refusal::NoBinaryForGpu => {
            let offers = image::fatbin::entries(image).map(|e| e.iter().map(|e| image::describe(e.offer())).collect());
            let held: Vec<String> = offers.unwrap_or_default();
            let held = if held.is_empty() { String::new() } else { format!(" (it holds {})", held.join(", ")) };
            once(&format!(
                "peerpool-sim: an image with no code for compute {}.{}{held}: CUDA_ERROR_NO_BINARY_FOR_GPU",
                device.0, device.1
            ));
        }
        Refusal::NotAnImage(_) | Refusal::Link(_) => {}
    }
    refusal.code()
}

/// The code for PTX the executor does not load, its log and line: PTX ptxas refuses is the
/// program's error where the driver compiles it; otherwise (or for what the executor lacks)
/// the simulator's refusal.
fn not_loaded(chosen: &(Offer, Option<Offer>), e: &LoadError, log: &mut JitLog) -> CudaCode {
    match e {
        LoadError::Syntax { line, what } if chosen.0.ptx => {
            log.error = ptxas_error(*line, what);
            once(&format!("peerpool-sim: PTX line {line}: {what}: CUDA_ERROR_INVALID_PTX"));
            CudaCode::CUDA_ERROR_INVALID_PTX
        }
        LoadError::Unresolved { line, name } if chosen.0.ptx => {
            log.error = format!("ptxas fatal   : Unresolved extern function '{name}'");
            once(&format!(
                "peerpool-sim: PTX line {line}: a call of {name}, which no image defines: CUDA_ERROR_INVALID_PTX"
            ));
            CudaCode::CUDA_ERROR_INVALID_PTX
        }
        LoadError::Unresolved { line, name } => {
            once(&format!(
                "peerpool-sim: PTX line {line}: a call of {name}, which no image defines: peerpool's PTX executor \
                 cannot run this module: CUDA_ERROR_NOT_SUPPORTED"
            ));
            CudaCode::CUDA_ERROR_NOT_SUPPORTED
        }
        LoadError::Syntax { line, what } | LoadError::Unsupported { line, what } => {
            once(&format!(
                "peerpool-sim: PTX line {line}: {what}: peerpool's PTX executor cannot run this module: \
                 CUDA_ERROR_NOT_SUPPORTED"
            ));
            CudaCode::CUDA_ERROR_NOT_SUPPORTED
        }
    }
}

/// An error as ptxas writes it in the JIT's error log: a text it cannot parse is `fatal`, the
/// rest an `error`.
fn ptxas_error(line: u32, what: &str) -> String {
    let kind = if what.starts_with("Parsing error") { "fatal" } else { "error" };
    format!(
        "ptxas application ptx input, line {line}; {kind}   : {what}\nptxas fatal   : Ptx assembly aborted due to errors"
    )
}

/// `13.0` for 13000.
fn cuda(version: i32) -> String {
    format!("{}.{}", version / 1000, version % 1000 / 10)
}

/// Prints `line` once per process: a module loaded on eight GPUs says so once.
fn once(line: &str) {
    static SAID: std::sync::Mutex<Option<std::collections::HashSet<String>>> = std::sync::Mutex::new(None);
    let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
    if said.get_or_insert_with(Default::default).insert(line.to_owned()) {
        peerpool::fault::notice(line);
    }
}
