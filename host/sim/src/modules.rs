//! Modules and libraries in the simulator's state (the calls are `module_calls.rs`'s, and the
//! seam's `cuModuleLoadData`, `cuModuleGetFunction`, `cuModuleUnload` and `cuFuncGetParamInfo`
//! in `driver.rs`): any image loads (PTX, cubins, fatbins; `image/` reads them), its
//! kernels are listed and described and its globals get device memory, as one H200 answered
//! (`docs/hardware/recorded/one-h200/images.txt`, and a probe of more kernels:
//! `docs/hardware/2026-12-01-images-probe/`). peerpool's own kernels run natively
//! (`kernels.rs`); any other kernel runs from its module's PTX (`ptx_kernels.rs`).
//!
//! A kernel is peerpool's when its name is one of peerpool's entry points and its parameters
//! have the sizes peerpool declares, whatever image holds it: a module may mix both kinds.
//!
//! Libraries (`cuLibraryLoadData`) load lazily, as the driver's default loading mode does (an
//! H200 took a garbage library in either mode): the image is kept, read for a device when a
//! call needs what it holds, and a module is made from it in each context that asks. What the
//! image's reading answered (`CUDA_ERROR_INVALID_IMAGE`, say) is then each such call's answer.

use super::image::{self, Code, Contents};
use super::jit::{self, Compiled, JitLog};
use super::memory::{Advice, Backing, HostKind, Origin};
use super::own_kernels;
use super::state::{Fail, FunctionSettings, KernelRec, SimResult, State};
use super::timing::Work;
use peerpool::CudaCode;
use std::sync::Arc;

/// `CU_FUNC_ATTRIBUTE_*` values.
pub(super) mod attr {
    pub(crate) const MAX_THREADS_PER_BLOCK: i32 = 0;
    pub(super) const SHARED_SIZE_BYTES: i32 = 1;
    pub(super) const CONST_SIZE_BYTES: i32 = 2;
    pub(super) const LOCAL_SIZE_BYTES: i32 = 3;
    pub(super) const NUM_REGS: i32 = 4;
    pub(super) const PTX_VERSION: i32 = 5;
    pub(super) const BINARY_VERSION: i32 = 6;
    pub(super) const CACHE_MODE_CA: i32 = 7;
    pub(crate) const MAX_DYNAMIC_SHARED_SIZE_BYTES: i32 = 8;
    pub(super) const PREFERRED_SHARED_MEMORY_CARVEOUT: i32 = 9;
    pub(super) const CLUSTER_SIZE_MUST_BE_SET: i32 = 10;
    pub(super) const REQUIRED_CLUSTER_WIDTH: i32 = 11;
    pub(super) const REQUIRED_CLUSTER_DEPTH: i32 = 13;
    pub(super) const NON_PORTABLE_CLUSTER_SIZE_ALLOWED: i32 = 14;
    pub(super) const CLUSTER_SCHEDULING_POLICY_PREFERENCE: i32 = 15;
}

/// Registers a PTX kernel is taken to use: PTX does not say (the JIT decides), and this keeps
/// a block of 1,024 threads possible, as for the kernels an H200 compiled (8 to 32 registers).
pub const PTX_REGISTERS: u32 = 32;
/// Static shared memory a block may have without opting in (48 KiB).
const DEFAULT_SHARED: i32 = 49_152;
/// Registers a block may use and shared memory it may opt in to: an H200's attributes 12 and
/// 97 (`attributes/h200.txt`).
const REGISTERS_PER_BLOCK: u64 = 65_536;
const OPT_IN_SHARED: i64 = 232_448;

/// The registers a warp of threads that each use `registers` is given: in units of 256.
pub(super) fn registers_per_warp(registers: u32) -> u64 {
    (registers as u64 * 32).div_ceil(256).max(1) * 256
}

pub(super) fn fail<T>(code: CudaCode) -> SimResult<T> {
    Err(code.into())
}

