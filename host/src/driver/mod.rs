//! The seam between peerpool and CUDA: [`Driver`] holds every driver call the library makes.
//!
//! Three implementations sit behind it: [`CudaDriver`] (libcuda, loaded at run time), the
//! simulator and the fault injector. The engine above never names libcuda, so any code path
//! can run on a simulated topology or with a failure injected at any call.
//!
//! Conventions: every method is one driver call and is named after it; handles are plain
//! integers ([`Handle`] newtypes), so simulated drivers can mint them; device ordinals are the
//! driver's `int`, so out-of-range values reach the driver as they would from C.

mod cuda;
mod types;

pub use cuda::CudaDriver;
pub use types::*;

use crate::error::CudaError;
use std::ffi::CStr;

/// Where the IMEX channel device nodes live; fabric handles need one.
pub const IMEX_CHANNELS: &str = "/dev/nvidia-caps-imex-channels";

/// What one driver call returns.
pub type DriverResult<T> = Result<T, CudaError>;

/// Every CUDA driver call peerpool makes. One method per call, named after it.
///
/// Implementations must be callable from any thread. The current context is per thread, as
/// in CUDA: [`Driver::ctx_get_current`] and [`Driver::ctx_set_current`] act on the calling
/// thread, and calls that need a context use the calling thread's.
pub trait Driver: Send + Sync {
    /// What this driver is, for reports: `"CUDA 13.0"`, `"simulated: 2 x H200 (NVLink)"`.
    fn describe(&self) -> String;

    /// `cuDriverGetVersion`: e.g. 13000 for CUDA 13.0.
    fn driver_get_version(&self) -> DriverResult<i32>;
    /// `cuDeviceGetCount`.
    fn device_get_count(&self) -> DriverResult<i32>;
    /// `cuDeviceGetName`.
    fn device_get_name(&self, device: i32) -> DriverResult<String>;
    /// `cuDeviceGetAttribute`.
    fn device_get_attribute(&self, device: i32, attribute: DeviceAttribute) -> DriverResult<i32>;
    /// `cuDeviceTotalMem`: bytes.
    fn device_total_mem(&self, device: i32) -> DriverResult<u64>;
    /// `cuDeviceCanAccessPeer`: whether `device` can map `peer`'s memory.
    fn device_can_access_peer(&self, device: i32, peer: i32) -> DriverResult<bool>;
    /// `cuDeviceGetP2PAttribute` for the ordered pair `src -> dst`.
    fn device_get_p2p_attribute(&self, attribute: P2pAttribute, src: i32, dst: i32) -> DriverResult<i32>;

    /// `cuDevicePrimaryCtxRetain`.
    fn primary_ctx_retain(&self, device: i32) -> DriverResult<Context>;
    /// `cuDevicePrimaryCtxRelease`.
    fn primary_ctx_release(&self, device: i32) -> DriverResult<()>;
    /// `cuCtxGetCurrent`: the calling thread's current context, if any.
    fn ctx_get_current(&self) -> DriverResult<Option<Context>>;
    /// `cuCtxSetCurrent` on the calling thread (`None` unbinds).
    fn ctx_set_current(&self, context: Option<Context>) -> DriverResult<()>;
    /// `cuCtxGetDevice`: the device of the calling thread's current context.
    fn ctx_get_device(&self) -> DriverResult<i32>;
    /// `cuCtxSynchronize` on the current context.
    fn ctx_synchronize(&self) -> DriverResult<()>;

    /// `cuDeviceGetDefaultMemPool`.
    fn device_get_default_mem_pool(&self, device: i32) -> DriverResult<Pool>;
    /// `cuDeviceGetMemPool`: the device's current pool (the default unless one was set).
    fn device_get_mem_pool(&self, device: i32) -> DriverResult<Pool>;
    /// `cuDeviceSetMemPool`.
    fn device_set_mem_pool(&self, device: i32, pool: Pool) -> DriverResult<()>;
    /// `cuMemPoolCreate`: a pinned device pool on `props.device`.
    fn mem_pool_create(&self, props: &PoolProps) -> DriverResult<Pool>;
    /// `cuMemPoolDestroy`.
    fn mem_pool_destroy(&self, pool: Pool) -> DriverResult<()>;
    /// `cuMemPoolSetAccess`: all descriptors in one call (the driver applies all or none).
    fn mem_pool_set_access(&self, pool: Pool, map: &[AccessDesc]) -> DriverResult<()>;
    /// `cuMemPoolGetAccess` for a device location.
    fn mem_pool_get_access(&self, pool: Pool, device: i32) -> DriverResult<Access>;

