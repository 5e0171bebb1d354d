//! Modules and libraries: any image loads (PTX, cubins, fatbins; `image.rs` reads them), its
//! kernels are listed and described and its globals get device memory, as one H200 answered
//! (`docs/hardware/recorded/one-h200/images.txt`, and a probe of more kernels:
//! `docs/hardware/2026-12-01-images-probe/`). peerpool's own kernels run natively
//! (`kernels.rs`); a kernel that is not peerpool's is known by name and never run: launching
//! it is `CUDA_ERROR_NOT_SUPPORTED`.
//!
//! A kernel is peerpool's when its name is one of peerpool's entry points and its parameters
//! have the sizes peerpool declares, whatever image holds it: a module may mix both kinds.
//!
//! Libraries (`cuLibraryLoadData`) load lazily, as the driver's default loading mode does (an
//! H200 took a garbage library in either mode): the image is kept, read for a device when a
//! call needs what it holds, and a module is made from it in each context that asks. What the
//! image's reading answered (`CUDA_ERROR_INVALID_IMAGE`, say) is then each such call's answer.

use super::attributes::recorded;
use super::driver::SimDriver;
use super::image::{self, Code, ComputeCapability, Contents};
use super::kernels::{self, Kernel};
use super::memory::{Backing, Origin};
use super::state::{Fail, SimResult, State};
use super::timing::Work;
use peerpool::CudaCode;
use peerpool::driver::{DevicePtr, DriverResult, Function, Module};
use std::sync::Arc;

/// What a function is set to (`cuFuncSetAttribute`), as it reads back.
#[derive(Clone, Copy, Debug)]
pub(super) struct FunctionSettings {
    max_dynamic_shared: Option<i32>,
    carveout: i32,
    cluster: [i32; 3],
    non_portable_cluster: i32,
    scheduling: i32,
}

impl Default for FunctionSettings {
    fn default() -> Self {
        FunctionSettings {
            max_dynamic_shared: None,
            carveout: -1,
            cluster: [0; 3],
            non_portable_cluster: 0,
            scheduling: 0,
        }
    }
}

/// A loaded library: its image (or the code a later call answers, for an image the caller's
/// memory did not hold whole), what reading it for each compute capability gave, the module
/// made from it in each context, and its kernels' handles by name.
#[derive(Clone)]
pub(super) struct LibraryRec {
    image: Result<Arc<[u8]>, CudaCode>,
    read: Vec<(ComputeCapability, Reading)>,
    modules: Vec<(u64, u64)>,
    kernels: Vec<(String, u64)>,
    /// What `cuKernelSetAttribute` set: by kernel name and device, for its functions there.
    settings: Vec<(String, usize, FunctionSettings)>,
}

/// What reading an image for one compute capability gave.
type Reading = Result<Arc<Contents>, CudaCode>;

/// A library's kernel: the library and the kernel's name.
#[derive(Clone)]
pub(super) struct KernelRec {
    library: u64,
    name: String,
}