/// Loads what `image` holds for the current device into the current context, compiled as the
/// driver compiles it (`jit.rs`), the JIT's logs into `log`.
pub(super) fn load(s: &mut State, image: &[u8], log: &mut JitLog) -> SimResult<u64> {
    let device = s.current_device()?;
    let cc = s.topo.devices[device].compute_capability;
    let compiled = jit::compile(image, cc, s.topo.driver_version, log).map_err(Fail::from)?;
    install(s, device, compiled)
}

/// A module of `compiled` in the current context on `device`: a function for each kernel, and
/// device memory for each global holding its initial bytes (managed memory for a `__managed__`
/// one).
pub(super) fn install(s: &mut State, device: usize, compiled: Compiled) -> SimResult<u64> {
    install_sharing(s, device, compiled, None)
}

/// [`install`], with a library's managed variables (by name) where it is one of a library's
/// modules: those already placed are taken, and those placed now are added.
fn install_sharing(
    s: &mut State,
    device: usize,
    compiled: Compiled,
    mut shared: Option<&mut Vec<(String, u64)>>,
) -> SimResult<u64> {
    let Compiled { contents, program } = compiled;
    let (mut globals, mut placed) = (Vec::new(), Vec::new());
    for global in &contents.globals {
        let taken =
            shared.as_deref().filter(|_| global.managed).and_then(|m| m.iter().find(|(n, _)| *n == global.name));
        if let Some(&(_, base)) = taken {
            globals.push(base);
            continue;
        }
        match place_global(s, device, global) {
            Some(base) => {
                globals.push(base);
                placed.push(base);
                if global.managed
                    && let Some(m) = shared.as_deref_mut()
                {
                    m.push((global.name.clone(), base));
                }
            }
            None => {
                for base in placed {
                    s.memory.remove(base);
                }
                if let Some(m) = shared {
                    m.retain(|(_, base)| !globals.contains(base));
                }
                return fail(CudaCode::CUDA_ERROR_OUT_OF_MEMORY);
            }
        }
    }
    let library_managed = shared.is_some();
    let handle = s.mint();
    let mut functions = Vec::new();
    for (index, k) in contents.kernels.iter().enumerate() {
        let function = s.mint();
        let kernel = own_kernels::peerpools(k);
        let settings = FunctionSettings::default();
        s.functions.insert(function, super::state::FunctionRec { module: handle, device, index, kernel, settings });
        functions.push(function);
    }
    let ptx = matches!(contents.code, Code::Ptx(_)).then_some(s.topo.devices[device].compute_capability);
    s.work = Some(Work::Module { ptx });
    let ctx = s.current_context().unwrap_or_default();
    let addressed = contents.globals.iter().any(|g| g.addresses);
    s.modules.insert(handle, super::state::ModuleRec { ctx, contents, functions, globals, program, library_managed });
    if addressed {
        addresses(s, handle);
    }
    Ok(handle)
}

/// Writes the addresses that module `handle`'s globals are initialised with (a vtable, a table
/// of function pointers, `&x`), which the image alone does not give: functions' as the PTX
/// executor calls them, variables' where this module placed them. From the executor's load of
/// the module, which its launches then use; none for machine code alone.
fn addresses(s: &mut State, handle: u64) {
    let Some(m) = s.modules.get(&handle) else { return };
    let Some(program) = m.program.clone() else { return };
    let placed = super::state::variables(s, handle, &program);
    let m = &s.modules[&handle];
    let by_name: std::collections::HashMap<&str, &peerpool_ptx::Variable> =
        program.variables.iter().map(|v| (v.name.as_str(), v)).collect();
    for (global, &base) in m.contents.globals.iter().zip(&m.globals).filter(|(g, _)| g.addresses) {
        let Some(v) = by_name.get(global.name.as_str()) else { continue };
        let bytes = v.initial_bytes(&placed);
        if let Some(block) = s.memory.at(base) {
            block.write(0, &bytes[..bytes.len().min(global.size as usize)]);
        }
    }
}

