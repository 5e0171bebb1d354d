//! The real driver: libcuda through cudarc's `driver::sys`.
//!
//! cudarc either loads libcuda at run time (`dynamic-loading`, peerpool's way), resolving each
//! symbol on first use and panicking when the library or a symbol is missing, or has it linked
//! by a downstream crate that asks for `dynamic-linking`. peerpool cannot tell which, so it opens
//! the library itself, by the names cudarc tries first and the loader's own: [`CudaDriver::load`]
//! checks the library and every symbol before any call can reach cudarc, and a machine without a
//! driver gets [`Error::NoDriver`], never a panic.

mod convert;

use super::virtual_clock::VirtualClock;
use super::*;
use crate::error::Error;
use convert::*;
use cudarc::driver::sys;
use std::ffi::{CStr, c_void};
use std::mem::MaybeUninit;
use std::sync::OnceLock;

/// `cuEventElapsedTime`'s signature, shared by the original and `_v2`.
type ElapsedTime = unsafe extern "C" fn(*mut f32, sys::CUevent, sys::CUevent) -> sys::CUresult;

/// libcuda, loaded and initialised.
#[derive(Debug)]
pub struct CudaDriver {
    /// `cuInit` said `CUDA_ERROR_NO_DEVICE`: the driver is there, no GPU is.
    no_device: bool,
    /// `cuEventElapsedTime_v2` where the driver has it (12.8 and later), else the original:
    /// cudarc's CUDA 13 bindings name only `_v2`, which would shut out older drivers.
    elapsed_time: ElapsedTime,
    /// The virtual clock of a library that simulates GPUs (none on NVIDIA's driver).
    clock: Option<VirtualClock>,
}

/// libcuda, opened once per process and kept open (the symbols taken from it stay valid): the
/// name cudarc tries first, then the SONAME NVIDIA's driver installs. A process that links
/// libcuda (cudarc's `dynamic-linking`) gets the library it already has.
fn library() -> Option<&'static libloading::Library> {
    static LIB: OnceLock<Option<libloading::Library>> = OnceLock::new();
    // SAFETY: opening libcuda runs its initialisers, which expect nothing of the caller.
    LIB.get_or_init(|| {
        ["libcuda.so", "libcuda.so.1"].into_iter().find_map(|name| unsafe { libloading::Library::new(name) }.ok())
    })
    .as_ref()
}

/// Whether the libcuda this process loads exports `symbol`: the library is opened, as
/// [`CudaDriver::load`] opens it, but not initialised, so asking costs NVIDIA's driver nothing
/// but the load.
pub fn libcuda_exports(symbol: &str) -> bool {
    // SAFETY: the symbol is looked up, never called.
    library().is_some_and(|lib| unsafe { lib.get::<unsafe extern "C" fn()>(symbol.as_bytes()) }.is_ok())
}

impl CudaDriver {
    /// Loads libcuda and calls `cuInit(0)`.
    ///
    /// # Errors
    /// [`Error::NoDriver`] when libcuda is missing or lacks a symbol peerpool uses;
    /// [`Error::Cuda`] when `cuInit` fails for a reason other than "no device".
    pub fn load() -> Result<CudaDriver, Error> {
        let Some(lib) = library() else {
            return Err(Error::NoDriver {
                reason: "libcuda.so could not be loaded (no NVIDIA driver installed?)".into(),
            });
        };
        // Every symbol of the seam's table but the elapsed time, which has a fallback below.
        let needed = Call::ALL.iter().filter(|&&c| c != Call::cuEventElapsedTime).map(|c| c.symbol());
        for name in needed {
            // SAFETY: the symbol is only looked up, never called through this pointer.
            if unsafe { lib.get::<unsafe extern "C" fn()>(name.as_bytes()) }.is_err() {
                return Err(Error::NoDriver {
                    reason: format!("libcuda lacks {name}: the driver is older than peerpool needs"),
                });
            }
        }
        // SAFETY: both names have `ElapsedTime`'s signature; the library stays loaded for the
        // process (`library` keeps it in a static), so the pointer stays valid.
        let elapsed_time = unsafe {
            let found = lib.get::<ElapsedTime>(b"cuEventElapsedTime_v2").or_else(|_| lib.get(b"cuEventElapsedTime"));
            match found {
                Ok(symbol) => *symbol,
                Err(_) => {
                    let reason = "libcuda lacks cuEventElapsedTime: the driver is older than peerpool needs";
                    return Err(Error::NoDriver { reason: reason.into() });
                }
            }
        };
        // SAFETY: plain driver call; every symbol was found above.
        let no_device = match unsafe { sys::cuInit(0) } {
            sys::CUresult::CUDA_SUCCESS => false,
            sys::CUresult::CUDA_ERROR_NO_DEVICE => true,
            code => return Err(CudaError::new(Call::cuInit.name(), CudaCode::from_bindings(code)).into()),
        };
        Ok(CudaDriver { no_device, elapsed_time, clock: VirtualClock::find(lib) })
    }
}

