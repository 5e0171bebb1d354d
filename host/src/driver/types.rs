//! The values that cross the [`Driver`](super::Driver) seam.

/// Marker for the integer handle newtypes below.
pub trait Handle: Copy {
    /// The raw value (a pointer for the real driver, a counter for a simulated one).
    fn raw(self) -> u64;
}

macro_rules! handle {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u64);
        impl Handle for $name {
            fn raw(self) -> u64 {
                self.0
            }
        }
    };
}

handle!(/// A `CUcontext`.
    Context);
handle!(/// A `CUmemoryPool`.
    Pool);
handle!(/// A `CUdeviceptr`: a unified virtual address.
    DevicePtr);
handle!(/// A `CUstream`; [`Stream::LEGACY`] is the current context's null stream.
    Stream);
handle!(/// A `CUmodule`.
    Module);
handle!(/// A `CUfunction`.
    Function);
handle!(/// A `CUevent` (created with timing enabled).
    Event);

impl Stream {
    /// The null stream of the current context (synchronises with the context's other work).
    pub const LEGACY: Stream = Stream(0);
}

impl DevicePtr {
    /// `self + bytes`.
    pub fn offset(self, bytes: u64) -> DevicePtr {
        DevicePtr(self.0 + bytes)
    }
}

/// `CUmemAccess_flags`: what a device may do with a pool's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Access {
    /// `CU_MEM_ACCESS_FLAGS_PROT_NONE`.
    None,
    /// `CU_MEM_ACCESS_FLAGS_PROT_READ` (refused for device pools on the H200s of the run records).
    Read,
    /// `CU_MEM_ACCESS_FLAGS_PROT_READWRITE`.
    ReadWrite,
}

/// One entry of a `cuMemPoolSetAccess` call: a device location and its access.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AccessDesc {
    /// Device ordinal.
    pub device: i32,
    /// Access to set.
    pub access: Access,
}

/// A set of [`HandleKind`]s: bits of `CUmemAllocationHandleType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct HandleKinds(pub u32);

impl HandleKinds {
    /// Not exportable.
    pub const NONE: HandleKinds = HandleKinds(0);
    /// `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`.
    pub const POSIX_FD: HandleKinds = HandleKinds(0x1);
    /// `CU_MEM_HANDLE_TYPE_FABRIC`.
    pub const FABRIC: HandleKinds = HandleKinds(0x8);

    /// Whether every bit of `other` is set here.
    pub fn contains(self, other: HandleKinds) -> bool {
        self.0 & other.0 == other.0
    }
}

/// `CUmemPoolProps` for a pinned pool on one device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PoolProps {
    /// The owning device.
    pub device: i32,
    /// Handle types the pool can be exported with.
    pub handle_types: HandleKinds,
    /// Maximum pool size in bytes; 0 for the driver's default.
    pub max_size: usize,
}

/// `cuMemcpyPeerAsync`'s arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerCopy {
    /// Destination address.
    pub dst: DevicePtr,
    /// Context the destination belongs to.
    pub dst_ctx: Context,
    /// Source address.
    pub src: DevicePtr,
    /// Context the source belongs to.
    pub src_ctx: Context,
    /// Byte count.
    pub bytes: usize,
}

/// A one-dimensional launch: `grid` blocks of `block` threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchShape {
    /// Blocks in the grid.
    pub grid: u32,
    /// Threads per block.
    pub block: u32,
}

/// One kernel parameter, passed by value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelArg {
    /// A device address (`.param .u64`).
    Ptr(DevicePtr),
    /// A 64-bit integer.
    U64(u64),
    /// A 32-bit integer.
    U32(u32),
}

impl KernelArg {
    /// Bytes the kernel's parameter takes.
    pub fn size(self) -> usize {
        match self {
            KernelArg::Ptr(_) | KernelArg::U64(_) => 8,
            KernelArg::U32(_) => 4,
        }
    }
}

/// Declares a peerpool enum over one of the driver's attribute enums, listed once: the variant,
/// the `cudarc` name it stands for, and the conversions both ways (`from_raw` takes the C
/// value a client passes, which need not be a valid Rust enum value).
/// A variant's width as written after it, else the enum's default.
macro_rules! width_or {
    ($default:literal) => {
        $default
    };
    ($default:literal $width:literal) => {
        $width
    };
}