    /// `cuMemAlloc`: an allocation outside any pool (legacy-IPC capable).
    fn mem_alloc(&self, bytes: usize) -> DriverResult<DevicePtr>;
    /// `cuMemFree`.
    fn mem_free(&self, ptr: DevicePtr) -> DriverResult<()>;
    /// `cuMemAllocFromPoolAsync` on `stream` of the current context.
    fn mem_alloc_from_pool_async(&self, bytes: usize, pool: Pool, stream: Stream) -> DriverResult<DevicePtr>;
    /// `cuMemFreeAsync`.
    fn mem_free_async(&self, ptr: DevicePtr, stream: Stream) -> DriverResult<()>;

    /// `cuStreamCreate` (non-blocking) in the current context.
    fn stream_create(&self) -> DriverResult<Stream>;
    /// `cuStreamDestroy`.
    fn stream_destroy(&self, stream: Stream) -> DriverResult<()>;
    /// `cuStreamSynchronize`; [`Stream::LEGACY`] is the current context's null stream.
    fn stream_synchronize(&self, stream: Stream) -> DriverResult<()>;

    /// `cuMemcpyHtoD` (synchronous).
    fn memcpy_htod(&self, dst: DevicePtr, src: &[u8]) -> DriverResult<()>;
    /// `cuMemcpyDtoH` (synchronous).
    fn memcpy_dtoh(&self, dst: &mut [u8], src: DevicePtr) -> DriverResult<()>;
    /// `cuMemcpyDtoDAsync` in the current context: the copy engine, on unified addresses.
    fn memcpy_dtod_async(&self, dst: DevicePtr, src: DevicePtr, bytes: usize, stream: Stream) -> DriverResult<()>;
    /// `cuMemcpyPeerAsync`: contexts named explicitly (may stage through the host).
    fn memcpy_peer_async(&self, copy: PeerCopy, stream: Stream) -> DriverResult<()>;
    /// `cuMemsetD32Async`: `words` 32-bit words set to `value`.
    fn memset_d32_async(&self, dst: DevicePtr, value: u32, words: usize, stream: Stream) -> DriverResult<()>;