/// Memory of `global`'s size holding its initial bytes: the device's, or managed memory (which
/// the host reaches at the same address) for a `__managed__` variable.
fn place_global(s: &mut State, device: usize, global: &image::Global) -> Option<u64> {
    let len = usize::try_from(global.size).ok()?;
    let backing = match global.managed {
        true => Backing::host(len.max(1))?,
        false => Backing::zeroed(len.max(1))?,
    };
    let init = &global.init[..global.init.len().min(len)];
    backing.with(0, init.len(), |bytes| bytes.copy_from_slice(init));
    match global.managed {
        true => s.memory.place_host(device, backing, global.size.max(1), None, HostKind::Managed(Advice::default())),
        false => s.memory.place(device, backing, global.size, None, Origin::ModuleGlobal).ok(),
    }
}

/// `cuModuleUnload`.
pub(super) fn unload(s: &mut State, module: u64) -> SimResult<()> {
    match s.drop_module(module) {
        true => Ok(()),
        false => fail(CudaCode::CUDA_ERROR_INVALID_HANDLE),
    }
}

/// `cuModuleGetFunction`.
pub(super) fn function(s: &State, module: u64, name: &[u8]) -> SimResult<u64> {
    let Some(m) = s.modules.get(&module) else { return fail(CudaCode::CUDA_ERROR_INVALID_HANDLE) };
    match m.contents.kernels.iter().position(|k| k.name.as_bytes() == name) {
        Some(index) => Ok(m.functions[index]),
        None => fail(CudaCode::CUDA_ERROR_NOT_FOUND),
    }
}

/// The function, its module's contents and its kernel as the image describes it.
pub(super) fn described(s: &State, function: u64) -> SimResult<(super::state::FunctionRec, &Contents, &image::Kernel)> {
    let Some(&f) = s.functions.get(&function) else { return fail(CudaCode::CUDA_ERROR_INVALID_HANDLE) };
    let Some(m) = s.modules.get(&f.module) else { return fail(CudaCode::CUDA_ERROR_INVALID_HANDLE) };
    let kernel = m.contents.kernels.get(f.index).ok_or(Fail::from(CudaCode::CUDA_ERROR_INVALID_HANDLE))?;
    Ok((f, &m.contents, kernel))
}

/// `cuFuncGetParamInfo`: peerpool's kernels as peerpool declares them, others as their image.
pub(super) fn param_info(s: &State, function: u64, index: usize) -> SimResult<(usize, usize)> {
    let (f, _, kernel) = described(s, function)?;
    let found = match f.kernel {
        Some(k) => own_kernels::param_info(k, index),
        None => kernel.params.get(index).map(|p| (p.offset, p.size)),
    };
    found.ok_or_else(|| CudaCode::CUDA_ERROR_INVALID_VALUE.into())
}