// SAFETY (for every `unsafe` block below): each is one libcuda call whose symbol `load`
// verified, with out-pointers to live locals and slices whose lengths are passed alongside.
impl Driver for CudaDriver {
    /// `CUDA driver 13.0`; under a library that simulates GPUs, what it says it is before
    /// that (`simulated by ...: CUDA driver 13.0`: what `simulated` GPUs are to reports and to
    /// the GPUs-required mode).
    fn describe(&self) -> String {
        let version = match self.driver_get_version() {
            Ok(v) => format!("CUDA driver {}.{}", v / 1000, (v % 1000) / 10),
            Err(e) => format!("CUDA driver (version unknown: {e})"),
        };
        match &self.clock {
            Some(clock) => format!("{}: {version}", clock.describe()),
            None => version,
        }
    }

    /// The virtual time of a library that simulates GPUs; none on NVIDIA's driver.
    fn timeline(&self) -> Option<&dyn Timeline> {
        self.clock.as_ref().map(|t| t as &dyn Timeline)
    }

    fn init(&self, flags: u32) -> DriverResult<()> {
        check(Call::cuInit, unsafe { sys::cuInit(flags) })
    }

    fn driver_get_version(&self) -> DriverResult<i32> {
        let mut version = 0;
        check(Call::cuDriverGetVersion, unsafe { sys::cuDriverGetVersion(&mut version) })?;
        Ok(version)
    }

    fn device_get_count(&self) -> DriverResult<i32> {
        if self.no_device {
            return Ok(0);
        }
        let mut count = 0;
        check(Call::cuDeviceGetCount, unsafe { sys::cuDeviceGetCount(&mut count) })?;
        Ok(count)
    }

    fn device_get(&self, ordinal: i32) -> DriverResult<i32> {
        cu_device(ordinal)
    }

