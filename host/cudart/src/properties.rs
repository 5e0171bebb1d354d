//! `struct cudaDeviceProp` as each runtime major lays it out ([`DeviceProp12`], CUDA 12.9's;
//! [`DeviceProp13`], CUDA 13.x's), filled from the driver as NVIDIA's runtime fills it: the name,
//! UUID and memory size from their calls and every other field from its device attribute.
//!
//! The two layouts share most fields at different offsets (CUDA 13 dropped the deprecated
//! ones), so the shared fields' attributes are listed once (`fill_shared!`) and each major adds
//! its own. `tests/layouts.rs` holds both layouts to NVIDIA's headers, field for field.

use crate::driver::ok;
use crate::error::Error;
use core::ffi::{c_char, c_int, c_uint};
use cudarc::driver::sys::{self, CUdevice, CUdevice_attribute, CUdevice_attribute::*, CUuuid};

/// A value with all bits zero, for the layouts' integers: the reserved words and the fields
/// the driver does not answer (the LUID: Windows only) stay zero, as NVIDIA's runtime leaves
/// them.
trait Zero: Copy {
    const ZERO: Self;
}

macro_rules! zero {
    ($($t:ty),*) => { $(impl Zero for $t { const ZERO: Self = 0; })* };
}
zero!(c_char, c_int, c_uint, usize);

impl<T: Zero, const N: usize> Zero for [T; N] {
    const ZERO: Self = [T::ZERO; N];
}

impl Zero for CUuuid {
    const ZERO: Self = CUuuid { bytes: [0; 16] };
}