/// `cuFuncGetAttribute` of a kernel of `contents` on a device of compute capability `device`.
pub(super) fn attribute(
    contents: &Contents,
    kernel: &image::Kernel,
    settings: &FunctionSettings,
    device: (i32, i32),
    which: i32,
) -> SimResult<i32> {
    let cc = |(major, minor): (i32, i32)| major * 10 + minor;
    let shared = i32::try_from(kernel.shared_bytes).unwrap_or(i32::MAX);
    let registers = kernel.registers.unwrap_or(PTX_REGISTERS);
    Ok(match which {
        attr::MAX_THREADS_PER_BLOCK => {
            // Registers are given out per warp in units of 256: a block may hold as many warps
            // as the register file (64 Ki on an H200) has room for.
            let by_registers = REGISTERS_PER_BLOCK / registers_per_warp(registers) * 32;
            let most = by_registers.min(1024).min(kernel.max_threads.map_or(1024, u64::from));
            most as i32
        }
        attr::SHARED_SIZE_BYTES => shared,
        attr::CONST_SIZE_BYTES => i32::try_from(contents.const_bytes).unwrap_or(i32::MAX),
        attr::LOCAL_SIZE_BYTES => i32::try_from(kernel.local_bytes).unwrap_or(i32::MAX),
        attr::NUM_REGS => i32::try_from(registers).unwrap_or(i32::MAX),
        attr::PTX_VERSION => match contents.code {
            Code::Ptx(target) | Code::Machine(target) => cc(target),
        },
        attr::BINARY_VERSION => match contents.code {
            Code::Ptx(_) => cc(device),
            Code::Machine(sm) => cc(sm),
        },
        attr::CACHE_MODE_CA => 0,
        attr::CLUSTER_SIZE_MUST_BE_SET => kernel.explicit_cluster as i32,
        attr::MAX_DYNAMIC_SHARED_SIZE_BYTES => {
            settings.max_dynamic_shared.unwrap_or(DEFAULT_SHARED.saturating_sub(shared).max(0))
        }
        attr::PREFERRED_SHARED_MEMORY_CARVEOUT => settings.carveout,
        // The image's own (`.reqnctapercluster`), else what `cuFuncSetAttribute` set.
        attr::REQUIRED_CLUSTER_WIDTH..=attr::REQUIRED_CLUSTER_DEPTH => {
            let axis = (which - attr::REQUIRED_CLUSTER_WIDTH) as usize;
            kernel.cluster.map_or(settings.cluster[axis], |d| i32::try_from(d[axis]).unwrap_or(i32::MAX))
        }
        attr::NON_PORTABLE_CLUSTER_SIZE_ALLOWED => settings.non_portable_cluster,
        attr::CLUSTER_SCHEDULING_POLICY_PREFERENCE => settings.scheduling,
        _ => return fail(CudaCode::CUDA_ERROR_INVALID_VALUE),
    })
}

/// `cuFuncSetAttribute`: dynamic shared memory up to what a block may opt in to (227 KiB on an
/// H200, static shared memory included), the carveout, and the cluster settings; the rest are
/// read-only (`CUDA_ERROR_INVALID_VALUE`), as an H200 answered.
pub(super) fn set_attribute(settings: &mut FunctionSettings, shared: u32, which: i32, value: i32) -> SimResult<()> {
    match which {
        attr::MAX_DYNAMIC_SHARED_SIZE_BYTES => {
            let most = OPT_IN_SHARED - shared as i64;
            if value < 0 || value as i64 > most {
                return fail(CudaCode::CUDA_ERROR_INVALID_VALUE);
            }
            settings.max_dynamic_shared = Some(value);
        }
        attr::PREFERRED_SHARED_MEMORY_CARVEOUT if (-1..=100).contains(&value) => settings.carveout = value,
        attr::REQUIRED_CLUSTER_WIDTH..=attr::REQUIRED_CLUSTER_DEPTH => {
            settings.cluster[(which - attr::REQUIRED_CLUSTER_WIDTH) as usize] = value
        }
        attr::NON_PORTABLE_CLUSTER_SIZE_ALLOWED => settings.non_portable_cluster = value,
        attr::CLUSTER_SCHEDULING_POLICY_PREFERENCE => settings.scheduling = value,
        _ => return fail(CudaCode::CUDA_ERROR_INVALID_VALUE),
    }
    Ok(())
}

/// What reading library `lib`'s image for `device` gave.
pub(super) fn library_read(s: &mut State, lib: u64, device: usize) -> SimResult<Arc<Contents>> {
    library_compiled(s, lib, device, &mut JitLog::default()).map(|c| c.contents)
}

/// Library `lib`'s image compiled for `device` (once per compute capability: the driver
/// compiles a library's image when a call first needs it, lazily, as its default loading mode
/// does).
pub(super) fn library_compiled(s: &mut State, lib: u64, device: usize, log: &mut JitLog) -> SimResult<Compiled> {
    let (cc, driver) = (s.topo.devices[device].compute_capability, s.topo.driver_version);
    let Some(rec) = s.libraries.get_mut(&lib) else { return fail(CudaCode::CUDA_ERROR_INVALID_HANDLE) };
    if let Some((_, read)) = rec.read.iter().find(|(c, _)| *c == cc) {
        return read.clone().map_err(Fail::from);
    }
    let read = match &rec.image {
        Ok(bytes) => jit::compile(bytes, cc, driver, log),
        Err(code) => Err(*code),
    };
    rec.read.push((cc, read.clone()));
    read.map_err(Fail::from)
}