macro_rules! attributes {
    // With value widths: each variant's width in bytes, written `(4)` after it, else the default.
    ($(#[$doc:meta])* $name:ident => $sys:ident, $default:literal bytes wide {
        $($(#[$vdoc:meta])* $variant:ident = $raw:ident $(($width:literal))?,)*
    }) => {
        attributes! { $(#[$doc])* $name => $sys { $($(#[$vdoc])* $variant = $raw,)* } }

        impl $name {
            /// Bytes of the value the driver writes for it.
            pub fn width(self) -> usize {
                match self {
                    $($name::$variant => width_or!($default $($width)?),)*
                }
            }
        }
    };
    ($(#[$doc:meta])* $name:ident => $sys:ident { $($(#[$vdoc:meta])* $variant:ident = $raw:ident,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)*
        }

        impl $name {
            /// Every value, in the listed order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The driver's value.
            pub(crate) fn to_sys(self) -> cudarc::driver::sys::$sys {
                match self {
                    $($name::$variant => cudarc::driver::sys::$sys::$raw,)*
                }
            }

            /// The value a C client passed, if peerpool knows it.
            pub fn from_raw(raw: u32) -> Option<$name> {
                $name::ALL.iter().copied().find(|a| a.to_sys() as u32 == raw)
            }

            /// The driver's number for it.
            pub fn raw(self) -> u32 {
                self.to_sys() as u32
            }
        }
    };
}

attributes! {
    /// The `CUdevice_attribute`s peerpool reads and the simulator answers.
    DeviceAttribute => CUdevice_attribute {
        /// `CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK`.
        MaxThreadsPerBlock = CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
        /// `CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X`.
        MaxBlockDimX = CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
        /// `CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y`.
        MaxBlockDimY = CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
        /// `CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z`.
        MaxBlockDimZ = CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z,
        /// `CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X`.
        MaxGridDimX = CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
        /// `CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y`.
        MaxGridDimY = CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
        /// `CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z`.
        MaxGridDimZ = CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z,
        /// `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK`.
        MaxSharedMemoryPerBlock = CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
        /// `CU_DEVICE_ATTRIBUTE_WARP_SIZE`.
        WarpSize = CU_DEVICE_ATTRIBUTE_WARP_SIZE,
        /// `CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT`.
        MultiprocessorCount = CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        /// `CU_DEVICE_ATTRIBUTE_COMPUTE_MODE` (0: default).
        ComputeMode = CU_DEVICE_ATTRIBUTE_COMPUTE_MODE,
        /// `CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS`.
        ConcurrentKernels = CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS,
        /// `CU_DEVICE_ATTRIBUTE_PCI_BUS_ID`.
        PciBusId = CU_DEVICE_ATTRIBUTE_PCI_BUS_ID,
        /// `CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID`.
        PciDeviceId = CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID,
        /// `CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID`.
        PciDomainId = CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID,
        /// `CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR`.
        MaxThreadsPerMultiprocessor = CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
        /// `CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING`.
        UnifiedAddressing = CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING,
        /// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR`.
        ComputeCapabilityMajor = CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
        /// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR`.
        ComputeCapabilityMinor = CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
        /// `CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY`.
        ManagedMemory = CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY,
        /// `CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED`.
        VirtualMemoryManagementSupported = CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
        /// `CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED`.
        HandleTypePosixFdSupported = CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
        /// `CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED`.
        MemoryPoolsSupported = CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
        /// `CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES` (a [`HandleKinds`] bit set).
        MempoolSupportedHandleTypes = CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES,
        /// `CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED`.
        HandleTypeFabricSupported = CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED,
    }
}

attributes! {
    /// The `CUdevice_P2PAttribute`s peerpool reads.
    P2pAttribute => CUdevice_P2PAttribute {
        /// `CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK`.
        PerformanceRank = CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK,
        /// `CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED`.
        AccessSupported = CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED,
        /// `CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED`.
        NativeAtomicSupported = CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED,
    }
}

attributes! {
    /// The `CUpointer_attribute`s peerpool reads and the simulator answers (each at most 8
    /// bytes wide: [`PointerAttribute::width`]).
    PointerAttribute => CUpointer_attribute, 8 bytes wide {
        /// `CU_POINTER_ATTRIBUTE_CONTEXT` (null for pool and virtual memory).
        Context = CU_POINTER_ATTRIBUTE_CONTEXT,
        /// `CU_POINTER_ATTRIBUTE_MEMORY_TYPE` (1: host, 2: device, managed memory included).
        MemoryType = CU_POINTER_ATTRIBUTE_MEMORY_TYPE (4),
        /// `CU_POINTER_ATTRIBUTE_DEVICE_POINTER`.
        DevicePointer = CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
        /// `CU_POINTER_ATTRIBUTE_HOST_POINTER` (memory the host reaches only).
        HostPointer = CU_POINTER_ATTRIBUTE_HOST_POINTER,
        /// `CU_POINTER_ATTRIBUTE_IS_MANAGED`.
        IsManaged = CU_POINTER_ATTRIBUTE_IS_MANAGED (4),
        /// `CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL`.
        DeviceOrdinal = CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL (4),
        /// `CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE`.
        IsLegacyCudaIpcCapable = CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE (4),
        /// `CU_POINTER_ATTRIBUTE_RANGE_START_ADDR`.
        RangeStartAddr = CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        /// `CU_POINTER_ATTRIBUTE_RANGE_SIZE`.
        RangeSize = CU_POINTER_ATTRIBUTE_RANGE_SIZE,
        /// `CU_POINTER_ATTRIBUTE_MAPPED`.
        Mapped = CU_POINTER_ATTRIBUTE_MAPPED (4),
        /// `CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES`.
        AllowedHandleTypes = CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES,
        /// `CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE` (0 when the memory is not from a pool).
        MempoolHandle = CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
    }
}

attributes! {
    /// The `CUmemPool_attribute`s of CUDA 13.0.
    PoolAttribute => CUmemPool_attribute, 8 bytes wide {
        /// `CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES` (an `int`).
        ReuseFollowEventDependencies = CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES (4),
        /// `CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC` (an `int`).
        ReuseAllowOpportunistic = CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC (4),
        /// `CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES` (an `int`).
        ReuseAllowInternalDependencies = CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES (4),
        /// `CU_MEMPOOL_ATTR_RELEASE_THRESHOLD`: bytes the pool keeps at a synchronisation.
        ReleaseThreshold = CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
        /// `CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT`.
        ReservedMemCurrent = CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
        /// `CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH` (settable to 0 only: a reset).
        ReservedMemHigh = CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH,
        /// `CU_MEMPOOL_ATTR_USED_MEM_CURRENT`.
        UsedMemCurrent = CU_MEMPOOL_ATTR_USED_MEM_CURRENT,
        /// `CU_MEMPOOL_ATTR_USED_MEM_HIGH` (settable to 0 only: a reset).
        UsedMemHigh = CU_MEMPOOL_ATTR_USED_MEM_HIGH,
    }
}

handle!(/// A `CUmemGenericAllocationHandle`: the physical memory behind virtual-memory mappings.
    MemHandle);

/// One `CUmemAllocationHandleType`: how an export handle reaches the importing process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HandleKind {
    /// `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`: a process on this node, fd over a Unix socket.
    PosixFd,
    /// `CU_MEM_HANDLE_TYPE_FABRIC`: 64 opaque bytes, usable across an NVLink fabric.
    Fabric,
}

impl HandleKind {
    /// The handle type's bit.
    pub fn bits(self) -> HandleKinds {
        match self {
            HandleKind::PosixFd => HandleKinds::POSIX_FD,
            HandleKind::Fabric => HandleKinds::FABRIC,
        }
    }
}

/// `CUmemPoolPtrExportData`: what `cuMemPoolExportPointer` gives for one pool allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PoolPtrExportData(pub [u8; 64]);

/// `CUipcMemHandle`: a legacy IPC handle for `cuMemAlloc` memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IpcMemHandle(pub [u8; 64]);

/// `CUmemFabricHandle`: a fabric export handle (no file descriptor involved).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FabricHandle(pub [u8; 64]);

/// An export handle as the exporting driver call returns it. The fd is ours to close (and is
/// close-on-exec, so a spawned child never inherits memory by accident).
#[derive(Debug)]
pub enum ExportedHandle {
    /// A POSIX file descriptor.
    Fd(std::os::fd::OwnedFd),
    /// A fabric handle.
    Fabric(FabricHandle),
}

impl ExportedHandle {
    /// Which handle type this is.
    pub fn kind(&self) -> HandleKind {
        match self {
            ExportedHandle::Fd(_) => HandleKind::PosixFd,
            ExportedHandle::Fabric(_) => HandleKind::Fabric,
        }
    }

    /// Borrowed, for an import call.
    pub fn as_ref(&self) -> ExportedHandleRef<'_> {
        match self {
            ExportedHandle::Fd(fd) => ExportedHandleRef::Fd(std::os::fd::AsFd::as_fd(fd)),
            ExportedHandle::Fabric(handle) => ExportedHandleRef::Fabric(handle),
        }
    }
}

/// An export handle as an importing driver call takes it: the caller keeps (and closes) the fd.
#[derive(Clone, Copy, Debug)]
pub enum ExportedHandleRef<'a> {
    /// A POSIX file descriptor received from the exporter.
    Fd(std::os::fd::BorrowedFd<'a>),
    /// A fabric handle.
    Fabric(&'a FabricHandle),
}

impl ExportedHandleRef<'_> {
    /// Which handle type this is.
    pub fn kind(&self) -> HandleKind {
        match self {
            ExportedHandleRef::Fd(_) => HandleKind::PosixFd,
            ExportedHandleRef::Fabric(_) => HandleKind::Fabric,
        }
    }
}

/// `CUmemAllocationProp` for pinned device memory made by `cuMemCreate`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct AllocationProps {
    /// The device whose memory it is.
    pub device: i32,
    /// Handle types the allocation can be exported with.
    pub handle_types: HandleKinds,
}

/// `CUmemAllocationGranularity_flags`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Granularity {
    /// `CU_MEM_ALLOC_GRANULARITY_MINIMUM`: what sizes and offsets must be multiples of.
    Minimum,
    /// `CU_MEM_ALLOC_GRANULARITY_RECOMMENDED`.
    Recommended,
}

