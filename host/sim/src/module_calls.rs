//! The simulator's calls on modules, functions, libraries and kernels beyond peerpool's seam
//! (what the libcuda shim serves: `cuModuleGetFunctionCount`, `cuFuncGetAttribute`, the library
//! API, ...), each on `modules.rs`'s state functions.

use super::driver::SimDriver;
use super::image::{Contents, Kernel};
use super::jit::JitLog;
use super::modules;
use super::modules::{
    any_device, apply, attribute, described, fail, function, global, kernel_handle, library_module, library_read, load,
    set_attribute,
};
use super::ptx_kernels::{self, PtxLaunch, PtxLaunchHow};
use super::state::{FunctionSettings, KernelRec, LibraryRec, SimResult, State};
use peerpool::CudaCode;
use peerpool::driver::{DevicePtr, DriverResult, Function, Module, Stream};
use std::sync::Arc;

impl SimDriver {
    /// `cuModuleLoadData` (and `cuModuleLoadDataEx`, `cuModuleLoad`, `cuModuleLoadFatBinary`)
    /// of any image: PTX (to its first NUL), a cubin, or a fatbin, whole.
    pub fn module_load_image(&self, image: &[u8]) -> DriverResult<Module> {
        self.module_load_logged(image).0
    }

    /// [`SimDriver::module_load_image`] with the JIT's logs, as `cuModuleLoadDataEx` gives them
    /// to `CU_JIT_ERROR_LOG_BUFFER` and `CU_JIT_INFO_LOG_BUFFER`.
    pub fn module_load_logged(&self, image: &[u8]) -> (DriverResult<Module>, JitLog) {
        let mut log = JitLog::default();
        let loaded = self.run("cuModuleLoadData", |s| load(s, image, &mut log).map(Module));
        (loaded, log)
    }

    /// What module `module`'s image offered that the driver takes, and the PTX the simulator
    /// runs (`None`: machine code alone), as nvcc names them: for the trace. Not a driver call.
    pub fn module_chosen(&self, module: Module) -> Option<(String, Option<String>)> {
        let s = self.lock_state();
        let (driver, simulator) = s.modules.get(&module.0)?.contents.chosen;
        Some((crate::image::describe(driver), simulator.map(crate::image::describe)))
    }

    /// What the JIT linker's compiler says of `image` for the current device, keeping nothing:
    /// each PTX input as `cuLinkAddData` adds it, and what was linked at `cuLinkComplete`.
    pub fn link_check(&self, image: &[u8], purpose: crate::jit::Purpose<'_>) -> (DriverResult<()>, JitLog) {
        let mut log = JitLog::default();
        let call = match purpose {
            crate::jit::Purpose::Linked(_) => "cuLinkComplete",
            _ => "cuLinkAddData",
        };
        let checked = self.run(call, |s| {
            let device = s.current_device()?;
            let cc = s.topo.devices[device].compute_capability;
            crate::jit::compile_for(image, cc, s.topo.driver_version, purpose, &mut log).map(|_| ()).map_err(Into::into)
        });
        (checked, log)
    }