/// The device whose reading of a library answers calls that need no context: the current
/// context's, else the first.
pub(super) fn any_device(s: &State) -> usize {
    s.current_device().unwrap_or(0)
}

/// Library `lib`'s module in the current context, made on first use.
pub(super) fn library_module(s: &mut State, lib: u64) -> SimResult<u64> {
    let Some(rec) = s.libraries.get(&lib) else { return fail(CudaCode::CUDA_ERROR_INVALID_HANDLE) };
    let device = s.current_device()?;
    let ctx = s.current_context().unwrap_or_default();
    let made = rec.modules.iter().find(|&&(c, m)| c == ctx && s.modules.contains_key(&m)).map(|&(_, m)| m);
    if let Some(module) = made {
        return Ok(module);
    }
    let compiled = library_compiled(s, lib, device, &mut JitLog::default())?;
    let mut managed = s.libraries.get_mut(&lib).map(|r| std::mem::take(&mut r.managed)).unwrap_or_default();
    let installed = install_sharing(s, device, compiled, Some(&mut managed));
    if let Some(rec) = s.libraries.get_mut(&lib) {
        rec.managed = managed;
    }
    let module = installed?;
    let mut set = Vec::new();
    if let Some(rec) = s.libraries.get_mut(&lib) {
        rec.modules.retain(|&(c, _)| c != ctx);
        rec.modules.push((ctx, module));
        let on_device = rec.settings.iter().filter(|(_, d, _)| *d == device);
        set.extend(on_device.map(|(name, _, settings)| (name.clone(), *settings)));
    }
    for (name, settings) in set {
        apply(s, module, &name, settings);
    }
    Ok(module)
}

/// Sets the function of kernel `name` in `module` (if it has one) to `settings`.
pub(super) fn apply(s: &mut State, module: u64, name: &str, settings: FunctionSettings) {
    if let Ok(f) = function(s, module, name.as_bytes())
        && let Some(rec) = s.functions.get_mut(&f)
    {
        rec.settings = settings;
    }
}

/// The handle of library `lib`'s kernel `name`, the same on every call.
pub(super) fn kernel_handle(s: &mut State, lib: u64, name: &str) -> u64 {
    if let Some(&(_, k)) = s.libraries.get(&lib).and_then(|r| r.kernels.iter().find(|(n, _)| n == name)) {
        return k;
    }
    let k = s.mint();
    s.library_kernels.insert(k, KernelRec { library: lib, name: name.to_owned() });
    if let Some(rec) = s.libraries.get_mut(&lib) {
        rec.kernels.push((name.to_owned(), k));
    }
    k
}

/// The global named `name` of `module`: its address and size. A kernel's name is
/// `CUDA_ERROR_INVALID_VALUE`, any other unknown name `CUDA_ERROR_NOT_FOUND`, as on an H200.
pub(super) fn global(s: &State, module: u64, name: &[u8]) -> SimResult<(u64, usize)> {
    let Some(m) = s.modules.get(&module) else { return fail(CudaCode::CUDA_ERROR_INVALID_HANDLE) };
    if let Some(i) = m.contents.globals.iter().position(|g| g.name.as_bytes() == name) {
        return Ok((m.globals[i], usize::try_from(m.contents.globals[i].size).unwrap_or(usize::MAX)));
    }
    match m.contents.kernel(name) {
        Some(_) => fail(CudaCode::CUDA_ERROR_INVALID_VALUE),
        None => fail(CudaCode::CUDA_ERROR_NOT_FOUND),
    }
}