/// A device UUID (`cuDeviceGetUuid`) as `nvidia-smi -L` prints it and `CUDA_VISIBLE_DEVICES`
/// takes it: `GPU-` and the 16 bytes in hex, grouped 8-4-4-4-12.
pub fn uuid_text(bytes: &[u8; 16]) -> String {
    let hex = |r: std::ops::Range<usize>| bytes[r].iter().map(|b| format!("{b:02x}")).collect::<String>();
    format!("GPU-{}-{}-{}-{}-{}", hex(0..4), hex(4..6), hex(6..8), hex(8..10), hex(10..16))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uuid_reads_as_nvidia_smi_prints_it() {
        // The recorded H200's (docs/hardware/2026-12-01-one-h200-calibration/a5923a9/nvidia-smi-L.txt).
        let bytes = [0x96, 0xf8, 0x3d, 0xad, 0xfa, 0x89, 0x39, 0x7a, 0x67, 0x66, 0xab, 0x47, 0x96, 0xb0, 0x5e, 0x39];
        assert_eq!(uuid_text(&bytes), "GPU-96f83dad-fa89-397a-6766-ab4796b05e39");
    }

    #[test]
    fn the_int_valued_attributes_are_4_bytes_wide_and_the_rest_8() {
        let ints: Vec<_> = PointerAttribute::ALL.iter().filter(|a| a.width() == 4).collect();
        use PointerAttribute::*;
        assert_eq!(ints, [&MemoryType, &IsManaged, &DeviceOrdinal, &IsLegacyCudaIpcCapable, &Mapped]);
        assert!(PointerAttribute::ALL.iter().all(|a| matches!(a.width(), 4 | 8)));
        let ints: Vec<_> = PoolAttribute::ALL.iter().filter(|a| a.width() == 4).collect();
        use PoolAttribute::*;
        assert_eq!(ints, [&ReuseFollowEventDependencies, &ReuseAllowOpportunistic, &ReuseAllowInternalDependencies]);
        assert!(PoolAttribute::ALL.iter().all(|a| matches!(a.width(), 4 | 8)));
    }
}