    /// The PTX of fatbin `bytes` that the current device would compile (a linker's input: the
    /// simulator links PTX), `None` if it holds machine code alone.
    pub fn fatbin_ptx(&self, bytes: &[u8]) -> DriverResult<Option<Vec<u8>>> {
        self.run("cuLinkAddData", |s| {
            let device = s.current_device()?;
            let cc = s.topo.devices[device].compute_capability;
            let refused = |_| crate::state::Fail::from(CudaCode::CUDA_ERROR_INVALID_IMAGE);
            let entries = crate::image::fatbin::entries(bytes).map_err(refused)?;
            let offers: Vec<_> = entries.iter().map(|e| e.offer()).collect();
            match crate::image::choose::choose(&offers, cc).simulator {
                Some(i) => Ok(Some(entries[i].bytes().map_err(refused)?.into_owned())),
                None => Ok(None),
            }
        })
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

    /// Whether `function` is a live function of one of peerpool's own kernels, which the
    /// simulator runs natively (`launch_kernel`); every other handle launches through
    /// [`SimDriver::launch_ptx`], which answers unknown handles and a dead process. Not a
    /// driver call: the clock does not move.
    pub fn runs_natively(&self, function: Function) -> bool {
        let s = self.lock_state();
        s.dead.is_none() && s.functions.get(&function.0).is_some_and(|f| f.kernel.is_some())
    }

    /// Where each parameter of the kernel that `handle` launches lies in its parameter buffer
    /// (offset, size): a function's, or a library kernel's as the current device reads the
    /// library. `None` for an unknown handle. Not a driver call: the clock does not move.
    pub fn param_layout(&self, handle: u64) -> Option<Vec<(usize, usize)>> {
        let mut s = self.lock_state();
        let layout = |k: &crate::image::Kernel| k.params.iter().map(|p| (p.offset, p.size)).collect();
        if let Some(k) = s.library_kernels.get(&handle).cloned() {
            let device = s.current_device().ok()?;
            return library_read(&mut s, k.library, device).ok()?.kernel(k.name.as_bytes()).map(layout);
        }
        let (f, _, kernel) = described(&s, handle).ok()?;
        match f.kernel {
            Some(own) => Some((0..).map_while(|i| crate::own_kernels::param_info(own, i)).collect()),
            None => Some(layout(kernel)),
        }
    }

    /// `cuLaunchKernel` of a kernel that is not peerpool's (a function, or a library's kernel
    /// standing for its function in the current context), run from its module's PTX with every
    /// access checked against the current device's view (`ptx_kernels.rs`).
    pub fn launch_ptx(&self, function: Function, launch: &PtxLaunch<'_>, stream: Stream) -> DriverResult<()> {
        self.launch_ptx_how(function, launch, stream, PtxLaunchHow::default())
    }

    /// `cuLaunchCooperativeKernel`: every block of the grid resident at once (more than the
    /// device holds is `CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE`), with a grid workspace, so
    /// that `grid.sync()` works.
    pub fn launch_ptx_cooperative(
        &self,
        function: Function,
        launch: &PtxLaunch<'_>,
        stream: Stream,
    ) -> DriverResult<()> {
        self.launch_ptx_how(function, launch, stream, PtxLaunchHow { cooperative: true, cluster: None })
    }

    /// `cuLaunchKernelEx`: a launch, cooperative or not, in clusters or not, as `how` says.
    pub fn launch_ptx_how(
        &self,
        function: Function,
        launch: &PtxLaunch<'_>,
        stream: Stream,
        how: PtxLaunchHow,
    ) -> DriverResult<()> {
        let call = if how.cooperative { "cuLaunchCooperativeKernel" } else { "cuLaunchKernel" };
        self.run(call, |s| {
            let device = s.current_device()?;
            let function = in_context(s, function.0)?;
            let Some(f) = s.functions.get(&function) else { return fail(CudaCode::CUDA_ERROR_INVALID_HANDLE) };
            if f.device != device || s.stream_device(stream)? != device {
                return fail(CudaCode::CUDA_ERROR_INVALID_HANDLE);
            }
            ptx_kernels::launch(s, device, function, launch, how)
        })
    }

    /// `cuOccupancyMaxActiveBlocksPerMultiprocessor`: how many blocks of `function` with
    /// `threads` threads and `dynamic` bytes of dynamic shared memory a multiprocessor holds at
    /// once, by an H200's limits (`occupancy.rs`).
    pub fn occupancy_max_active_blocks(&self, function: Function, threads: i32, dynamic: usize) -> DriverResult<i32> {
        self.run("cuOccupancyMaxActiveBlocksPerMultiprocessor", |s| {
            let Ok(threads) = u64::try_from(threads) else { return fail(CudaCode::CUDA_ERROR_INVALID_VALUE) };
            let function = in_context(s, function.0)?;
            let blocks = super::occupancy::blocks_per_multiprocessor(s, function, threads, dynamic as u64)?;
            Ok(blocks as i32)
        })
    }

    /// `cuOccupancyMaxPotentialBlockSize`: the block size of at most `limit` threads (0: no
    /// limit) that lets a multiprocessor hold the most threads of `function`, each size with
    /// `bytes_of(size)` bytes of dynamic shared memory, and the grid that fills the device with
    /// it. `bytes_of` runs under the simulator's lock: it must not call the driver.
    pub fn occupancy_max_potential_block_size(
        &self,
        function: Function,
        bytes_of: &dyn Fn(i32) -> usize,
        limit: i32,
    ) -> DriverResult<(i32, i32)> {
        self.run("cuOccupancyMaxPotentialBlockSize", |s| {
            let function = in_context(s, function.0)?;
            super::occupancy::potential_block_size(s, function, bytes_of, limit)
        })
    }

    /// `cuOccupancyMaxActiveClusters`: how many clusters of `function` the device holds at
    /// once with `launch`'s block size and dynamic shared memory, in clusters of `cluster` (the
    /// launch's attribute) or the kernel's own; 0 without either.
    pub fn occupancy_max_active_clusters(
        &self,
        function: Function,
        launch: &PtxLaunch<'_>,
        cluster: Option<[u32; 3]>,
    ) -> DriverResult<i32> {
        self.run("cuOccupancyMaxActiveClusters", |s| {
            let function = in_context(s, function.0)?;
            let threads = launch.block.iter().map(|&d| d as u64).product();
            let n = super::occupancy::active_clusters(s, function, threads, launch.shared as u64, cluster)?;
            Ok(n.min(i32::MAX as u64) as i32)
        })
    }

    /// `cuOccupancyMaxPotentialClusterSize`: the most blocks a cluster of `function` may have.
    pub fn occupancy_max_potential_cluster_size(&self, function: Function) -> DriverResult<i32> {
        self.run("cuOccupancyMaxPotentialClusterSize", |s| {
            let function = in_context(s, function.0)?;
            Ok(super::occupancy::potential_cluster_size(s, function)? as i32)
        })
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
        self.library_load_logged(image).0
    }

    /// [`SimDriver::library_load`] with the JIT's logs: as NVIDIA's driver compiles a library's
    /// PTX at once, writing its log, and still succeeds (the code is a later call's), it is
    /// compiled here for the current context's device, when there is one.
    pub fn library_load_logged(&self, image: Result<Vec<u8>, CudaCode>) -> (DriverResult<u64>, JitLog) {
        let mut log = JitLog::default();
        let loaded = self.run("cuLibraryLoadData", |s| {
            let image = image.map(Arc::from);
            let handle = s.mint();
            let rec = LibraryRec {
                image,
                read: Vec::new(),
                modules: Vec::new(),
                kernels: Vec::new(),
                settings: Vec::new(),
                managed: Vec::new(),
            };
            s.libraries.insert(handle, rec);
            if let Ok(device) = s.current_device() {
                let _ = modules::library_compiled(s, handle, device, &mut log);
            }
            Ok(handle)
        });
        (loaded, log)
    }

    /// `cuLibraryUnload`: its modules in every context go, and its kernels' handles. A second
    /// unload is `CUDA_ERROR_INVALID_HANDLE` (NVIDIA's driver crashed the process).
    pub fn library_unload(&self, lib: u64) -> DriverResult<()> {
        self.run("cuLibraryUnload", |s| {
            let Some(rec) = s.libraries.remove(&lib) else { return fail(CudaCode::CUDA_ERROR_INVALID_HANDLE) };
            for (_, module) in rec.modules {
                s.drop_module(module);
            }
            for (_, base) in rec.managed {
                s.memory.remove(base);
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
            // Answered for the current context's device: none is `CUDA_ERROR_INVALID_CONTEXT`,
            // as an H100 answered.
            let device = s.current_device()?;
            let contents = library_read(s, k.library, device)?;
            let param = contents.kernel(k.name.as_bytes()).and_then(|d| d.params.get(index).copied());
            param.map(|p| (p.offset, p.size)).ok_or_else(|| CudaCode::CUDA_ERROR_INVALID_VALUE.into())
        })
    }

    /// `cuLibraryGetManaged`: the library's `__managed__` variable `name`, its address and size,
    /// one for all contexts (the library is loaded into the current context for it). A library
    /// without it answers `CUDA_ERROR_NOT_FOUND` (as an H200 answered for a library without
    /// any); an image that does not read answers what reading it found.
    pub fn library_get_managed(&self, lib: u64, name: &[u8]) -> DriverResult<(DevicePtr, usize)> {
        self.run("cuLibraryGetManaged", |s| {
            if s.current_context().is_none() {
                let device = any_device(s);
                library_read(s, lib, device)?;
                return fail(CudaCode::CUDA_ERROR_NOT_FOUND);
            }
            let module = library_module(s, lib)?;
            let Some(m) = s.modules.get(&module) else { return fail(CudaCode::CUDA_ERROR_NOT_FOUND) };
            let found = m.contents.globals.iter().zip(&m.globals).find(|(g, _)| g.managed && g.name.as_bytes() == name);
            match found {
                Some((g, &base)) => Ok((DevicePtr(base), usize::try_from(g.size).unwrap_or(usize::MAX))),
                None => fail(CudaCode::CUDA_ERROR_NOT_FOUND),
            }
        })
    }

    /// `cuKernelSetAttribute` on device `device`: for the kernel's functions in that device's
    /// contexts, made or still to be made (an H200's function read back what its kernel was
    /// set to).
    pub fn kernel_set_attribute(&self, kernel: u64, which: i32, value: i32, device: i32) -> DriverResult<()> {
        self.run("cuKernelSetAttribute", |s| {
            let (k, device, _, described) = library_kernel(s, kernel, device)?;
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
            let (k, device, contents, described) = library_kernel(s, kernel, device)?;
            let cc = s.topo.devices[device].compute_capability;
            let set = s
                .libraries
                .get(&k.library)
                .and_then(|r| r.settings.iter().find(|(n, d, _)| *n == k.name && *d == device));
            attribute(&contents, &described, &set.map_or_else(FunctionSettings::default, |&(_, _, s)| s), cc, which)
        })
    }
}

/// Library kernel `kernel` on device `device`: its record, the device's index, its library's
/// contents there and its description in them (`CUDA_ERROR_INVALID_HANDLE` for a kernel its
/// library's image does not describe).
fn library_kernel(s: &mut State, kernel: u64, device: i32) -> SimResult<(KernelRec, usize, Arc<Contents>, Kernel)> {
    let Some(k) = s.library_kernels.get(&kernel).cloned() else { return fail(CudaCode::CUDA_ERROR_INVALID_HANDLE) };
    let Some(device) = s.in_range(device) else { return fail(CudaCode::CUDA_ERROR_INVALID_DEVICE) };
    let contents = library_read(s, k.library, device)?;
    let Some(described) = contents.kernel(k.name.as_bytes()).cloned() else {
        return fail(CudaCode::CUDA_ERROR_INVALID_HANDLE);
    };
    Ok((k, device, contents, described))
}

/// The function `handle` names: itself, or for a library's kernel (which launches and queries
/// take in a function's place) its function in the current context.
fn in_context(s: &mut State, handle: u64) -> SimResult<u64> {
    match s.library_kernels.get(&handle).cloned() {
        Some(k) => {
            let module = library_module(s, k.library)?;
            modules::function(s, module, k.name.as_bytes())
        }
        None => Ok(handle),
    }
}