/// Declares a `#[repr(C)]` layout with `FIELDS`, each field's name, offset and size in order:
/// what the layout test compares with the C compiler's view of NVIDIA's header.
macro_rules! layout {
    ($(#[$meta:meta])* pub struct $name:ident { $(pub $field:ident: $ty:ty,)* }) => {
        $(#[$meta])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug)]
        pub struct $name {
            $(pub $field: $ty,)*
        }

        impl $name {
            /// Each field's name, offset and size, in declaration order.
            pub const FIELDS: &[(&str, usize, usize)] =
                &[$((stringify!($field), core::mem::offset_of!($name, $field), size_of::<$ty>()),)*];

            const ZEROED: Self = Self { $($field: Zero::ZERO,)* };
        }
    };
}

layout! {
    /// CUDA 12.9's `struct cudaDeviceProp` (`driver_types.h`): what `cudaGetDeviceProperties_v2`
    /// of `libcudart.so.12` fills.
    pub struct DeviceProp12 {
        pub name: [c_char; 256],
        pub uuid: CUuuid,
        pub luid: [c_char; 8],
        pub luidDeviceNodeMask: c_uint,
        pub totalGlobalMem: usize,
        pub sharedMemPerBlock: usize,
        pub regsPerBlock: c_int,
        pub warpSize: c_int,
        pub memPitch: usize,
        pub maxThreadsPerBlock: c_int,
        pub maxThreadsDim: [c_int; 3],
        pub maxGridSize: [c_int; 3],
        pub clockRate: c_int,
        pub totalConstMem: usize,
        pub major: c_int,
        pub minor: c_int,
        pub textureAlignment: usize,
        pub texturePitchAlignment: usize,
        pub deviceOverlap: c_int,
        pub multiProcessorCount: c_int,
        pub kernelExecTimeoutEnabled: c_int,
        pub integrated: c_int,
        pub canMapHostMemory: c_int,
        pub computeMode: c_int,
        pub maxTexture1D: c_int,
        pub maxTexture1DMipmap: c_int,
        pub maxTexture1DLinear: c_int,
        pub maxTexture2D: [c_int; 2],
        pub maxTexture2DMipmap: [c_int; 2],
        pub maxTexture2DLinear: [c_int; 3],
        pub maxTexture2DGather: [c_int; 2],
        pub maxTexture3D: [c_int; 3],
        pub maxTexture3DAlt: [c_int; 3],
        pub maxTextureCubemap: c_int,
        pub maxTexture1DLayered: [c_int; 2],
        pub maxTexture2DLayered: [c_int; 3],
        pub maxTextureCubemapLayered: [c_int; 2],
        pub maxSurface1D: c_int,
        pub maxSurface2D: [c_int; 2],
        pub maxSurface3D: [c_int; 3],
        pub maxSurface1DLayered: [c_int; 2],
        pub maxSurface2DLayered: [c_int; 3],
        pub maxSurfaceCubemap: c_int,
        pub maxSurfaceCubemapLayered: [c_int; 2],
        pub surfaceAlignment: usize,
        pub concurrentKernels: c_int,
        pub ECCEnabled: c_int,
        pub pciBusID: c_int,
        pub pciDeviceID: c_int,
        pub pciDomainID: c_int,
        pub tccDriver: c_int,
        pub asyncEngineCount: c_int,
        pub unifiedAddressing: c_int,
        pub memoryClockRate: c_int,
        pub memoryBusWidth: c_int,
        pub l2CacheSize: c_int,
        pub persistingL2CacheMaxSize: c_int,
        pub maxThreadsPerMultiProcessor: c_int,
        pub streamPrioritiesSupported: c_int,
        pub globalL1CacheSupported: c_int,
        pub localL1CacheSupported: c_int,
        pub sharedMemPerMultiprocessor: usize,
        pub regsPerMultiprocessor: c_int,
        pub managedMemory: c_int,
        pub isMultiGpuBoard: c_int,
        pub multiGpuBoardGroupID: c_int,
        pub hostNativeAtomicSupported: c_int,
        pub singleToDoublePrecisionPerfRatio: c_int,
        pub pageableMemoryAccess: c_int,
        pub concurrentManagedAccess: c_int,
        pub computePreemptionSupported: c_int,
        pub canUseHostPointerForRegisteredMem: c_int,
        pub cooperativeLaunch: c_int,
        pub cooperativeMultiDeviceLaunch: c_int,
        pub sharedMemPerBlockOptin: usize,
        pub pageableMemoryAccessUsesHostPageTables: c_int,
        pub directManagedMemAccessFromHost: c_int,
        pub maxBlocksPerMultiProcessor: c_int,
        pub accessPolicyMaxWindowSize: c_int,
        pub reservedSharedMemPerBlock: usize,
        pub hostRegisterSupported: c_int,
        pub sparseCudaArraySupported: c_int,
        pub hostRegisterReadOnlySupported: c_int,
        pub timelineSemaphoreInteropSupported: c_int,
        pub memoryPoolsSupported: c_int,
        pub gpuDirectRDMASupported: c_int,
        pub gpuDirectRDMAFlushWritesOptions: c_uint,
        pub gpuDirectRDMAWritesOrdering: c_int,
        pub memoryPoolSupportedHandleTypes: c_uint,
        pub deferredMappingCudaArraySupported: c_int,
        pub ipcEventSupported: c_int,
        pub clusterLaunch: c_int,
        pub unifiedFunctionPointers: c_int,
        pub reserved: [c_int; 63],
    }
}

layout! {
    /// CUDA 13.x's `struct cudaDeviceProp` (`driver_types.h`): what `cudaGetDeviceProperties` of
    /// `libcudart.so.13` fills.
    pub struct DeviceProp13 {
        pub name: [c_char; 256],
        pub uuid: CUuuid,
        pub luid: [c_char; 8],
        pub luidDeviceNodeMask: c_uint,
        pub totalGlobalMem: usize,
        pub sharedMemPerBlock: usize,
        pub regsPerBlock: c_int,
        pub warpSize: c_int,
        pub memPitch: usize,
        pub maxThreadsPerBlock: c_int,
        pub maxThreadsDim: [c_int; 3],
        pub maxGridSize: [c_int; 3],
        pub totalConstMem: usize,
        pub major: c_int,
        pub minor: c_int,
        pub textureAlignment: usize,
        pub texturePitchAlignment: usize,
        pub multiProcessorCount: c_int,
        pub integrated: c_int,
        pub canMapHostMemory: c_int,
        pub maxTexture1D: c_int,
        pub maxTexture1DMipmap: c_int,
        pub maxTexture2D: [c_int; 2],
        pub maxTexture2DMipmap: [c_int; 2],
        pub maxTexture2DLinear: [c_int; 3],
        pub maxTexture2DGather: [c_int; 2],
        pub maxTexture3D: [c_int; 3],
        pub maxTexture3DAlt: [c_int; 3],
        pub maxTextureCubemap: c_int,
        pub maxTexture1DLayered: [c_int; 2],
        pub maxTexture2DLayered: [c_int; 3],
        pub maxTextureCubemapLayered: [c_int; 2],
        pub maxSurface1D: c_int,
        pub maxSurface2D: [c_int; 2],
        pub maxSurface3D: [c_int; 3],
        pub maxSurface1DLayered: [c_int; 2],
        pub maxSurface2DLayered: [c_int; 3],
        pub maxSurfaceCubemap: c_int,
        pub maxSurfaceCubemapLayered: [c_int; 2],
        pub surfaceAlignment: usize,
        pub concurrentKernels: c_int,
        pub ECCEnabled: c_int,
        pub pciBusID: c_int,
        pub pciDeviceID: c_int,
        pub pciDomainID: c_int,
        pub tccDriver: c_int,
        pub asyncEngineCount: c_int,
        pub unifiedAddressing: c_int,
        pub memoryBusWidth: c_int,
        pub l2CacheSize: c_int,
        pub persistingL2CacheMaxSize: c_int,
        pub maxThreadsPerMultiProcessor: c_int,
        pub streamPrioritiesSupported: c_int,
        pub globalL1CacheSupported: c_int,
        pub localL1CacheSupported: c_int,
        pub sharedMemPerMultiprocessor: usize,
        pub regsPerMultiprocessor: c_int,
        pub managedMemory: c_int,
        pub isMultiGpuBoard: c_int,
        pub multiGpuBoardGroupID: c_int,
        pub hostNativeAtomicSupported: c_int,
        pub pageableMemoryAccess: c_int,
        pub concurrentManagedAccess: c_int,
        pub computePreemptionSupported: c_int,
        pub canUseHostPointerForRegisteredMem: c_int,
        pub cooperativeLaunch: c_int,
        pub sharedMemPerBlockOptin: usize,
        pub pageableMemoryAccessUsesHostPageTables: c_int,
        pub directManagedMemAccessFromHost: c_int,
        pub maxBlocksPerMultiProcessor: c_int,
        pub accessPolicyMaxWindowSize: c_int,
        pub reservedSharedMemPerBlock: usize,
        pub hostRegisterSupported: c_int,
        pub sparseCudaArraySupported: c_int,
        pub hostRegisterReadOnlySupported: c_int,
        pub timelineSemaphoreInteropSupported: c_int,
        pub memoryPoolsSupported: c_int,
        pub gpuDirectRDMASupported: c_int,
        pub gpuDirectRDMAFlushWritesOptions: c_uint,
        pub gpuDirectRDMAWritesOrdering: c_int,
        pub memoryPoolSupportedHandleTypes: c_uint,
        pub deferredMappingCudaArraySupported: c_int,
        pub ipcEventSupported: c_int,
        pub clusterLaunch: c_int,
        pub unifiedFunctionPointers: c_int,
        pub deviceNumaConfig: c_int,
        pub deviceNumaId: c_int,
        pub mpsEnabled: c_int,
        pub hostNumaId: c_int,
        pub gpuPciDeviceID: c_uint,
        pub gpuPciSubsystemID: c_uint,
        pub hostNumaMultinodeIpcSupported: c_int,
        pub reserved: [c_int; 56],
    }
}

// The headers' sizes and a few offsets (64-bit Linux, as a C compiler gives them);
// `tests/layouts.rs` checks every field against the headers themselves.
const _: () = assert!(size_of::<DeviceProp12>() == 1032);
const _: () = assert!(core::mem::offset_of!(DeviceProp12, uuid) == 256);
const _: () = assert!(core::mem::offset_of!(DeviceProp12, totalGlobalMem) == 288);
const _: () = assert!(core::mem::offset_of!(DeviceProp12, clockRate) == 348);
const _: () = assert!(core::mem::offset_of!(DeviceProp12, multiProcessorCount) == 388);
const _: () = assert!(core::mem::offset_of!(DeviceProp12, sharedMemPerMultiprocessor) == 640);
const _: () = assert!(core::mem::offset_of!(DeviceProp12, reservedSharedMemPerBlock) == 720);
const _: () = assert!(core::mem::offset_of!(DeviceProp12, reserved) == 780);
const _: () = assert!(size_of::<DeviceProp13>() == 1008);
const _: () = assert!(core::mem::offset_of!(DeviceProp13, uuid) == 256);
const _: () = assert!(core::mem::offset_of!(DeviceProp13, totalGlobalMem) == 288);
const _: () = assert!(core::mem::offset_of!(DeviceProp13, multiProcessorCount) == 384);
const _: () = assert!(core::mem::offset_of!(DeviceProp13, sharedMemPerMultiprocessor) == 624);
const _: () = assert!(core::mem::offset_of!(DeviceProp13, reservedSharedMemPerBlock) == 696);
const _: () = assert!(core::mem::offset_of!(DeviceProp13, hostNumaMultinodeIpcSupported) == 780);
const _: () = assert!(core::mem::offset_of!(DeviceProp13, reserved) == 784);

/// Assigns each field its attribute's value: `field: ATTRIBUTE` for a number (converted to the
/// field's type, as C's assignment converts an int), `field: [A, B, ..]` for an array. Used in a
/// function returning `Result<_, Error>`.
macro_rules! fill {
    (@value $device:ident, [$($attribute:ident),*]) => { [$(attr($device, $attribute)?),*] };
    (@value $device:ident, $attribute:ident) => { attr($device, $attribute)? as _ };
    ($prop:ident, $device:ident, { $($field:ident: $attribute:tt,)* }) => {
        $($prop.$field = fill!(@value $device, $attribute);)*
    };
}

/// Fills the fields both majors share: the name, UUID and memory size, and the one list of
/// shared fields and their attributes. A macro, as the fields lie at other offsets in each
/// layout.
macro_rules! fill_shared {
    ($prop:ident, $device:ident) => {
        name($device, &mut $prop.name)?;
        $prop.uuid = uuid($device)?;
        $prop.totalGlobalMem = total_mem($device)?;
        fill!($prop, $device, {
            sharedMemPerBlock: CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
            regsPerBlock: CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK,
            warpSize: CU_DEVICE_ATTRIBUTE_WARP_SIZE,
            memPitch: CU_DEVICE_ATTRIBUTE_MAX_PITCH,
            maxThreadsPerBlock: CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            maxThreadsDim: [
                CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
                CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
                CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z
            ],
            maxGridSize: [
                CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
                CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
                CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z
            ],
            totalConstMem: CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY,
            major: CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
            minor: CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
            textureAlignment: CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT,
            texturePitchAlignment: CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT,
            multiProcessorCount: CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            integrated: CU_DEVICE_ATTRIBUTE_INTEGRATED,
            canMapHostMemory: CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY,
            maxTexture1D: CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH,
            maxTexture1DMipmap: CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH,
            maxTexture2D: [CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT],
            maxTexture2DMipmap: [
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT
            ],
            maxTexture2DLinear: [
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH
            ],
            maxTexture2DGather: [
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT
            ],
            maxTexture3D: [
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH
            ],
            maxTexture3DAlt: [
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE
            ],
            maxTextureCubemap: CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH,
            maxTexture1DLayered: [
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS
            ],
            maxTexture2DLayered: [
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS
            ],
            maxTextureCubemapLayered: [
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS
            ],
            maxSurface1D: CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH,
            maxSurface2D: [CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH, CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT],
            maxSurface3D: [
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH
            ],
            maxSurface1DLayered: [
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS
            ],
            maxSurface2DLayered: [
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS
            ],
            maxSurfaceCubemap: CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH,
            maxSurfaceCubemapLayered: [
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS
            ],
            surfaceAlignment: CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT,
            concurrentKernels: CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS,
            ECCEnabled: CU_DEVICE_ATTRIBUTE_ECC_ENABLED,
            pciBusID: CU_DEVICE_ATTRIBUTE_PCI_BUS_ID,
            pciDeviceID: CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID,
            pciDomainID: CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID,
            tccDriver: CU_DEVICE_ATTRIBUTE_TCC_DRIVER,
            asyncEngineCount: CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT,
            unifiedAddressing: CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING,
            memoryBusWidth: CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH,
            l2CacheSize: CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
            persistingL2CacheMaxSize: CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE,
            maxThreadsPerMultiProcessor: CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
            streamPrioritiesSupported: CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED,
            globalL1CacheSupported: CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED,
            localL1CacheSupported: CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED,
            sharedMemPerMultiprocessor: CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
            regsPerMultiprocessor: CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
            managedMemory: CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY,
            isMultiGpuBoard: CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD,
            multiGpuBoardGroupID: CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID,
            hostNativeAtomicSupported: CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED,
            pageableMemoryAccess: CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS,
            concurrentManagedAccess: CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS,
            computePreemptionSupported: CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED,
            canUseHostPointerForRegisteredMem: CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM,
            cooperativeLaunch: CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH,
            sharedMemPerBlockOptin: CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            pageableMemoryAccessUsesHostPageTables: CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
            directManagedMemAccessFromHost: CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST,
            maxBlocksPerMultiProcessor: CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR,
            accessPolicyMaxWindowSize: CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE,
            reservedSharedMemPerBlock: CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK,
            hostRegisterSupported: CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED,
            sparseCudaArraySupported: CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED,
            hostRegisterReadOnlySupported: CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED,
            timelineSemaphoreInteropSupported: CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED,
            memoryPoolsSupported: CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
            gpuDirectRDMASupported: CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED,
            gpuDirectRDMAFlushWritesOptions: CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS,
            gpuDirectRDMAWritesOrdering: CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING,
            memoryPoolSupportedHandleTypes: CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES,
            deferredMappingCudaArraySupported: CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED,
            ipcEventSupported: CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED,
            clusterLaunch: CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH,
            unifiedFunctionPointers: CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS,
        });
    };
}

/// Device `device`'s properties as CUDA 12.9's runtime lays them out. The driver must be
/// initialised; an ordinal it does not know is its error (`CUDA_ERROR_INVALID_DEVICE`).
pub fn device_prop12(device: i32) -> Result<DeviceProp12, Error> {
    let device = handle(device)?;
    let mut prop = DeviceProp12::ZEROED;
    fill_shared!(prop, device);
    // The fields CUDA 13 dropped: the driver still answers each.
    fill!(prop, device, {
        clockRate: CU_DEVICE_ATTRIBUTE_CLOCK_RATE,
        deviceOverlap: CU_DEVICE_ATTRIBUTE_GPU_OVERLAP,
        kernelExecTimeoutEnabled: CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT,
        computeMode: CU_DEVICE_ATTRIBUTE_COMPUTE_MODE,
        maxTexture1DLinear: CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH,
        memoryClockRate: CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE,
        singleToDoublePrecisionPerfRatio: CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO,
        cooperativeMultiDeviceLaunch: CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH,
    });
    Ok(prop)
}

/// Device `device`'s properties as CUDA 13's runtime lays them out. The driver must be
/// initialised; an ordinal it does not know is its error (`CUDA_ERROR_INVALID_DEVICE`).
pub fn device_prop13(device: i32) -> Result<DeviceProp13, Error> {
    let device = handle(device)?;
    let mut prop = DeviceProp13::ZEROED;
    fill_shared!(prop, device);
    fill!(prop, device, {
        deviceNumaConfig: CU_DEVICE_ATTRIBUTE_NUMA_CONFIG,
        deviceNumaId: CU_DEVICE_ATTRIBUTE_NUMA_ID,
        mpsEnabled: CU_DEVICE_ATTRIBUTE_MPS_ENABLED,
        hostNumaId: CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID,
        gpuPciDeviceID: CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID,
        gpuPciSubsystemID: CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID,
        hostNumaMultinodeIpcSupported: CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED,
    });
    Ok(prop)
}

/// The driver's handle of device ordinal `device`.
fn handle(device: i32) -> Result<CUdevice, Error> {
    let mut handle = 0;
    // SAFETY: `handle` is a valid place for the one CUdevice the driver writes.
    ok(unsafe { sys::cuDeviceGet(&mut handle, device) })?;
    Ok(handle)
}

/// The driver's answer for `attribute` of `device`.
fn attr(device: CUdevice, attribute: CUdevice_attribute) -> Result<i32, Error> {
    let mut value = 0;
    // SAFETY: `value` is a valid place for the one int the driver writes.
    ok(unsafe { sys::cuDeviceGetAttribute(&mut value, attribute, device) })?;
    Ok(value)
}

/// The device's name, NUL-terminated within `name`.
fn name(device: CUdevice, name: &mut [c_char; 256]) -> Result<(), Error> {
    // SAFETY: the driver writes at most `len` bytes, the terminating NUL included, into `name`.
    ok(unsafe { sys::cuDeviceGetName(name.as_mut_ptr(), name.len() as c_int, device) })
}

/// The device's UUID: `_v2`'s, which for a MIG instance is the instance's own (the driver's
/// documentation), not its GPU's.
fn uuid(device: CUdevice) -> Result<CUuuid, Error> {
    let mut uuid = CUuuid::ZERO;
    // SAFETY: `uuid` is a valid place for the 16 bytes the driver writes.
    ok(unsafe { sys::cuDeviceGetUuid_v2(&mut uuid, device) })?;
    Ok(uuid)
}

/// The device's memory in bytes.
fn total_mem(device: CUdevice) -> Result<usize, Error> {
    let mut bytes = 0;
    // SAFETY: `bytes` is a valid place for the one size_t the driver writes.
    ok(unsafe { sys::cuDeviceTotalMem_v2(&mut bytes, device) })?;
    Ok(bytes)
}
