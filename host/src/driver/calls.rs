//! The one list of CUDA driver calls behind the seam.
//!
//! [`for_each_driver_call!`](crate::for_each_driver_call) hands every entry of the table to a
//! macro of the caller's choosing. From it come the [`Driver`](super::Driver) trait, the
//! [`Call`] names, the symbols [`CudaDriver`](super::CudaDriver) checks before its first call,
//! the [`FaultInjector`](crate::fault::FaultInjector)'s delegation, and what crates above build
//! from it (a simulator's methods, a libcuda's exports); a call added here is added to all of
//! them, and the compiler asks for its implementation in each driver.
//!
//! Each entry reads
//! `$(#[doc])* safe|unsafe fn method(arg: Type, ..) -> Output = cuName @ cuSymbol;`:
//! the trait method (its result is `DriverResult<Output>`), the call's name as CUDA documents it
//! and errors report it, and the symbol a client resolves (the versioned one where CUDA
//! versioned the call: `cuMemAlloc` is `cuMemAlloc_v2`). Types are named as `peerpool::driver`
//! exports them: a callback outside this crate needs `use peerpool::driver::*`.

/// Calls `$then!` with `($($context)*)` followed by every driver call of the table.
///
/// The callback's matcher for one entry:
/// `$(#[$doc:meta])* $safety:ident fn $method:ident($($arg:ident: $ty:ty),*) -> $out:ty = $call:ident @ $symbol:ident;`
#[doc(hidden)]
#[macro_export]
macro_rules! for_each_driver_call {
    ($then:ident $(, $($context:tt)*)?) => {
        $then! { ($($($context)*)?)
            // ---- initialisation, version, devices ----

            /// `cuInit`: starts the driver; every other call but the version needs it first.
            safe fn init(flags: u32) -> () = cuInit @ cuInit;
            /// `cuDriverGetVersion`: e.g. 13000 for CUDA 13.0.
            safe fn driver_get_version() -> i32 = cuDriverGetVersion @ cuDriverGetVersion;
            /// `cuDeviceGetCount`.
            safe fn device_get_count() -> i32 = cuDeviceGetCount @ cuDeviceGetCount;
            /// `cuDeviceGet`: the device handle of an ordinal (the ordinal itself; checked).
            safe fn device_get(ordinal: i32) -> i32 = cuDeviceGet @ cuDeviceGet;
            /// `cuDeviceGetName`.
            safe fn device_get_name(device: i32) -> String = cuDeviceGetName @ cuDeviceGetName;
            /// `cuDeviceGetAttribute`.
            safe fn device_get_attribute(device: i32, attribute: DeviceAttribute) -> i32
                = cuDeviceGetAttribute @ cuDeviceGetAttribute;
            /// `cuDeviceTotalMem`: bytes.
            safe fn device_total_mem(device: i32) -> u64 = cuDeviceTotalMem @ cuDeviceTotalMem_v2;
            /// `cuDeviceCanAccessPeer`: whether `device` can map `peer`'s memory.
            safe fn device_can_access_peer(device: i32, peer: i32) -> bool
                = cuDeviceCanAccessPeer @ cuDeviceCanAccessPeer;
            /// `cuDeviceGetP2PAttribute` for the ordered pair `src -> dst`.
            safe fn device_get_p2p_attribute(attribute: P2pAttribute, src: i32, dst: i32) -> i32
                = cuDeviceGetP2PAttribute @ cuDeviceGetP2PAttribute;
            /// `cuDeviceGetUuid`: 16 bytes naming the device.
            safe fn device_get_uuid(device: i32) -> [u8; 16] = cuDeviceGetUuid @ cuDeviceGetUuid_v2;
            /// `cuMemGetInfo`: `(free, total)` bytes of the current context's device.
            safe fn mem_get_info() -> (u64, u64) = cuMemGetInfo @ cuMemGetInfo_v2;

            // ---- contexts ----

            /// `cuDevicePrimaryCtxRetain`.
            safe fn primary_ctx_retain(device: i32) -> Context = cuDevicePrimaryCtxRetain @ cuDevicePrimaryCtxRetain;
            /// `cuDevicePrimaryCtxRelease`.
            unsafe fn primary_ctx_release(device: i32) -> () = cuDevicePrimaryCtxRelease @ cuDevicePrimaryCtxRelease_v2;
            /// `cuCtxGetCurrent`: the calling thread's current context, if any.
            safe fn ctx_get_current() -> Option<Context> = cuCtxGetCurrent @ cuCtxGetCurrent;
            /// `cuCtxSetCurrent` on the calling thread (`None` unbinds).
            unsafe fn ctx_set_current(context: Option<Context>) -> () = cuCtxSetCurrent @ cuCtxSetCurrent;
            /// `cuCtxGetDevice`: the device of the calling thread's current context.
            safe fn ctx_get_device() -> i32 = cuCtxGetDevice @ cuCtxGetDevice;
            /// `cuCtxSynchronize` on the current context.
            safe fn ctx_synchronize() -> () = cuCtxSynchronize @ cuCtxSynchronize;
            /// `cuDevicePrimaryCtxGetState`: the primary context's flags and whether it is active.
            safe fn primary_ctx_get_state(device: i32) -> (u32, bool) = cuDevicePrimaryCtxGetState @ cuDevicePrimaryCtxGetState;
            /// `cuDevicePrimaryCtxSetFlags`.
            safe fn primary_ctx_set_flags(device: i32, flags: u32) -> () = cuDevicePrimaryCtxSetFlags @ cuDevicePrimaryCtxSetFlags_v2;
            /// `cuDevicePrimaryCtxReset`: destroys everything made in the primary context.
            unsafe fn primary_ctx_reset(device: i32) -> () = cuDevicePrimaryCtxReset @ cuDevicePrimaryCtxReset_v2;
            /// `cuCtxCreate` (no creation parameters): a new ordinary context, made current.
            safe fn ctx_create(device: i32, flags: u32) -> Context = cuCtxCreate @ cuCtxCreate_v4;
            /// `cuCtxDestroy`: an ordinary context and what was made in it.
            unsafe fn ctx_destroy(context: Context) -> () = cuCtxDestroy @ cuCtxDestroy_v2;
            /// `cuCtxPushCurrent`: `context` on top of the calling thread's context stack.
            unsafe fn ctx_push_current(context: Context) -> () = cuCtxPushCurrent @ cuCtxPushCurrent_v2;
            /// `cuCtxPopCurrent`: takes the top of the calling thread's context stack off.
            safe fn ctx_pop_current() -> Option<Context> = cuCtxPopCurrent @ cuCtxPopCurrent_v2;
            /// `cuCtxEnablePeerAccess` from the current context to `peer` (legacy peer access:
            /// `cuMemAlloc` memory only; pools keep their own access tables).
            unsafe fn ctx_enable_peer_access(peer: Context, flags: u32) -> () = cuCtxEnablePeerAccess @ cuCtxEnablePeerAccess;
            /// `cuCtxDisablePeerAccess`.
            unsafe fn ctx_disable_peer_access(peer: Context) -> () = cuCtxDisablePeerAccess @ cuCtxDisablePeerAccess;

            // ---- pools ----

            /// `cuDeviceGetDefaultMemPool`.
            safe fn device_get_default_mem_pool(device: i32) -> Pool = cuDeviceGetDefaultMemPool @ cuDeviceGetDefaultMemPool;
            /// `cuDeviceGetMemPool`: the device's current pool (the default unless one was set).
            safe fn device_get_mem_pool(device: i32) -> Pool = cuDeviceGetMemPool @ cuDeviceGetMemPool;
            /// `cuDeviceSetMemPool`.
            unsafe fn device_set_mem_pool(device: i32, pool: Pool) -> () = cuDeviceSetMemPool @ cuDeviceSetMemPool;
            /// `cuMemPoolCreate`: a pinned device pool on `props.device`.
            safe fn mem_pool_create(props: &PoolProps) -> Pool = cuMemPoolCreate @ cuMemPoolCreate;
            /// `cuMemPoolDestroy`.
            unsafe fn mem_pool_destroy(pool: Pool) -> () = cuMemPoolDestroy @ cuMemPoolDestroy;
            /// `cuMemPoolSetAccess`: all descriptors in one call (the driver applies all or none).
            unsafe fn mem_pool_set_access(pool: Pool, map: &[AccessDesc]) -> () = cuMemPoolSetAccess @ cuMemPoolSetAccess;
            /// `cuMemPoolGetAccess` for a device location.
            unsafe fn mem_pool_get_access(pool: Pool, device: i32) -> Access = cuMemPoolGetAccess @ cuMemPoolGetAccess;
            /// `cuMemPoolSetAttribute` (the value widened to `u64`; flags are 0 or 1).
            unsafe fn mem_pool_set_attribute(pool: Pool, attribute: PoolAttribute, value: u64) -> ()
                = cuMemPoolSetAttribute @ cuMemPoolSetAttribute;
            /// `cuMemPoolGetAttribute`, widened to `u64`.
            unsafe fn mem_pool_get_attribute(pool: Pool, attribute: PoolAttribute) -> u64
                = cuMemPoolGetAttribute @ cuMemPoolGetAttribute;
            /// `cuMemPoolTrimTo`: gives back unused memory above `keep` bytes.
            unsafe fn mem_pool_trim_to(pool: Pool, keep: usize) -> () = cuMemPoolTrimTo @ cuMemPoolTrimTo;

            // ---- allocation ----

            /// `cuMemAlloc`: an allocation outside any pool (legacy-IPC capable).
            safe fn mem_alloc(bytes: usize) -> DevicePtr = cuMemAlloc @ cuMemAlloc_v2;
            /// `cuMemFree`.
            unsafe fn mem_free(ptr: DevicePtr) -> () = cuMemFree @ cuMemFree_v2;
            /// `cuMemAllocFromPoolAsync` on `stream` of the current context.
            unsafe fn mem_alloc_from_pool_async(bytes: usize, pool: Pool, stream: Stream) -> DevicePtr
                = cuMemAllocFromPoolAsync @ cuMemAllocFromPoolAsync;
            /// `cuMemFreeAsync`.
            unsafe fn mem_free_async(ptr: DevicePtr, stream: Stream) -> () = cuMemFreeAsync @ cuMemFreeAsync;
            /// `cuMemAllocAsync`: from the current pool of the stream's device.
            unsafe fn mem_alloc_async(bytes: usize, stream: Stream) -> DevicePtr = cuMemAllocAsync @ cuMemAllocAsync;

            // ---- streams ----

            /// `cuStreamCreate` (non-blocking) in the current context.
            safe fn stream_create() -> Stream = cuStreamCreate @ cuStreamCreate;
            /// `cuStreamDestroy`.
            unsafe fn stream_destroy(stream: Stream) -> () = cuStreamDestroy @ cuStreamDestroy_v2;
            /// `cuStreamSynchronize`; [`Stream::LEGACY`] is the current context's null stream.
            unsafe fn stream_synchronize(stream: Stream) -> () = cuStreamSynchronize @ cuStreamSynchronize;
            /// `cuStreamQuery`: `Ok` when everything queued is done (else `CUDA_ERROR_NOT_READY`).
            unsafe fn stream_query(stream: Stream) -> () = cuStreamQuery @ cuStreamQuery;
            /// `cuStreamWaitEvent`: later work on `stream` waits for `event`.
            unsafe fn stream_wait_event(stream: Stream, event: Event, flags: u32) -> () = cuStreamWaitEvent @ cuStreamWaitEvent;

            // ---- copies and memsets ----

            /// `cuMemcpyHtoD` (synchronous).
            unsafe fn memcpy_htod(dst: DevicePtr, src: &[u8]) -> () = cuMemcpyHtoD @ cuMemcpyHtoD_v2;
            /// `cuMemcpyDtoH` (synchronous).
            unsafe fn memcpy_dtoh(dst: &mut [u8], src: DevicePtr) -> () = cuMemcpyDtoH @ cuMemcpyDtoH_v2;
            /// `cuMemcpyDtoD` (synchronous), on unified addresses.
            unsafe fn memcpy_dtod(dst: DevicePtr, src: DevicePtr, bytes: usize) -> () = cuMemcpyDtoD @ cuMemcpyDtoD_v2;
            /// `cuMemcpyHtoDAsync`: `src` must stay as it is until the copy is done.
            unsafe fn memcpy_htod_async(dst: DevicePtr, src: &[u8], stream: Stream) -> () = cuMemcpyHtoDAsync @ cuMemcpyHtoDAsync_v2;
            /// `cuMemcpyDtoHAsync`: `dst` must not be touched until the copy is done.
            unsafe fn memcpy_dtoh_async(dst: &mut [u8], src: DevicePtr, stream: Stream) -> () = cuMemcpyDtoHAsync @ cuMemcpyDtoHAsync_v2;
            /// `cuMemcpyDtoDAsync` in the current context: the copy engine, on unified addresses.
            unsafe fn memcpy_dtod_async(dst: DevicePtr, src: DevicePtr, bytes: usize, stream: Stream) -> ()
                = cuMemcpyDtoDAsync @ cuMemcpyDtoDAsync_v2;
            /// `cuMemcpyPeerAsync`: contexts named explicitly (may stage through the host).
            unsafe fn memcpy_peer_async(copy: PeerCopy, stream: Stream) -> () = cuMemcpyPeerAsync @ cuMemcpyPeerAsync;
            /// `cuMemcpyPeer` (synchronous).
            unsafe fn memcpy_peer(copy: PeerCopy) -> () = cuMemcpyPeer @ cuMemcpyPeer;
            /// `cuMemsetD8Async`: `bytes` bytes set to `value`.
            unsafe fn memset_d8_async(dst: DevicePtr, value: u8, bytes: usize, stream: Stream) -> () = cuMemsetD8Async @ cuMemsetD8Async;
            /// `cuMemsetD32Async`: `words` 32-bit words set to `value`.
            unsafe fn memset_d32_async(dst: DevicePtr, value: u32, words: usize, stream: Stream) -> ()
                = cuMemsetD32Async @ cuMemsetD32Async;

            // ---- modules and launches ----

            /// `cuModuleLoadData` into the current context.
            safe fn module_load_data(image: ModuleImage<'_>) -> Module = cuModuleLoadData @ cuModuleLoadData;
            /// `cuModuleUnload`.
            unsafe fn module_unload(module: Module) -> () = cuModuleUnload @ cuModuleUnload;
            /// `cuModuleGetFunction`.
            unsafe fn module_get_function(module: Module, name: &::std::ffi::CStr) -> Function = cuModuleGetFunction @ cuModuleGetFunction;
            /// `cuLaunchKernel`: one-dimensional grid and block, no dynamic shared memory.
            unsafe fn launch_kernel(function: Function, shape: LaunchShape, stream: Stream, args: &[KernelArg]) -> ()
                = cuLaunchKernel @ cuLaunchKernel;
            /// `cuFuncGetParamInfo`: the `(offset, size)` in bytes of a kernel's parameter
            /// `index`; `CUDA_ERROR_INVALID_VALUE` past the last one (CUDA 12.4 and later).
            unsafe fn func_get_param_info(function: Function, index: usize) -> (usize, usize)
                = cuFuncGetParamInfo @ cuFuncGetParamInfo;

            // ---- events ----

            /// `cuEventCreate` with `CU_EVENT_*` flags (0: timing enabled) in the current context.
            safe fn event_create(flags: u32) -> Event = cuEventCreate @ cuEventCreate;
            /// `cuEventRecord` on `stream`.
            unsafe fn event_record(event: Event, stream: Stream) -> () = cuEventRecord @ cuEventRecord;
            /// `cuEventSynchronize`.
            unsafe fn event_synchronize(event: Event) -> () = cuEventSynchronize @ cuEventSynchronize;
            /// `cuEventQuery`: `Ok` once the event has happened (else `CUDA_ERROR_NOT_READY`).
            unsafe fn event_query(event: Event) -> () = cuEventQuery @ cuEventQuery;
            /// `cuEventElapsedTime`: milliseconds from `start` to `end`. (The real driver takes
            /// `_v2` where the library has it and the original before 12.8.)
            unsafe fn event_elapsed_time(start: Event, end: Event) -> f32 = cuEventElapsedTime @ cuEventElapsedTime_v2;
            /// `cuEventDestroy`.
            unsafe fn event_destroy(event: Event) -> () = cuEventDestroy @ cuEventDestroy_v2;

            // ---- pointers ----

            /// `cuPointerGetAttribute`, widened to `u64` (booleans are 0 or 1; handles are addresses).
            safe fn pointer_get_attribute(ptr: DevicePtr, attribute: PointerAttribute) -> u64
                = cuPointerGetAttribute @ cuPointerGetAttribute;

            // ---- inter-process sharing (see `crate::ipc`) ----

            /// `cuMemPoolExportToShareableHandle`: a handle to the whole pool, for another process.
            unsafe fn mem_pool_export_to_shareable_handle(pool: Pool, handle: HandleKind) -> ExportedHandle
                = cuMemPoolExportToShareableHandle @ cuMemPoolExportToShareableHandle;
            /// `cuMemPoolImportFromShareableHandle`: the exporter's pool in this process. Peer access
            /// does not travel with it: peers start with none.
            unsafe fn mem_pool_import_from_shareable_handle(handle: ExportedHandleRef<'_>) -> Pool
                = cuMemPoolImportFromShareableHandle @ cuMemPoolImportFromShareableHandle;
            /// `cuMemPoolExportPointer`: 64 bytes naming one allocation of an exportable pool.
            unsafe fn mem_pool_export_pointer(ptr: DevicePtr) -> PoolPtrExportData = cuMemPoolExportPointer @ cuMemPoolExportPointer;
            /// `cuMemPoolImportPointer`: the exported allocation's address in an imported pool.
            unsafe fn mem_pool_import_pointer(pool: Pool, data: &PoolPtrExportData) -> DevicePtr
                = cuMemPoolImportPointer @ cuMemPoolImportPointer;
            /// `cuIpcGetMemHandle`: legacy IPC, for `cuMemAlloc` memory only (pool memory is refused).
            unsafe fn ipc_get_mem_handle(ptr: DevicePtr) -> IpcMemHandle = cuIpcGetMemHandle @ cuIpcGetMemHandle;
            /// `cuIpcOpenMemHandle` (`CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS`) in the current context.
            unsafe fn ipc_open_mem_handle(handle: &IpcMemHandle) -> DevicePtr = cuIpcOpenMemHandle @ cuIpcOpenMemHandle_v2;
            /// `cuIpcCloseMemHandle`.
            unsafe fn ipc_close_mem_handle(ptr: DevicePtr) -> () = cuIpcCloseMemHandle @ cuIpcCloseMemHandle;

            // ---- virtual memory ----

            /// `cuMemGetAllocationGranularity`: bytes that sizes, offsets and alignments are multiples of.
            safe fn mem_get_allocation_granularity(props: &AllocationProps, option: Granularity) -> usize
                = cuMemGetAllocationGranularity @ cuMemGetAllocationGranularity;
            /// `cuMemCreate`: physical memory, not yet mapped anywhere.
            safe fn mem_create(bytes: usize, props: &AllocationProps) -> MemHandle = cuMemCreate @ cuMemCreate;
            /// `cuMemAddressReserve` (no fixed address, no flags).
            safe fn mem_address_reserve(bytes: usize, alignment: usize) -> DevicePtr = cuMemAddressReserve @ cuMemAddressReserve;
            /// `cuMemMap` (the driver requires `offset == 0`). No device may touch it until
            /// [`Driver::mem_set_access`].
            unsafe fn mem_map(ptr: DevicePtr, bytes: usize, offset: usize, handle: MemHandle) -> () = cuMemMap @ cuMemMap;
            /// `cuMemSetAccess` on a mapped range: all descriptors in one call.
            unsafe fn mem_set_access(ptr: DevicePtr, bytes: usize, map: &[AccessDesc]) -> () = cuMemSetAccess @ cuMemSetAccess;
            /// `cuMemUnmap`.
            unsafe fn mem_unmap(ptr: DevicePtr, bytes: usize) -> () = cuMemUnmap @ cuMemUnmap;
            /// `cuMemAddressFree`.
            unsafe fn mem_address_free(ptr: DevicePtr, bytes: usize) -> () = cuMemAddressFree @ cuMemAddressFree;
            /// `cuMemRelease`: the memory goes once it is released and unmapped everywhere.
            unsafe fn mem_release(handle: MemHandle) -> () = cuMemRelease @ cuMemRelease;
            /// `cuMemExportToShareableHandle`.
            unsafe fn mem_export_to_shareable_handle(handle: MemHandle, kind: HandleKind) -> ExportedHandle
                = cuMemExportToShareableHandle @ cuMemExportToShareableHandle;
            /// `cuMemImportFromShareableHandle`.
            unsafe fn mem_import_from_shareable_handle(handle: ExportedHandleRef<'_>) -> MemHandle
                = cuMemImportFromShareableHandle @ cuMemImportFromShareableHandle;
            /// `cuMemRetainAllocationHandle`: the allocation mapped at `ptr`, retained once more.
            unsafe fn mem_retain_allocation_handle(ptr: DevicePtr) -> MemHandle
                = cuMemRetainAllocationHandle @ cuMemRetainAllocationHandle;
        }
    };
}

/// One item of a generated list, `unsafe` where the table says so (with the seam's contract
/// as its `# Safety` section): `seam_fn! { safe|unsafe #[attr].. fn name(..) -> T ; }`, or with
/// a body.
#[doc(hidden)]
#[macro_export]
macro_rules! seam_fn {
    (safe $(#[$m:meta])* fn $($rest:tt)*) => { $(#[$m])* fn $($rest)* };
    (unsafe $(#[$m:meta])* fn $($rest:tt)*) => {
        $(#[$m])*
        ///
        /// # Safety
        /// The seam's contract (`peerpool::driver::Driver`, section Safety): live handles of
        /// this driver, address ranges inside live allocations, launch arguments that match the
        /// kernel.
        unsafe fn $($rest)*
    };
}

macro_rules! define_calls {
    (() $( $(#[$doc:meta])* $safety:ident fn $method:ident($($arg:ident: $ty:ty),*) -> $out:ty
        = $call:ident @ $symbol:ident; )*) => {
        /// One driver call of the seam, named as CUDA names it.
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Call {
            $(
                #[doc = concat!("`", stringify!($call), "`.")]
                $call,
            )*
        }

        impl Call {
            /// Every call of the seam, in the table's order.
            pub const ALL: &'static [Call] = &[$(Call::$call),*];

            /// The name CUDA documents and errors report: `"cuMemAlloc"`.
            pub fn name(self) -> &'static str {
                match self {
                    $(Call::$call => stringify!($call),)*
                }
            }

            /// The symbol clients resolve: `"cuMemAlloc_v2"`.
            pub fn symbol(self) -> &'static str {
                match self {
                    $(Call::$call => stringify!($symbol),)*
                }
            }

            /// The call named `name` (the documented name, not the versioned symbol).
            pub fn from_name(name: &str) -> Option<Call> {
                Call::ALL.iter().copied().find(|call| call.name() == name)
            }

            /// The trait method that makes this call: `"mem_alloc"`.
            pub fn method(self) -> &'static str {
                match self {
                    $(Call::$call => stringify!($method),)*
                }
            }
        }

        impl std::fmt::Display for Call {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

crate::for_each_driver_call!(define_calls);