    /// `cuModuleLoadData` into the current context.
    fn module_load_data(&self, image: ModuleImage<'_>) -> DriverResult<Module>;
    /// `cuModuleUnload`.
    fn module_unload(&self, module: Module) -> DriverResult<()>;
    /// `cuModuleGetFunction`.
    fn module_get_function(&self, module: Module, name: &CStr) -> DriverResult<Function>;
    /// `cuLaunchKernel`: one-dimensional grid and block, no dynamic shared memory.
    fn launch_kernel(
        &self,
        function: Function,
        shape: LaunchShape,
        stream: Stream,
        args: &[KernelArg],
    ) -> DriverResult<()>;

    /// `cuEventCreate` (default flags: timing enabled) in the current context.
    fn event_create(&self) -> DriverResult<Event>;
    /// `cuEventRecord` on `stream`.
    fn event_record(&self, event: Event, stream: Stream) -> DriverResult<()>;
    /// `cuEventSynchronize`.
    fn event_synchronize(&self, event: Event) -> DriverResult<()>;
    /// `cuEventElapsedTime`: milliseconds from `start` to `end`.
    fn event_elapsed_time(&self, start: Event, end: Event) -> DriverResult<f32>;
    /// `cuEventDestroy`.
    fn event_destroy(&self, event: Event) -> DriverResult<()>;

    /// `cuPointerGetAttribute`, widened to `u64` (booleans are 0 or 1; handles are addresses).
    fn pointer_get_attribute(&self, ptr: DevicePtr, attribute: PointerAttribute) -> DriverResult<u64>;

    // ---- inter-process sharing (see `crate::ipc`) ----

    /// `cuMemPoolExportToShareableHandle`: a handle to the whole pool, for another process.
    fn mem_pool_export_to_shareable_handle(&self, pool: Pool, handle: ShareHandle) -> DriverResult<ShareableHandle>;
    /// `cuMemPoolImportFromShareableHandle`: the exporter's pool in this process. Peer access
    /// does not travel with it: peers start with none.
    fn mem_pool_import_from_shareable_handle(&self, handle: ShareableRef<'_>) -> DriverResult<Pool>;
    /// `cuMemPoolExportPointer`: 64 bytes naming one allocation of an exportable pool.
    fn mem_pool_export_pointer(&self, ptr: DevicePtr) -> DriverResult<PoolPtrExportData>;
    /// `cuMemPoolImportPointer`: the exported allocation's address in an imported pool.
    fn mem_pool_import_pointer(&self, pool: Pool, data: &PoolPtrExportData) -> DriverResult<DevicePtr>;
    /// `cuIpcGetMemHandle`: legacy IPC, for `cuMemAlloc` memory only (pool memory is refused).
    fn ipc_get_mem_handle(&self, ptr: DevicePtr) -> DriverResult<IpcMemHandle>;
    /// `cuIpcOpenMemHandle` (`CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS`) in the current context.
    fn ipc_open_mem_handle(&self, handle: &IpcMemHandle) -> DriverResult<DevicePtr>;
    /// `cuIpcCloseMemHandle`.
    fn ipc_close_mem_handle(&self, ptr: DevicePtr) -> DriverResult<()>;

    // ---- virtual memory ----

    /// `cuMemGetAllocationGranularity`: bytes that sizes, offsets and alignments are multiples of.
    fn mem_get_allocation_granularity(&self, props: &AllocationProps, option: Granularity) -> DriverResult<usize>;
    /// `cuMemCreate`: physical memory, not yet mapped anywhere.
    fn mem_create(&self, bytes: usize, props: &AllocationProps) -> DriverResult<MemHandle>;
    /// `cuMemAddressReserve` (no fixed address, no flags).
    fn mem_address_reserve(&self, bytes: usize, alignment: usize) -> DriverResult<DevicePtr>;
    /// `cuMemMap` (the driver requires `offset == 0`). No device may touch it until
    /// [`Driver::mem_set_access`].
    fn mem_map(&self, ptr: DevicePtr, bytes: usize, offset: usize, handle: MemHandle) -> DriverResult<()>;
    /// `cuMemSetAccess` on a mapped range: all descriptors in one call.
    fn mem_set_access(&self, ptr: DevicePtr, bytes: usize, map: &[AccessDesc]) -> DriverResult<()>;
    /// `cuMemUnmap`.
    fn mem_unmap(&self, ptr: DevicePtr, bytes: usize) -> DriverResult<()>;
    /// `cuMemAddressFree`.
    fn mem_address_free(&self, ptr: DevicePtr, bytes: usize) -> DriverResult<()>;
    /// `cuMemRelease`: the memory goes once it is released and unmapped everywhere.
    fn mem_release(&self, handle: MemHandle) -> DriverResult<()>;
    /// `cuMemExportToShareableHandle`.
    fn mem_export_to_shareable_handle(&self, handle: MemHandle, kind: ShareHandle) -> DriverResult<ShareableHandle>;
    /// `cuMemImportFromShareableHandle`.
    fn mem_import_from_shareable_handle(&self, handle: ShareableRef<'_>) -> DriverResult<MemHandle>;
    /// `cuMemRetainAllocationHandle`: the allocation mapped at `ptr`, retained once more.
    fn mem_retain_allocation_handle(&self, ptr: DevicePtr) -> DriverResult<MemHandle>;
}
