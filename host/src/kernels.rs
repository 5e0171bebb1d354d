//! peerpool's kernels: the kernels crate re-exported (the PTX and cubin, the kernel table, the
//! shared pattern), the block size of every launch ([`BLOCK`]), and [`Kernels`], which loads
//! them into one device's primary context on first use (`cuModuleLoadData`: the sm_90 cubin on
//! compute capability 9.0, else the PTX, which the driver JIT-compiles) and launches them on
//! [`DeviceSlice`]s, whose bounds are checked: the plain launchers run to completion on the null
//! stream, the `*_on` ones are queued on a [`DeviceStream`] and not waited for.

use crate::context::CurrentContext;
pub use crate::device_state::KernelImage;
use crate::device_state::LoadedModule;
use crate::driver::codes::CudaCode;
use crate::driver::{Cubin, DeviceAttribute, Driver, Function, KernelArg, LaunchShape, Module, ModuleImage, Stream};
use crate::error::{Error, Result};
use crate::memory::DeviceSlice;
use crate::stream::DeviceStream;
use crate::system::System;
/// The kernels crate: the PTX and cubin, the kernel table ([`Kernel`]), the shared pattern.
pub use peerpool_kernels::*;
use std::ffi::{CStr, CString};
use std::sync::OnceLock;

/// Threads per block for every launch.
pub const BLOCK: u32 = 256;
/// Blocks per multiprocessor when a buffer is large enough to fill the GPU.
const BLOCKS_PER_SM: u32 = 8;

/// How a read kernel loads: the coherent global path or the non-coherent read-only one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadPath {
    /// `ld.global`.
    Coherent,
    /// `ld.global.nc`.
    NonCoherent,
}

/// What [`Kernels::compare_pattern`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PatternComparison {
    /// Words that differ from the pattern.
    pub mismatches: u64,
    /// The first differing word's index.
    pub first_mismatch: Option<u64>,
}

impl PatternComparison {
    /// No word differs.
    pub fn is_clean(&self) -> bool {
        self.mismatches == 0
    }
}

/// The NUL-terminated PTX image for `cuModuleLoadData`.
pub fn ptx_image() -> &'static CStr {
    static IMAGE: OnceLock<CString> = OnceLock::new();
    IMAGE.get_or_init(|| CString::new(peerpool_kernels::PTX).expect("PTX text has no NUL byte"))
}

/// Launches peerpool's kernels on one device. While it lives, that device's primary context is
/// current on this thread; [`Kernels::finish`] (or dropping it) restores the caller's context.
///
/// The plain launchers go on the context's null stream and are synchronised, so a kernel that
/// touches memory it may not access reports `CUDA_ERROR_ILLEGAL_ADDRESS` from the very call
/// that launched it. That error is sticky: the process's CUDA context is lost for good.
pub struct Kernels<'s> {
    driver: &'s dyn Driver,
    device: usize,
    loaded: LoadedModule,
    /// The device's result buffer's lock (see `DeviceSlot::scratch`).
    scratch: &'s std::sync::Mutex<()>,
    _current: CurrentContext<'s>,
}

impl System {
    /// peerpool's kernels on `device`, loading the module on first use.
    ///
    /// Side effects: the device's primary context is retained and made current while the
    /// returned value lives; the first call per device loads the kernels (the sm_90 cubin on
    /// compute capability 9.0, under a millisecond; elsewhere the PTX, whose JIT takes tens of
    /// milliseconds unless the driver's cache holds it) and allocates a 16-byte result buffer
    /// with `cuMemAlloc`.
    pub fn kernels(&self, device: usize) -> Result<Kernels<'_>> {
        let current = self.enter(device)?;
        let driver = self.driver().as_ref();
        let mut slot = self.inner.devices[device].module.lock().unwrap_or_else(|e| e.into_inner());
        let loaded = match *slot {
            Some(loaded) => loaded,
            None => {
                let loaded = load(driver, device as i32)?;
                *slot = Some(loaded);
                loaded
            }
        };
        let scratch = &self.inner.devices[device].scratch;
        Ok(Kernels { driver, device, loaded, scratch, _current: current })
    }

    /// Runs `f` on `device`'s kernels; a failure to restore the caller's context afterwards is
    /// the result when `f` succeeded.
    pub fn with_kernels<T>(&self, device: usize, f: impl FnOnce(&Kernels<'_>) -> Result<T>) -> Result<T> {
        let kernels = self.kernels(device)?;
        let result = f(&kernels);
        let restored = kernels.finish();
        let value = result?;
        restored?;
        Ok(value)
    }
}