/// `CU_FUNC_ATTRIBUTE_*` values.
mod attr {
    pub(super) const MAX_THREADS_PER_BLOCK: i32 = 0;
    pub(super) const SHARED_SIZE_BYTES: i32 = 1;
    pub(super) const CONST_SIZE_BYTES: i32 = 2;
    pub(super) const LOCAL_SIZE_BYTES: i32 = 3;
    pub(super) const NUM_REGS: i32 = 4;
    pub(super) const PTX_VERSION: i32 = 5;
    pub(super) const BINARY_VERSION: i32 = 6;
    pub(super) const CACHE_MODE_CA: i32 = 7;
    pub(super) const MAX_DYNAMIC_SHARED_SIZE_BYTES: i32 = 8;
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

fn fail<T>(code: CudaCode) -> SimResult<T> {
    Err(code.into())
}

/// Loads what `image` holds for the current device into the current context.
pub(super) fn load(s: &mut State, image: &[u8]) -> SimResult<u64> {
    let device = s.current_device()?;
    let contents = image::read(image, s.topo.devices[device].compute_capability).map_err(|r| Fail::from(r.code()))?;
    install(s, device, Arc::new(contents))
}

/// A module of `contents` in the current context on `device`: a function for each kernel, and
/// device memory for each global holding its initial bytes.
fn install(s: &mut State, device: usize, contents: Arc<Contents>) -> SimResult<u64> {
    let mut globals = Vec::new();
    for global in &contents.globals {
        match place_global(s, device, global) {
            Some(base) => globals.push(base),
            None => {
                for base in globals {
                    s.memory.remove(base);
                }
                return fail(CudaCode::CUDA_ERROR_OUT_OF_MEMORY);
            }
        }
    }
    let handle = s.mint();
    let mut functions = Vec::new();
    for (index, k) in contents.kernels.iter().enumerate() {
        let function = s.mint();
        let kernel = peerpools(k);
        let settings = FunctionSettings::default();
        s.functions.insert(function, super::state::FunctionRec { module: handle, device, index, kernel, settings });
        functions.push(function);
    }
    let ptx = matches!(contents.code, Code::Ptx(_)).then_some(s.topo.devices[device].compute_capability);
    s.work = Some(Work::Module { ptx });
    let ctx = s.current_context().unwrap_or_default();
    s.modules.insert(handle, super::state::ModuleRec { ctx, contents, functions, globals });
    Ok(handle)
}

/// Device memory of `global`'s size holding its initial bytes.
fn place_global(s: &mut State, device: usize, global: &image::Global) -> Option<u64> {
    let len = usize::try_from(global.size).ok()?;
    let backing = Backing::zeroed(len.max(1))?;
    let init = &global.init[..global.init.len().min(len)];
    backing.with(0, init.len(), |bytes| bytes.copy_from_slice(init));
    s.memory.place(device, backing, global.size, None, Origin::ModuleGlobal).ok()
}

/// peerpool's kernel that `k` is: one of its entry points by name, with the parameter sizes
/// peerpool declares.
fn peerpools(k: &image::Kernel) -> Option<Kernel> {
    Kernel::ALL.into_iter().find(|p| {
        let sizes = (0..).map_while(|i| kernels::param_info(*p, i)).map(|(_, size)| size);
        p.entry() == k.name && sizes.eq(k.params.iter().map(|q| q.size))
    })
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
fn described(s: &State, function: u64) -> SimResult<(super::state::FunctionRec, &Contents, &image::Kernel)> {
    let Some(&f) = s.functions.get(&function) else { return fail(CudaCode::CUDA_ERROR_INVALID_HANDLE) };
    let Some(m) = s.modules.get(&f.module) else { return fail(CudaCode::CUDA_ERROR_INVALID_HANDLE) };
    let kernel = m.contents.kernels.get(f.index).ok_or(Fail::from(CudaCode::CUDA_ERROR_INVALID_HANDLE))?;
    Ok((f, &m.contents, kernel))
}

/// `cuFuncGetParamInfo`: peerpool's kernels as peerpool declares them, others as their image.
pub(super) fn param_info(s: &State, function: u64, index: usize) -> SimResult<(usize, usize)> {
    let (f, _, kernel) = described(s, function)?;
    let found = match f.kernel {
        Some(k) => kernels::param_info(k, index),
        None => kernel.params.get(index).map(|p| (p.offset, p.size)),
    };
    found.ok_or_else(|| CudaCode::CUDA_ERROR_INVALID_VALUE.into())
}

/// `cuFuncGetAttribute` of a kernel of `contents` on a device of compute capability `device`.
fn attribute(
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
            let file = recorded(12).unwrap_or(65_536) as u64;
            let per_warp = (registers as u64 * 32).div_ceil(256).max(1) * 256;
            let by_registers = file / per_warp * 32;
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
        attr::CACHE_MODE_CA | attr::CLUSTER_SIZE_MUST_BE_SET => 0,
        attr::MAX_DYNAMIC_SHARED_SIZE_BYTES => {
            settings.max_dynamic_shared.unwrap_or(DEFAULT_SHARED.saturating_sub(shared).max(0))
        }
        attr::PREFERRED_SHARED_MEMORY_CARVEOUT => settings.carveout,
        attr::REQUIRED_CLUSTER_WIDTH..=attr::REQUIRED_CLUSTER_DEPTH => {
            settings.cluster[(which - attr::REQUIRED_CLUSTER_WIDTH) as usize]
        }
        attr::NON_PORTABLE_CLUSTER_SIZE_ALLOWED => settings.non_portable_cluster,
        attr::CLUSTER_SCHEDULING_POLICY_PREFERENCE => settings.scheduling,
        _ => return fail(CudaCode::CUDA_ERROR_INVALID_VALUE),
    })
}