    fn device_get_name(&self, device: i32) -> DriverResult<String> {
        let dev = cu_device(device)?;
        let mut name = [0 as std::ffi::c_char; 256];
        check(Call::cuDeviceGetName, unsafe { sys::cuDeviceGetName(name.as_mut_ptr(), name.len() as i32, dev) })?;
        let bytes: Vec<u8> = name.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    fn device_get_attribute(&self, device: i32, attribute: DeviceAttribute) -> DriverResult<i32> {
        let dev = cu_device(device)?;
        let mut value = 0;
        check(Call::cuDeviceGetAttribute, unsafe { sys::cuDeviceGetAttribute(&mut value, attribute.to_sys(), dev) })?;
        Ok(value)
    }

    fn device_total_mem(&self, device: i32) -> DriverResult<u64> {
        let dev = cu_device(device)?;
        let mut bytes = 0usize;
        check(Call::cuDeviceTotalMem, unsafe { sys::cuDeviceTotalMem_v2(&mut bytes, dev) })?;
        Ok(bytes as u64)
    }

    fn device_can_access_peer(&self, device: i32, peer: i32) -> DriverResult<bool> {
        let (dev, peer) = (cu_device(device)?, cu_device(peer)?);
        let mut can = 0;
        check(Call::cuDeviceCanAccessPeer, unsafe { sys::cuDeviceCanAccessPeer(&mut can, dev, peer) })?;
        Ok(can != 0)
    }

    fn device_get_p2p_attribute(&self, attribute: P2pAttribute, src: i32, dst: i32) -> DriverResult<i32> {
        let (src, dst) = (cu_device(src)?, cu_device(dst)?);
        let mut value = 0;
        check(Call::cuDeviceGetP2PAttribute, unsafe {
            sys::cuDeviceGetP2PAttribute(&mut value, attribute.to_sys(), src, dst)
        })?;
        Ok(value)
    }

    fn device_get_uuid(&self, device: i32) -> DriverResult<[u8; 16]> {
        let dev = cu_device(device)?;
        let mut uuid = sys::CUuuid { bytes: [0; 16] };
        check(Call::cuDeviceGetUuid, unsafe { sys::cuDeviceGetUuid_v2(&mut uuid, dev) })?;
        Ok(uuid.bytes.map(|b| b as u8))
    }

    fn mem_get_info(&self) -> DriverResult<(u64, u64)> {
        let (mut free, mut total) = (0usize, 0usize);
        check(Call::cuMemGetInfo, unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) })?;
        Ok((free as u64, total as u64))
    }

    fn primary_ctx_get_state(&self, device: i32) -> DriverResult<(u32, bool)> {
        let dev = cu_device(device)?;
        let (mut flags, mut active) = (0u32, 0i32);
        check(Call::cuDevicePrimaryCtxGetState, unsafe {
            sys::cuDevicePrimaryCtxGetState(dev, &mut flags, &mut active)
        })?;
        Ok((flags, active != 0))
    }

    fn primary_ctx_set_flags(&self, device: i32, flags: u32) -> DriverResult<()> {
        let dev = cu_device(device)?;
        check(Call::cuDevicePrimaryCtxSetFlags, unsafe { sys::cuDevicePrimaryCtxSetFlags_v2(dev, flags) })
    }

    unsafe fn primary_ctx_reset(&self, device: i32) -> DriverResult<()> {
        let dev = cu_device(device)?;
        check(Call::cuDevicePrimaryCtxReset, unsafe { sys::cuDevicePrimaryCtxReset_v2(dev) })
    }

    fn ctx_create(&self, device: i32, flags: u32) -> DriverResult<Context> {
        let dev = cu_device(device)?;
        let mut c = std::ptr::null_mut();
        check(Call::cuCtxCreate, unsafe { sys::cuCtxCreate_v4(&mut c, std::ptr::null_mut(), flags, dev) })?;
        Ok(Context(raw(c)))
    }

    unsafe fn ctx_destroy(&self, c: Context) -> DriverResult<()> {
        check(Call::cuCtxDestroy, unsafe { sys::cuCtxDestroy_v2(ctx(c)) })
    }

    unsafe fn ctx_push_current(&self, c: Context) -> DriverResult<()> {
        check(Call::cuCtxPushCurrent, unsafe { sys::cuCtxPushCurrent_v2(ctx(c)) })
    }

    fn ctx_pop_current(&self) -> DriverResult<Option<Context>> {
        let mut c = std::ptr::null_mut();
        check(Call::cuCtxPopCurrent, unsafe { sys::cuCtxPopCurrent_v2(&mut c) })?;
        Ok((!c.is_null()).then(|| Context(raw(c))))
    }

    unsafe fn ctx_enable_peer_access(&self, peer: Context, flags: u32) -> DriverResult<()> {
        check(Call::cuCtxEnablePeerAccess, unsafe { sys::cuCtxEnablePeerAccess(ctx(peer), flags) })
    }

    unsafe fn ctx_disable_peer_access(&self, peer: Context) -> DriverResult<()> {
        check(Call::cuCtxDisablePeerAccess, unsafe { sys::cuCtxDisablePeerAccess(ctx(peer)) })
    }

    fn primary_ctx_retain(&self, device: i32) -> DriverResult<Context> {
        let dev = cu_device(device)?;
        let mut c = std::ptr::null_mut();
        check(Call::cuDevicePrimaryCtxRetain, unsafe { sys::cuDevicePrimaryCtxRetain(&mut c, dev) })?;
        Ok(Context(raw(c)))
    }

    unsafe fn primary_ctx_release(&self, device: i32) -> DriverResult<()> {
        let dev = cu_device(device)?;
        check(Call::cuDevicePrimaryCtxRelease, unsafe { sys::cuDevicePrimaryCtxRelease_v2(dev) })
    }

    fn ctx_get_current(&self) -> DriverResult<Option<Context>> {
        let mut c = std::ptr::null_mut();
        check(Call::cuCtxGetCurrent, unsafe { sys::cuCtxGetCurrent(&mut c) })?;
        Ok((!c.is_null()).then(|| Context(raw(c))))
    }

    unsafe fn ctx_set_current(&self, context: Option<Context>) -> DriverResult<()> {
        let c = context.map_or(std::ptr::null_mut(), ctx);
        check(Call::cuCtxSetCurrent, unsafe { sys::cuCtxSetCurrent(c) })
    }

    fn ctx_get_device(&self) -> DriverResult<i32> {
        let mut dev = 0;
        check(Call::cuCtxGetDevice, unsafe { sys::cuCtxGetDevice(&mut dev) })?;
        Ok(dev)
    }

    fn ctx_synchronize(&self) -> DriverResult<()> {
        check(Call::cuCtxSynchronize, unsafe { sys::cuCtxSynchronize() })
    }

    fn device_get_default_mem_pool(&self, device: i32) -> DriverResult<Pool> {
        let dev = cu_device(device)?;
        let mut p = std::ptr::null_mut();
        check(Call::cuDeviceGetDefaultMemPool, unsafe { sys::cuDeviceGetDefaultMemPool(&mut p, dev) })?;
        Ok(Pool(raw(p)))
    }

    fn device_get_mem_pool(&self, device: i32) -> DriverResult<Pool> {
        let dev = cu_device(device)?;
        let mut p = std::ptr::null_mut();
        check(Call::cuDeviceGetMemPool, unsafe { sys::cuDeviceGetMemPool(&mut p, dev) })?;
        Ok(Pool(raw(p)))
    }

    unsafe fn device_set_mem_pool(&self, device: i32, p: Pool) -> DriverResult<()> {
        let dev = cu_device(device)?;
        check(Call::cuDeviceSetMemPool, unsafe { sys::cuDeviceSetMemPool(dev, pool(p)) })
    }

    fn mem_pool_create(&self, props: &PoolProps) -> DriverResult<Pool> {
        let mut raw_props = MaybeUninit::<sys::CUmemPoolProps>::zeroed();
        let p = raw_props.as_mut_ptr();
        // SAFETY: fields written in place. `handleTypes` is a bit set that need not be one
        // enum variant (POSIX fd | fabric = 0x9), so it is written as the u32 it is in C and
        // never read back as the Rust enum.
        unsafe {
            (&raw mut (*p).allocType).write(sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED);
            (&raw mut (*p).handleTypes).cast::<u32>().write(props.handle_types.0);
            (&raw mut (*p).location).write(location(props.device));
            (&raw mut (*p).maxSize).write(props.max_size);
        }
        let mut out = std::ptr::null_mut();
        check(Call::cuMemPoolCreate, unsafe { sys::cuMemPoolCreate(&mut out, p) })?;
        Ok(Pool(raw(out)))
    }

    unsafe fn mem_pool_destroy(&self, p: Pool) -> DriverResult<()> {
        check(Call::cuMemPoolDestroy, unsafe { sys::cuMemPoolDestroy(pool(p)) })
    }

    unsafe fn mem_pool_set_access(&self, p: Pool, map: &[AccessDesc]) -> DriverResult<()> {
        let descs = access_descs(map);
        check(Call::cuMemPoolSetAccess, unsafe { sys::cuMemPoolSetAccess(pool(p), descs.as_ptr(), descs.len()) })
    }

    unsafe fn mem_pool_get_access(&self, p: Pool, device: i32) -> DriverResult<Access> {
        let mut flags = sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_NONE;
        let mut loc = location(device);
        check(Call::cuMemPoolGetAccess, unsafe { sys::cuMemPoolGetAccess(&mut flags, pool(p), &mut loc) })?;
        Ok(match flags {
            sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE => Access::ReadWrite,
            sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READ => Access::Read,
            _ => Access::None,
        })
    }

    unsafe fn mem_pool_set_attribute(&self, p: Pool, attribute: PoolAttribute, value: u64) -> DriverResult<()> {
        // The driver reads an `int` for the reuse flags and a `cuuint64_t` for the sizes.
        let (mut int, mut wide) = (value as i32, value);
        let at: *mut c_void = if attribute.width() == 4 { (&raw mut int).cast() } else { (&raw mut wide).cast() };
        check(Call::cuMemPoolSetAttribute, unsafe { sys::cuMemPoolSetAttribute(pool(p), attribute.to_sys(), at) })
    }

    unsafe fn mem_pool_get_attribute(&self, p: Pool, attribute: PoolAttribute) -> DriverResult<u64> {
        // A zeroed u64 read back little-endian widens the `int` flags too.
        let mut value = 0u64;
        check(Call::cuMemPoolGetAttribute, unsafe {
            sys::cuMemPoolGetAttribute(pool(p), attribute.to_sys(), (&raw mut value).cast())
        })?;
        Ok(value)
    }

    unsafe fn mem_pool_trim_to(&self, p: Pool, keep: usize) -> DriverResult<()> {
        check(Call::cuMemPoolTrimTo, unsafe { sys::cuMemPoolTrimTo(pool(p), keep) })
    }

    fn mem_alloc(&self, bytes: usize) -> DriverResult<DevicePtr> {
        let mut ptr = 0;
        check(Call::cuMemAlloc, unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes) })?;
        Ok(DevicePtr(ptr))
    }

    unsafe fn mem_free(&self, ptr: DevicePtr) -> DriverResult<()> {
        check(Call::cuMemFree, unsafe { sys::cuMemFree_v2(ptr.0) })
    }

    unsafe fn mem_alloc_from_pool_async(&self, bytes: usize, p: Pool, s: Stream) -> DriverResult<DevicePtr> {
        let mut ptr = 0;
        check(Call::cuMemAllocFromPoolAsync, unsafe {
            sys::cuMemAllocFromPoolAsync(&mut ptr, bytes, pool(p), stream(s))
        })?;
        Ok(DevicePtr(ptr))
    }

    unsafe fn mem_free_async(&self, ptr: DevicePtr, s: Stream) -> DriverResult<()> {
        check(Call::cuMemFreeAsync, unsafe { sys::cuMemFreeAsync(ptr.0, stream(s)) })
    }

    unsafe fn mem_alloc_async(&self, bytes: usize, s: Stream) -> DriverResult<DevicePtr> {
        let mut ptr = 0;
        check(Call::cuMemAllocAsync, unsafe { sys::cuMemAllocAsync(&mut ptr, bytes, stream(s)) })?;
        Ok(DevicePtr(ptr))
    }

    fn stream_create(&self) -> DriverResult<Stream> {
        let mut s = std::ptr::null_mut();
        let flags = sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
        check(Call::cuStreamCreate, unsafe { sys::cuStreamCreate(&mut s, flags) })?;
        Ok(Stream(raw(s)))
    }

    unsafe fn stream_destroy(&self, s: Stream) -> DriverResult<()> {
        check(Call::cuStreamDestroy, unsafe { sys::cuStreamDestroy_v2(stream(s)) })
    }

    unsafe fn stream_synchronize(&self, s: Stream) -> DriverResult<()> {
        check(Call::cuStreamSynchronize, unsafe { sys::cuStreamSynchronize(stream(s)) })
    }

    unsafe fn stream_query(&self, s: Stream) -> DriverResult<()> {
        check(Call::cuStreamQuery, unsafe { sys::cuStreamQuery(stream(s)) })
    }

    unsafe fn stream_wait_event(&self, s: Stream, e: Event, flags: u32) -> DriverResult<()> {
        check(Call::cuStreamWaitEvent, unsafe { sys::cuStreamWaitEvent(stream(s), event(e), flags) })
    }

    unsafe fn memcpy_htod(&self, dst: DevicePtr, src: &[u8]) -> DriverResult<()> {
        check(Call::cuMemcpyHtoD, unsafe { sys::cuMemcpyHtoD_v2(dst.0, src.as_ptr().cast(), src.len()) })
    }

    unsafe fn memcpy_dtoh(&self, dst: &mut [u8], src: DevicePtr) -> DriverResult<()> {
        check(Call::cuMemcpyDtoH, unsafe { sys::cuMemcpyDtoH_v2(dst.as_mut_ptr().cast(), src.0, dst.len()) })
    }

    unsafe fn memcpy_dtod(&self, dst: DevicePtr, src: DevicePtr, bytes: usize) -> DriverResult<()> {
        check(Call::cuMemcpyDtoD, unsafe { sys::cuMemcpyDtoD_v2(dst.0, src.0, bytes) })
    }

    unsafe fn memcpy_htod_async(&self, dst: DevicePtr, src: &[u8], s: Stream) -> DriverResult<()> {
        check(Call::cuMemcpyHtoDAsync, unsafe {
            sys::cuMemcpyHtoDAsync_v2(dst.0, src.as_ptr().cast(), src.len(), stream(s))
        })
    }

    unsafe fn memcpy_dtoh_async(&self, dst: &mut [u8], src: DevicePtr, s: Stream) -> DriverResult<()> {
        check(Call::cuMemcpyDtoHAsync, unsafe {
            sys::cuMemcpyDtoHAsync_v2(dst.as_mut_ptr().cast(), src.0, dst.len(), stream(s))
        })
    }

    unsafe fn memcpy_dtod_async(&self, dst: DevicePtr, src: DevicePtr, bytes: usize, s: Stream) -> DriverResult<()> {
        check(Call::cuMemcpyDtoDAsync, unsafe { sys::cuMemcpyDtoDAsync_v2(dst.0, src.0, bytes, stream(s)) })
    }

    unsafe fn memcpy_peer_async(&self, c: PeerCopy, s: Stream) -> DriverResult<()> {
        check(Call::cuMemcpyPeerAsync, unsafe {
            sys::cuMemcpyPeerAsync(c.dst.0, ctx(c.dst_ctx), c.src.0, ctx(c.src_ctx), c.bytes, stream(s))
        })
    }

    unsafe fn memcpy_peer(&self, c: PeerCopy) -> DriverResult<()> {
        check(Call::cuMemcpyPeer, unsafe {
            sys::cuMemcpyPeer(c.dst.0, ctx(c.dst_ctx), c.src.0, ctx(c.src_ctx), c.bytes)
        })
    }

    unsafe fn memset_d8_async(&self, dst: DevicePtr, value: u8, bytes: usize, s: Stream) -> DriverResult<()> {
        check(Call::cuMemsetD8Async, unsafe { sys::cuMemsetD8Async(dst.0, value, bytes, stream(s)) })
    }

    unsafe fn memset_d32_async(&self, dst: DevicePtr, value: u32, words: usize, s: Stream) -> DriverResult<()> {
        check(Call::cuMemsetD32Async, unsafe { sys::cuMemsetD32Async(dst.0, value, words, stream(s)) })
    }

    fn module_load_data(&self, image: ModuleImage<'_>) -> DriverResult<Module> {
        // The PTX ends at its NUL and the cubin's headers were checked to lie inside its bytes,
        // so the driver reads only what the image holds.
        let data: *const c_void = match image {
            ModuleImage::Ptx(text) => text.as_ptr().cast(),
            ModuleImage::Cubin(cubin) => cubin.elf().as_ptr().cast(),
        };
        let mut m = std::ptr::null_mut();
        check(Call::cuModuleLoadData, unsafe { sys::cuModuleLoadData(&mut m, data) })?;
        Ok(Module(raw(m)))
    }

    unsafe fn module_unload(&self, m: Module) -> DriverResult<()> {
        check(Call::cuModuleUnload, unsafe { sys::cuModuleUnload(m.0 as usize as sys::CUmodule) })
    }

    unsafe fn module_get_function(&self, m: Module, name: &CStr) -> DriverResult<Function> {
        let mut f = std::ptr::null_mut();
        check(Call::cuModuleGetFunction, unsafe {
            sys::cuModuleGetFunction(&mut f, m.0 as usize as sys::CUmodule, name.as_ptr())
        })?;
        Ok(Function(raw(f)))
    }

    unsafe fn launch_kernel(&self, f: Function, shape: LaunchShape, s: Stream, args: &[KernelArg]) -> DriverResult<()> {
        // Promise 3 of the seam, checked: the driver reads as many parameters as the kernel
        // declares, each of its own size, whatever was passed.
        let refused = |code| CudaError::new(Call::cuLaunchKernel.name(), code);
        for (index, arg) in args.iter().enumerate() {
            // SAFETY: the caller promises `f` is a live function of this driver.
            let (_, size) = unsafe { self.func_get_param_info(f, index) }.map_err(|e| refused(e.code))?;
            if size != arg.size() {
                return Err(refused(CudaCode::CUDA_ERROR_INVALID_VALUE));
            }
        }
        // SAFETY: as above.
        if unsafe { self.func_get_param_info(f, args.len()) }.is_ok() {
            return Err(refused(CudaCode::CUDA_ERROR_INVALID_VALUE));
        }
        // The driver reads each parameter through a pointer to a value of the parameter's
        // own size, so 32- and 64-bit values live in separate, correctly sized slots.
        let mut wide: Vec<u64> = Vec::with_capacity(args.len());
        let mut narrow: Vec<u32> = Vec::with_capacity(args.len());
        for arg in args {
            match *arg {
                KernelArg::Ptr(p) => wide.push(p.0),
                KernelArg::U64(v) => wide.push(v),
                KernelArg::U32(v) => narrow.push(v),
            }
        }
        let (mut w, mut n) = (0, 0);
        let mut params: Vec<*mut c_void> = Vec::with_capacity(args.len());
        for arg in args {
            match arg {
                KernelArg::U32(_) => {
                    params.push((&raw mut narrow[n]).cast());
                    n += 1;
                }
                _ => {
                    params.push((&raw mut wide[w]).cast());
                    w += 1;
                }
            }
        }
        check(Call::cuLaunchKernel, unsafe {
            sys::cuLaunchKernel(
                f.0 as usize as sys::CUfunction,
                shape.grid,
                1,
                1,
                shape.block,
                1,
                1,
                0,
                stream(s),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        })
    }

    unsafe fn func_get_param_info(&self, f: Function, index: usize) -> DriverResult<(usize, usize)> {
        let (mut offset, mut size) = (0usize, 0usize);
        check(Call::cuFuncGetParamInfo, unsafe {
            sys::cuFuncGetParamInfo(f.0 as usize as sys::CUfunction, index, &mut offset, &mut size)
        })?;
        Ok((offset, size))
    }

    fn event_create(&self, flags: u32) -> DriverResult<Event> {
        let mut e = std::ptr::null_mut();
        // SAFETY: `e` is a valid out-pointer; the driver checks the flags.
        check(Call::cuEventCreate, unsafe { sys::cuEventCreate(&mut e, flags) })?;
        Ok(Event(raw(e)))
    }

    unsafe fn event_record(&self, e: Event, s: Stream) -> DriverResult<()> {
        check(Call::cuEventRecord, unsafe { sys::cuEventRecord(event(e), stream(s)) })
    }

    unsafe fn event_synchronize(&self, e: Event) -> DriverResult<()> {
        check(Call::cuEventSynchronize, unsafe { sys::cuEventSynchronize(event(e)) })
    }

    unsafe fn event_query(&self, e: Event) -> DriverResult<()> {
        check(Call::cuEventQuery, unsafe { sys::cuEventQuery(event(e)) })
    }

    unsafe fn event_elapsed_time(&self, start: Event, end: Event) -> DriverResult<f32> {
        let mut ms = 0f32;
        // SAFETY: writes one float; the events are the caller's.
        check(Call::cuEventElapsedTime, unsafe { (self.elapsed_time)(&mut ms, event(start), event(end)) })?;
        Ok(ms)
    }

    unsafe fn event_destroy(&self, e: Event) -> DriverResult<()> {
        check(Call::cuEventDestroy, unsafe { sys::cuEventDestroy_v2(event(e)) })
    }

    fn pointer_get_attribute(&self, ptr: DevicePtr, attribute: PointerAttribute) -> DriverResult<u64> {
        // Attributes are 1 to 8 bytes; a zeroed u64 read back little-endian widens them all.
        let mut value = 0u64;
        check(Call::cuPointerGetAttribute, unsafe {
            sys::cuPointerGetAttribute((&raw mut value).cast(), attribute.to_sys(), ptr.0)
        })?;
        Ok(value)
    }

    unsafe fn mem_pool_export_to_shareable_handle(&self, p: Pool, kind: HandleKind) -> DriverResult<ExportedHandle> {
        fabric_needs_imex(Call::cuMemPoolExportToShareableHandle, kind)?;
        let mut out = HandleOut::new();
        check(Call::cuMemPoolExportToShareableHandle, unsafe {
            sys::cuMemPoolExportToShareableHandle(out.ptr(kind), pool(p), handle_type(kind), 0)
        })?;
        out.take(Call::cuMemPoolExportToShareableHandle, kind)
    }

    unsafe fn mem_pool_import_from_shareable_handle(&self, handle: ExportedHandleRef<'_>) -> DriverResult<Pool> {
        let mut fabric = sys::CUmemFabricHandle { data: [0; 64] };
        let os = os_handle(handle, &mut fabric);
        let mut p = std::ptr::null_mut();
        check(Call::cuMemPoolImportFromShareableHandle, unsafe {
            sys::cuMemPoolImportFromShareableHandle(&mut p, os, handle_type(handle.kind()), 0)
        })?;
        Ok(Pool(raw(p)))
    }

    unsafe fn mem_pool_export_pointer(&self, ptr: DevicePtr) -> DriverResult<PoolPtrExportData> {
        let mut data = sys::CUmemPoolPtrExportData { reserved: [0; 64] };
        check(Call::cuMemPoolExportPointer, unsafe { sys::cuMemPoolExportPointer(&mut data, ptr.0) })?;
        Ok(PoolPtrExportData(data.reserved))
    }

    unsafe fn mem_pool_import_pointer(&self, p: Pool, data: &PoolPtrExportData) -> DriverResult<DevicePtr> {
        let mut data = sys::CUmemPoolPtrExportData { reserved: data.0 };
        let mut ptr = 0;
        check(Call::cuMemPoolImportPointer, unsafe { sys::cuMemPoolImportPointer(&mut ptr, pool(p), &mut data) })?;
        Ok(DevicePtr(ptr))
    }

    unsafe fn ipc_get_mem_handle(&self, ptr: DevicePtr) -> DriverResult<IpcMemHandle> {
        let mut handle = sys::CUipcMemHandle { reserved: [0; 64] };
        check(Call::cuIpcGetMemHandle, unsafe { sys::cuIpcGetMemHandle(&mut handle, ptr.0) })?;
        Ok(IpcMemHandle(handle.reserved.map(|c| c as u8)))
    }

    unsafe fn ipc_open_mem_handle(&self, handle: &IpcMemHandle) -> DriverResult<DevicePtr> {
        let handle = sys::CUipcMemHandle { reserved: handle.0.map(|b| b as std::ffi::c_char) };
        let flags = sys::CUipcMem_flags::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS as u32;
        let mut ptr = 0;
        check(Call::cuIpcOpenMemHandle, unsafe { sys::cuIpcOpenMemHandle_v2(&mut ptr, handle, flags) })?;
        Ok(DevicePtr(ptr))
    }

    unsafe fn ipc_close_mem_handle(&self, ptr: DevicePtr) -> DriverResult<()> {
        check(Call::cuIpcCloseMemHandle, unsafe { sys::cuIpcCloseMemHandle(ptr.0) })
    }

    fn mem_get_allocation_granularity(&self, props: &AllocationProps, option: Granularity) -> DriverResult<usize> {
        let prop = allocation_prop(props);
        let option = match option {
            Granularity::Minimum => sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_MINIMUM,
            Granularity::Recommended => sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_RECOMMENDED,
        };
        let mut bytes = 0usize;
        check(Call::cuMemGetAllocationGranularity, unsafe {
            sys::cuMemGetAllocationGranularity(&mut bytes, prop.as_ptr(), option)
        })?;
        Ok(bytes)
    }

    fn mem_create(&self, bytes: usize, props: &AllocationProps) -> DriverResult<MemHandle> {
        let prop = allocation_prop(props);
        let mut handle = 0;
        check(Call::cuMemCreate, unsafe { sys::cuMemCreate(&mut handle, bytes, prop.as_ptr(), 0) })?;
        Ok(MemHandle(handle))
    }

    fn mem_address_reserve(&self, bytes: usize, alignment: usize) -> DriverResult<DevicePtr> {
        let mut ptr = 0;
        check(Call::cuMemAddressReserve, unsafe { sys::cuMemAddressReserve(&mut ptr, bytes, alignment, 0, 0) })?;
        Ok(DevicePtr(ptr))
    }

    unsafe fn mem_map(&self, ptr: DevicePtr, bytes: usize, offset: usize, handle: MemHandle) -> DriverResult<()> {
        check(Call::cuMemMap, unsafe { sys::cuMemMap(ptr.0, bytes, offset, handle.0, 0) })
    }

    unsafe fn mem_set_access(&self, ptr: DevicePtr, bytes: usize, map: &[AccessDesc]) -> DriverResult<()> {
        let descs = access_descs(map);
        check(Call::cuMemSetAccess, unsafe { sys::cuMemSetAccess(ptr.0, bytes, descs.as_ptr(), descs.len()) })
    }

    unsafe fn mem_unmap(&self, ptr: DevicePtr, bytes: usize) -> DriverResult<()> {
        check(Call::cuMemUnmap, unsafe { sys::cuMemUnmap(ptr.0, bytes) })
    }

    unsafe fn mem_address_free(&self, ptr: DevicePtr, bytes: usize) -> DriverResult<()> {
        check(Call::cuMemAddressFree, unsafe { sys::cuMemAddressFree(ptr.0, bytes) })
    }

    unsafe fn mem_release(&self, handle: MemHandle) -> DriverResult<()> {
        check(Call::cuMemRelease, unsafe { sys::cuMemRelease(handle.0) })
    }

    unsafe fn mem_export_to_shareable_handle(
        &self,
        handle: MemHandle,
        kind: HandleKind,
    ) -> DriverResult<ExportedHandle> {
        fabric_needs_imex(Call::cuMemExportToShareableHandle, kind)?;
        let mut out = HandleOut::new();
        check(Call::cuMemExportToShareableHandle, unsafe {
            sys::cuMemExportToShareableHandle(out.ptr(kind), handle.0, handle_type(kind), 0)
        })?;
        out.take(Call::cuMemExportToShareableHandle, kind)
    }

    unsafe fn mem_import_from_shareable_handle(&self, handle: ExportedHandleRef<'_>) -> DriverResult<MemHandle> {
        let mut fabric = sys::CUmemFabricHandle { data: [0; 64] };
        let os = os_handle(handle, &mut fabric);
        let mut out = 0;
        check(Call::cuMemImportFromShareableHandle, unsafe {
            sys::cuMemImportFromShareableHandle(&mut out, os, handle_type(handle.kind()))
        })?;
        Ok(MemHandle(out))
    }

    unsafe fn mem_retain_allocation_handle(&self, ptr: DevicePtr) -> DriverResult<MemHandle> {
        let mut out = 0;
        check(Call::cuMemRetainAllocationHandle, unsafe {
            sys::cuMemRetainAllocationHandle(&mut out, ptr.0 as usize as *mut c_void)
        })?;
        Ok(MemHandle(out))
    }
}