/// The cubin, where one was compiled for this device's compute capability.
pub(crate) fn cubin_for(driver: &dyn Driver, device: i32) -> Result<Option<ModuleImage<'static>>> {
    let Some(elf) = peerpool_kernels::SM90_CUBIN else { return Ok(None) };
    let major = driver.device_get_attribute(device, DeviceAttribute::ComputeCapabilityMajor)?;
    let minor = driver.device_get_attribute(device, DeviceAttribute::ComputeCapabilityMinor)?;
    if (major, minor) != (9, 0) {
        return Ok(None);
    }
    let cubin = Cubin::new(elf).map_err(|e| Error::InvalidArgument(format!("the embedded sm_90 cubin: {e}")))?;
    Ok(Some(ModuleImage::Cubin(cubin)))
}

/// Loads the cubin where it fits, else (or when the driver refuses it as an image) the PTX.
fn load_module(driver: &dyn Driver, device: i32) -> Result<(Module, KernelImage)> {
    if let Some(cubin) = cubin_for(driver, device)? {
        match driver.module_load_data(cubin) {
            Ok(module) => return Ok((module, KernelImage::Sm90Cubin)),
            // An older driver may not read a newer ptxas's output: the PTX still works.
            Err(e) if IMAGE_REFUSED.contains(&e.code) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok((driver.module_load_data(ModuleImage::Ptx(ptx_image()))?, KernelImage::Ptx))
}

/// Codes with which `cuModuleLoadData` refuses an image it cannot use.
const IMAGE_REFUSED: [CudaCode; 4] = [
    CudaCode::CUDA_ERROR_INVALID_IMAGE,
    CudaCode::CUDA_ERROR_NO_BINARY_FOR_GPU,
    CudaCode::CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
    CudaCode::CUDA_ERROR_INVALID_SOURCE,
];

/// Loads the module and looks up every entry; on failure nothing stays loaded or allocated.
fn load(driver: &dyn Driver, device: i32) -> Result<LoadedModule> {
    let (module, image) = load_module(driver, device)?;
    let finish = || -> Result<LoadedModule> {
        let function = |name: &str| -> Result<Function> {
            let name = CString::new(name).expect("entry names have no NUL byte");
            // SAFETY: `module` was just loaded and is unloaded only on failure, below.
            Ok(unsafe { driver.module_get_function(module, &name) }?)
        };
        let sms = driver.device_get_attribute(device, DeviceAttribute::MultiprocessorCount)?;
        let mut functions = [Function(0); Kernel::ALL.len()];
        for kernel in Kernel::ALL {
            functions[kernel.index()] = function(kernel.entry())?;
        }
        let scratch = driver.mem_alloc(16)?;
        // Saturating, and within CUDA's grid limit: the count is the driver's (or a topology's) word.
        let max_grid = (sms.max(1) as u32).saturating_mul(BLOCKS_PER_SM).min(i32::MAX as u32);
        Ok(LoadedModule { module, functions, scratch, max_grid, image })
    };
    finish().inspect_err(|_| {
        // SAFETY: the module loaded above, unloaded once; no function of it is kept.
        let _ = unsafe { driver.module_unload(module) };
    })
}

/// Why a slice cannot be given to a 16-byte vector kernel.
fn check_vectors(slices: &[DeviceSlice<'_>]) -> Result<()> {
    if slices.iter().any(|s| s.len() % 16 != 0 || s.ptr().0 % 16 != 0) {
        return Err(Error::InvalidArgument("16-byte kernels need 16-byte aligned addresses and lengths".into()));
    }
    Ok(())
}

impl Kernels<'_> {
    /// Which image of the kernels this device runs.
    pub fn image(&self) -> KernelImage {
        self.loaded.image
    }

    /// The device these kernels run on.
    pub fn device(&self) -> usize {
        self.device
    }

    /// Restores the caller's context and says whether that worked (dropping restores too,
    /// silently).
    pub fn finish(self) -> Result<()> {
        self._current.exit()
    }

    /// A grid just large enough for `items` (one item per thread), capped at a full GPU.
    pub fn shape_for(&self, items: u64) -> LaunchShape {
        let blocks = items.div_ceil(BLOCK as u64).clamp(1, self.loaded.max_grid as u64);
        LaunchShape { grid: blocks as u32, block: BLOCK }
    }

    /// The stream a launch goes on: the null stream, or `stream` if it is this device's.
    fn stream(&self, stream: Option<&DeviceStream<'_>>) -> Result<Stream> {
        match stream {
            None => Ok(Stream::LEGACY),
            Some(s) if s.device() == self.device => Ok(s.handle()),
            Some(s) => Err(Error::InvalidArgument(format!(
                "a stream of gpu{} given to gpu{}'s kernels",
                s.device(),
                self.device
            ))),
        }
    }

    /// Launches `kernel` on this device with arguments its launcher built, checked first against
    /// the kernel's parameters in the table (`peerpool_kernels::Kernel::params`).
    fn launch(&self, kernel: Kernel, shape: LaunchShape, stream: Stream, args: &[KernelArg]) -> Result<()> {
        let fits = |(arg, param): (&KernelArg, &peerpool_kernels::Param)| {
            matches!(
                (arg, param.kind),
                (KernelArg::Ptr(_), ParamKind::Ptr)
                    | (KernelArg::U64(_), ParamKind::U64)
                    | (KernelArg::U32(_), ParamKind::U32)
            )
        };
        if args.len() != kernel.params().len() || !args.iter().zip(kernel.params()).all(fits) {
            return Err(Error::InvalidArgument(format!("{args:?} do not fit {}'s parameters", kernel.entry())));
        }
        let function = self.loaded.functions[kernel.index()];
        // SAFETY: `function` is `kernel` in this device's module, loaded while the system lives;
        // `stream` is the null stream or a live stream of this device (`Kernels::stream`); the
        // arguments fit the kernel's parameters (checked above), with addresses from slices
        // whose bounds cover what the kernel writes (each launcher's part).
        Ok(unsafe { self.driver.launch_kernel(function, shape, stream, args) }?)
    }

    fn synchronize(&self) -> Result<()> {
        // SAFETY: the null stream of the context this value keeps current.
        Ok(unsafe { self.driver.stream_synchronize(Stream::LEGACY) }?)
    }

    /// `pp_fill`: every 32-bit word `i` of `memory` gets `pattern(i, seed)`.
    pub fn fill(&self, memory: DeviceSlice<'_>, seed: u32) -> Result<()> {
        let words = memory.words();
        let args = [KernelArg::Ptr(memory.ptr()), KernelArg::U64(words), KernelArg::U32(seed)];
        self.launch(Kernel::Fill, self.shape_for(words), Stream::LEGACY, &args)?;
        self.synchronize()
    }

    /// `pp_check`: compares every 32-bit word `i` of `memory` with `pattern(i, seed)`.
    pub fn compare_pattern(&self, memory: DeviceSlice<'_>, seed: u32) -> Result<PatternComparison> {
        let (scratch, words) = (self.loaded.scratch, memory.words());
        let _only_this_thread = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: `scratch` is this device's 16-byte result buffer, live while the system is.
        unsafe {
            self.driver.memset_d32_async(scratch, 0, 2, Stream::LEGACY)?;
            self.driver.memset_d32_async(scratch.offset(8), u32::MAX, 2, Stream::LEGACY)?;
        }
        let args = [KernelArg::Ptr(memory.ptr()), KernelArg::U64(words), KernelArg::U32(seed), KernelArg::Ptr(scratch)];
        self.launch(Kernel::Check, self.shape_for(words), Stream::LEGACY, &args)?;
        self.synchronize()?;
        let mut out = [0u8; 16];
        // SAFETY: as above; 16 bytes.
        unsafe { self.driver.memcpy_dtoh(&mut out, scratch) }?;
        let mismatches = u64::from_le_bytes(out[..8].try_into().expect("8 bytes"));
        let first = u64::from_le_bytes(out[8..].try_into().expect("8 bytes"));
        Ok(PatternComparison { mismatches, first_mismatch: (mismatches > 0).then_some(first) })
    }

    /// `pp_copy16`: all of `src` to `dst` (equal lengths, multiples of 16) in 16-byte vectors.
    pub fn copy16(&self, dst: DeviceSlice<'_>, src: DeviceSlice<'_>) -> Result<()> {
        let shape = self.shape_for(src.len() / 16);
        self.queue_copy16(None, dst, src, shape)?;
        self.synchronize()
    }

    /// `pp_copy16` queued on `stream` with `shape`, not waited for (for timing with events).
    pub fn copy16_on(
        &self,
        stream: &DeviceStream<'_>,
        dst: DeviceSlice<'_>,
        src: DeviceSlice<'_>,
        shape: LaunchShape,
    ) -> Result<()> {
        self.queue_copy16(Some(stream), dst, src, shape)
    }

    fn queue_copy16(
        &self,
        stream: Option<&DeviceStream<'_>>,
        dst: DeviceSlice<'_>,
        src: DeviceSlice<'_>,
        shape: LaunchShape,
    ) -> Result<()> {
        check_vectors(&[dst, src])?;
        if dst.len() != src.len() {
            return Err(Error::InvalidArgument(format!("copy16 of {} bytes into {}", src.len(), dst.len())));
        }
        let args = [KernelArg::Ptr(dst.ptr()), KernelArg::Ptr(src.ptr()), KernelArg::U64(src.len() / 16)];
        self.launch(Kernel::Copy16, shape, self.stream(stream)?, &args)
    }

    /// `pp_atomic_add_sys`: `shape`'s threads each add 1 to counter `thread % slots` of
    /// `counters` (its whole 32-bit words), `reps` times, with system-scope atomics. Each counter
    /// gains `threads / slots * reps` (give a thread count divisible by the slots for equal counts).
    pub fn atomic_add_sys(&self, counters: DeviceSlice<'_>, reps: u32, shape: LaunchShape) -> Result<()> {
        self.queue_atomic_add_sys(None, counters, reps, shape)?;
        self.synchronize()
    }

    /// `pp_atomic_add_sys` queued on `stream`, not waited for (see [`Kernels::atomic_add_sys`]).
    pub fn atomic_add_sys_on(
        &self,
        stream: &DeviceStream<'_>,
        counters: DeviceSlice<'_>,
        reps: u32,
        shape: LaunchShape,
    ) -> Result<()> {
        self.queue_atomic_add_sys(Some(stream), counters, reps, shape)
    }

    fn queue_atomic_add_sys(
        &self,
        stream: Option<&DeviceStream<'_>>,
        counters: DeviceSlice<'_>,
        reps: u32,
        shape: LaunchShape,
    ) -> Result<()> {
        if counters.words() == 0 || !counters.ptr().0.is_multiple_of(4) {
            return Err(Error::InvalidArgument("atomic_add_sys needs at least one aligned counter".into()));
        }
        let args = [KernelArg::Ptr(counters.ptr()), KernelArg::U64(counters.words()), KernelArg::U32(reps)];
        self.launch(Kernel::AtomicAddSys, shape, self.stream(stream)?, &args)
    }

    /// `pp_read16` (or `pp_read16_nc`, through `ld.global.nc`) queued on `stream`: reads all of
    /// `src` and writes nothing (unless a thread's fold equals a fixed value: `sink` must hold a
    /// word per thread of `shape`).
    pub fn read16_on(
        &self,
        path: LoadPath,
        stream: &DeviceStream<'_>,
        src: DeviceSlice<'_>,
        sink: DeviceSlice<'_>,
        shape: LaunchShape,
    ) -> Result<()> {
        let kernel = match path {
            LoadPath::Coherent => Kernel::Read16,
            LoadPath::NonCoherent => Kernel::Read16Nc,
        };
        check_vectors(&[src])?;
        let threads = shape.grid as u64 * shape.block as u64;
        if sink.words() < threads {
            return Err(Error::InvalidArgument(format!("a sink of {} words for {threads} threads", sink.words())));
        }
        let args = [
            KernelArg::Ptr(src.ptr()),
            KernelArg::U64(src.len() / 16),
            KernelArg::Ptr(sink.ptr()),
            KernelArg::U32(0x5EED_F00D),
        ];
        self.launch(kernel, shape, self.stream(Some(stream))?, &args)
    }

    /// `pp_chase` queued on `stream`: one thread hops `steps` times through the index array
    /// `next` from index 0 and stores the last index in the first word of `out`. The hops
    /// follow the array's contents: an index past its end reads other memory (or faults) but
    /// the kernel writes only `out`.
    pub fn chase_on(
        &self,
        stream: &DeviceStream<'_>,
        next: DeviceSlice<'_>,
        steps: u64,
        out: DeviceSlice<'_>,
    ) -> Result<()> {
        if next.words() == 0 || out.words() == 0 {
            return Err(Error::InvalidArgument("pp_chase needs an index array and a result word".into()));
        }
        let args = [KernelArg::Ptr(next.ptr()), KernelArg::U64(steps), KernelArg::Ptr(out.ptr())];
        self.launch(Kernel::Chase, LaunchShape { grid: 1, block: 1 }, self.stream(Some(stream))?, &args)
    }
}