/// `cuFuncSetAttribute`: dynamic shared memory up to what a block may opt in to (227 KiB on an
/// H200, static shared memory included), the carveout, and the cluster settings; the rest are
/// read-only (`CUDA_ERROR_INVALID_VALUE`), as an H200 answered.
fn set_attribute(settings: &mut FunctionSettings, shared: u32, which: i32, value: i32) -> SimResult<()> {
    match which {
        attr::MAX_DYNAMIC_SHARED_SIZE_BYTES => {
            let most = recorded(97).unwrap_or(232_448) as i64 - shared as i64;
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

/// What reading library `lib`'s image for `device` gave (read once per compute capability).
fn library_read(s: &mut State, lib: u64, device: usize) -> SimResult<Arc<Contents>> {
    let cc = s.topo.devices[device].compute_capability;
    let Some(rec) = s.libraries.get_mut(&lib) else { return fail(CudaCode::CUDA_ERROR_INVALID_HANDLE) };
    if let Some((_, read)) = rec.read.iter().find(|(c, _)| *c == cc) {
        return read.clone().map_err(Fail::from);
    }
    let read = match &rec.image {
        Ok(bytes) => image::read(bytes, cc).map(Arc::new).map_err(|r| r.code()),
        Err(code) => Err(*code),
    };
    rec.read.push((cc, read.clone()));
    read.map_err(Fail::from)
}

/// The device whose reading of a library answers calls that need no context: the current
/// context's, else the first.
fn any_device(s: &State) -> usize {
    s.current_device().unwrap_or(0)
}

/// Library `lib`'s module in the current context, made on first use.
fn library_module(s: &mut State, lib: u64) -> SimResult<u64> {
    if !s.libraries.contains_key(&lib) {
        return fail(CudaCode::CUDA_ERROR_INVALID_HANDLE);
    }
    let device = s.current_device()?;
    let ctx = s.current_context().unwrap_or_default();
    let made =
        s.libraries[&lib].modules.iter().find(|&&(c, m)| c == ctx && s.modules.contains_key(&m)).map(|&(_, m)| m);
    if let Some(module) = made {
        return Ok(module);
    }
    let contents = library_read(s, lib, device)?;
    let module = install(s, device, contents)?;
    if let Some(rec) = s.libraries.get_mut(&lib) {
        rec.modules.retain(|&(c, _)| c != ctx);
        rec.modules.push((ctx, module));
    }
    let set: Vec<(String, FunctionSettings)> = s.libraries[&lib]
        .settings
        .iter()
        .filter(|(_, d, _)| *d == device)
        .map(|(name, _, settings)| (name.clone(), *settings))
        .collect();
    for (name, settings) in set {
        apply(s, module, &name, settings);
    }
    Ok(module)
}

/// Sets the function of kernel `name` in `module` (if it has one) to `settings`.
fn apply(s: &mut State, module: u64, name: &str, settings: FunctionSettings) {
    if let Ok(f) = function(s, module, name.as_bytes())
        && let Some(rec) = s.functions.get_mut(&f)
    {
        rec.settings = settings;
    }
}

/// The handle of library `lib`'s kernel `name`, the same on every call.
fn kernel_handle(s: &mut State, lib: u64, name: &str) -> u64 {
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
fn global(s: &State, module: u64, name: &[u8]) -> SimResult<(u64, usize)> {
    let Some(m) = s.modules.get(&module) else { return fail(CudaCode::CUDA_ERROR_INVALID_HANDLE) };
    if let Some(i) = m.contents.globals.iter().position(|g| g.name.as_bytes() == name) {
        return Ok((m.globals[i], usize::try_from(m.contents.globals[i].size).unwrap_or(usize::MAX)));
    }
    match m.contents.kernel(name) {
        Some(_) => fail(CudaCode::CUDA_ERROR_INVALID_VALUE),
        None => fail(CudaCode::CUDA_ERROR_NOT_FOUND),
    }
}

impl SimDriver {
    /// `cuModuleLoadData` (and `cuModuleLoadDataEx`, `cuModuleLoad`, `cuModuleLoadFatBinary`)
    /// of any image: PTX (to its first NUL), a cubin, or a fatbin, whole.
    pub fn module_load_image(&self, image: &[u8]) -> DriverResult<Module> {
        self.run("cuModuleLoadData", |s| load(s, image).map(Module))
    }

    /// `cuModuleGetFunctionCount`.
    pub fn module_function_count(&self, module: Module) -> DriverResult<u32> {
        self.run("cuModuleGetFunctionCount", |s| match s.modules.get(&module.0) {
            Some(m) => Ok(m.functions.len() as u32),
            None => fail(CudaCode::CUDA_ERROR_INVALID_HANDLE),
        })
    }

    /// `cuModuleEnumerateFunctions`: the first `count` functions (fewer when the module has
    /// fewer; an H200 answered success for any count).
    pub fn module_functions(&self, module: Module, count: usize) -> DriverResult<Vec<Function>> {
        self.run("cuModuleEnumerateFunctions", |s| match s.modules.get(&module.0) {
            Some(m) => Ok(m.functions.iter().take(count).map(|&f| Function(f)).collect()),
            None => fail(CudaCode::CUDA_ERROR_INVALID_HANDLE),
        })
    }

    /// `cuModuleGetGlobal`: the device address and size of a global variable.
    pub fn module_get_global(&self, module: Module, name: &[u8]) -> DriverResult<(DevicePtr, usize)> {
        self.run("cuModuleGetGlobal", |s| global(s, module.0, name).map(|(at, size)| (DevicePtr(at), size)))
    }

    /// `cuFuncGetName`.
    pub fn func_name(&self, function: Function) -> DriverResult<String> {
        self.run("cuFuncGetName", |s| described(s, function.0).map(|(_, _, k)| k.name.clone()))
    }

    /// The name of a live function's kernel when it is not peerpool's (the simulator does not
    /// run it); `None` for peerpool's own, an unknown handle, or a dead process (whose calls
    /// answer its sticky error). Not a driver call: the clock does not move.
    pub fn func_foreign_name(&self, function: Function) -> Option<String> {
        let s = self.lock_state();
        if s.dead.is_some() {
            return None;
        }
        let (f, _, k) = described(&s, function.0).ok()?;
        f.kernel.is_none().then(|| k.name.clone())
    }

    /// `cuFuncGetAttribute`, as an H200 answered for the same image.
    pub fn func_get_attribute(&self, function: Function, which: i32) -> DriverResult<i32> {
        self.run("cuFuncGetAttribute", |s| {
            let (f, contents, kernel) = described(s, function.0)?;
            attribute(contents, kernel, &f.settings, s.topo.devices[f.device].compute_capability, which)
        })
    }

    /// `cuFuncSetAttribute`.
    pub fn func_set_attribute(&self, function: Function, which: i32, value: i32) -> DriverResult<()> {
        self.run("cuFuncSetAttribute", |s| {
            let (f, _, kernel) = described(s, function.0)?;
            let mut settings = f.settings;
            set_attribute(&mut settings, kernel.shared_bytes, which, value)?;
            if let Some(rec) = s.functions.get_mut(&function.0) {
                rec.settings = settings;
            }
            Ok(())
        })
    }

    /// `cuLibraryLoadData`: loads lazily, so any bytes load (an H200 took garbage); `Err` is an
    /// image the caller's memory did not hold whole, whose code every later call answers.
    pub fn library_load(&self, image: Result<Vec<u8>, CudaCode>) -> DriverResult<u64> {
        self.run("cuLibraryLoadData", |s| {
            let image = image.map(Arc::from);
            let handle = s.mint();
            let rec =
                LibraryRec { image, read: Vec::new(), modules: Vec::new(), kernels: Vec::new(), settings: Vec::new() };
            s.libraries.insert(handle, rec);
            Ok(handle)
        })
    }

    /// `cuLibraryUnload`: its modules in every context go, and its kernels' handles. A second
    /// unload is `CUDA_ERROR_INVALID_HANDLE` (NVIDIA's driver crashed the process).
    pub fn library_unload(&self, lib: u64) -> DriverResult<()> {
        self.run("cuLibraryUnload", |s| {
            let Some(rec) = s.libraries.remove(&lib) else { return fail(CudaCode::CUDA_ERROR_INVALID_HANDLE) };
            for (_, module) in rec.modules {
                s.drop_module(module);
            }
            s.library_kernels.retain(|_, k| k.library != lib);
            Ok(())
        })
    }

    /// `cuLibraryGetKernelCount`: 0 for an image that does not read (the call itself succeeds,
    /// as on an H200).
    pub fn library_kernel_count(&self, lib: u64) -> DriverResult<u32> {
        self.run("cuLibraryGetKernelCount", |s| {
            if !s.libraries.contains_key(&lib) {
                return fail(CudaCode::CUDA_ERROR_INVALID_HANDLE);
            }
            let device = any_device(s);
            Ok(library_read(s, lib, device).map_or(0, |c| c.kernels.len() as u32))
        })
    }

    /// `cuLibraryEnumerateKernels`: the handles of the first `count` kernels.
    pub fn library_kernels(&self, lib: u64, count: usize) -> DriverResult<Vec<u64>> {
        self.run("cuLibraryEnumerateKernels", |s| {
            if !s.libraries.contains_key(&lib) {
                return fail(CudaCode::CUDA_ERROR_INVALID_HANDLE);
            }
            let device = any_device(s);
            let Ok(contents) = library_read(s, lib, device) else { return Ok(Vec::new()) };
            Ok(contents.kernels.iter().take(count).map(|k| kernel_handle(s, lib, &k.name)).collect())
        })
    }

    /// `cuLibraryGetKernel`.
    pub fn library_get_kernel(&self, lib: u64, name: &[u8]) -> DriverResult<u64> {
        self.run("cuLibraryGetKernel", |s| {
            let device = any_device(s);
            let contents = library_read(s, lib, device)?;
            match contents.kernel(name) {
                Some(k) => Ok(kernel_handle(s, lib, &k.name)),
                None => fail(CudaCode::CUDA_ERROR_NOT_FOUND),
            }
        })
    }

    /// `cuLibraryGetModule`: the library's module in the current context.
    pub fn library_get_module(&self, lib: u64) -> DriverResult<Module> {
        self.run("cuLibraryGetModule", |s| library_module(s, lib).map(Module))
    }

    /// `cuLibraryGetGlobal`: a global of the library's module in the current context.
    pub fn library_get_global(&self, lib: u64, name: &[u8]) -> DriverResult<(DevicePtr, usize)> {
        self.run("cuLibraryGetGlobal", |s| {
            let module = library_module(s, lib)?;
            global(s, module, name).map(|(at, size)| (DevicePtr(at), size))
        })
    }

    /// `cuKernelGetFunction`: the kernel's function in the current context.
    pub fn kernel_get_function(&self, kernel: u64) -> DriverResult<Function> {
        self.run("cuKernelGetFunction", |s| {
            let Some(k) = s.library_kernels.get(&kernel).cloned() else {
                return fail(CudaCode::CUDA_ERROR_INVALID_HANDLE);
            };
            let module = library_module(s, k.library)?;
            function(s, module, k.name.as_bytes()).map(Function)
        })
    }

    /// `cuFuncGetModule`.
    pub fn func_get_module(&self, function: Function) -> DriverResult<Module> {
        self.run("cuFuncGetModule", |s| described(s, function.0).map(|(f, _, _)| Module(f.module)))
    }

    /// `cuKernelGetLibrary`.
    pub fn kernel_get_library(&self, kernel: u64) -> DriverResult<u64> {
        self.run("cuKernelGetLibrary", |s| match s.library_kernels.get(&kernel) {
            Some(k) => Ok(k.library),
            None => fail(CudaCode::CUDA_ERROR_INVALID_HANDLE),
        })
    }

    /// `cuKernelGetParamInfo`: as its image lays the parameters out (no context needed).
    pub fn kernel_get_param_info(&self, kernel: u64, index: usize) -> DriverResult<(usize, usize)> {
        self.run("cuKernelGetParamInfo", |s| {
            let Some(k) = s.library_kernels.get(&kernel).cloned() else {
                return fail(CudaCode::CUDA_ERROR_INVALID_HANDLE);
            };
            let device = any_device(s);
            let contents = library_read(s, k.library, device)?;
            let param = contents.kernel(k.name.as_bytes()).and_then(|d| d.params.get(index).copied());
            param.map(|p| (p.offset, p.size)).ok_or_else(|| CudaCode::CUDA_ERROR_INVALID_VALUE.into())
        })
    }

    /// `cuLibraryGetManaged`: managed variables are not read from images, so none is found
    /// (`CUDA_ERROR_NOT_FOUND`, as an H200 answered for a library without any); an image that
    /// does not read answers what reading it found.
    pub fn library_get_managed(&self, lib: u64) -> DriverResult<()> {
        self.run("cuLibraryGetManaged", |s| {
            let device = any_device(s);
            library_read(s, lib, device)?;
            fail(CudaCode::CUDA_ERROR_NOT_FOUND)
        })
    }

    /// `cuKernelSetAttribute` on device `device`: for the kernel's functions in that device's
    /// contexts, made or still to be made (an H200's function read back what its kernel was
    /// set to).
    pub fn kernel_set_attribute(&self, kernel: u64, which: i32, value: i32, device: i32) -> DriverResult<()> {
        self.run("cuKernelSetAttribute", |s| {
            let Some(k) = s.library_kernels.get(&kernel).cloned() else {
                return fail(CudaCode::CUDA_ERROR_INVALID_HANDLE);
            };
            let Some(device) = s.in_range(device) else { return fail(CudaCode::CUDA_ERROR_INVALID_DEVICE) };
            let contents = library_read(s, k.library, device)?;
            let Some(described) = contents.kernel(k.name.as_bytes()) else {
                return fail(CudaCode::CUDA_ERROR_INVALID_HANDLE);
            };
            let Some(rec) = s.libraries.get_mut(&k.library) else { return fail(CudaCode::CUDA_ERROR_INVALID_HANDLE) };
            let at = rec.settings.iter().position(|(n, d, _)| *n == k.name && *d == device);
            let mut settings = at.map_or_else(FunctionSettings::default, |i| rec.settings[i].2);
            set_attribute(&mut settings, described.shared_bytes, which, value)?;
            match at {
                Some(i) => rec.settings[i].2 = settings,
                None => rec.settings.push((k.name.clone(), device, settings)),
            }
            let modules: Vec<u64> = rec.modules.iter().map(|&(_, m)| m).collect();
            for module in modules {
                let on_device =
                    s.modules.get(&module).and_then(|m| m.functions.first()).and_then(|f| s.functions.get(f));
                if on_device.is_some_and(|f| f.device == device) {
                    apply(s, module, &k.name, settings);
                }
            }
            Ok(())
        })
    }

    /// `cuKernelGetName`.
    pub fn kernel_name(&self, kernel: u64) -> DriverResult<String> {
        self.run("cuKernelGetName", |s| match s.library_kernels.get(&kernel) {
            Some(k) => Ok(k.name.clone()),
            None => fail(CudaCode::CUDA_ERROR_INVALID_HANDLE),
        })
    }

    /// `cuKernelGetAttribute` on device `device` (no context needed, as on an H200).
    pub fn kernel_get_attribute(&self, kernel: u64, which: i32, device: i32) -> DriverResult<i32> {
        self.run("cuKernelGetAttribute", |s| {
            let Some(k) = s.library_kernels.get(&kernel).cloned() else {
                return fail(CudaCode::CUDA_ERROR_INVALID_HANDLE);
            };
            let Some(device) = s.in_range(device) else { return fail(CudaCode::CUDA_ERROR_INVALID_DEVICE) };
            let contents = library_read(s, k.library, device)?;
            let Some(described) = contents.kernel(k.name.as_bytes()) else {
                return fail(CudaCode::CUDA_ERROR_INVALID_HANDLE);
            };
            let cc = s.topo.devices[device].compute_capability;
            let set = s
                .libraries
                .get(&k.library)
                .and_then(|r| r.settings.iter().find(|(n, d, _)| *n == k.name && *d == device));
            attribute(&contents, described, &set.map_or_else(FunctionSettings::default, |&(_, _, s)| s), cc, which)
        })
    }
}
