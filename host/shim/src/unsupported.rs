//! Every other entry point of the CUDA 13.0 driver API: exported so that programs and
//! libraries resolve it (cudarc panics on a missing symbol; a program linked with `-lcuda`
//! would not start), each answering `CUDA_ERROR_NOT_SUPPORTED` and naming itself on stderr the
//! first time it is called.
//!
//! The list is cudarc's (feature `cuda-13000`) less what `exports/` implements; a stub reads no
//! argument, which the C calling convention allows whatever the caller passes.

use crate::boundary::unsupported;
use cudarc::driver::sys::CUresult;
use std::ffi::c_void;

macro_rules! stubs {
    ($($name:ident,)*) => {
        $(
            #[doc = concat!("`", stringify!($name), "`: not simulated.")]
            #[unsafe(no_mangle)]
            #[allow(non_snake_case)]
            pub extern "C" fn $name() -> CUresult {
                unsupported(stringify!($name))
            }
        )*

        /// Every stub, by exported name.
        pub(crate) fn table() -> Vec<(&'static str, *const c_void)> {
            vec![$((stringify!($name), $name as *const c_void)),*]
        }
    };
}

stubs! {
    cuArray3DCreate_v2, cuArray3DGetDescriptor_v2, cuArrayCreate_v2, cuArrayDestroy, cuArrayGetDescriptor_v2,
    cuArrayGetMemoryRequirements, cuArrayGetPlane, cuArrayGetSparseProperties, cuCoredumpGetAttribute,
    cuCoredumpGetAttributeGlobal, cuCoredumpSetAttribute, cuCoredumpSetAttributeGlobal, cuCtxAttach,
    cuCtxDetach, cuCtxFromGreenCtx, cuCtxGetCacheConfig, cuCtxGetDevResource, cuCtxGetDevice_v2,
    cuCtxGetExecAffinity, cuCtxGetId, cuCtxGetLimit, cuCtxGetSharedMemConfig, cuCtxRecordEvent, cuCtxResetPersistingL2Cache, cuCtxSetCacheConfig, cuCtxSetFlags, cuCtxSetLimit,
    cuCtxSetSharedMemConfig, cuCtxWaitEvent, cuDestroyExternalMemory, cuDestroyExternalSemaphore,
    cuDevResourceGenerateDesc, cuDevSmResourceSplitByCount, cuDeviceComputeCapability, cuDeviceGetByPCIBusId,
    cuDeviceGetDevResource, cuDeviceGetExecAffinitySupport, cuDeviceGetGraphMemAttribute,
    cuDeviceGetHostAtomicCapabilities, cuDeviceGetLuid, cuDeviceGetP2PAtomicCapabilities,
    cuDeviceGetProperties, cuDeviceGetTexture1DLinearMaxWidth, cuDeviceGraphMemTrim,
    cuDeviceRegisterAsyncNotification, cuDeviceSetGraphMemAttribute, cuDeviceUnregisterAsyncNotification,
    cuEventRecordWithFlags, cuExternalMemoryGetMappedBuffer, cuExternalMemoryGetMappedMipmappedArray,
    cuFlushGPUDirectRDMAWrites, cuFuncGetAttribute, cuFuncGetModule, cuFuncGetName, cuFuncIsLoaded,
    cuFuncLoad, cuFuncSetAttribute, cuFuncSetBlockShape, cuFuncSetCacheConfig, cuFuncSetSharedMemConfig,
    cuFuncSetSharedSize, cuGraphAddBatchMemOpNode, cuGraphAddChildGraphNode, cuGraphAddDependencies_v2,
    cuGraphAddEmptyNode, cuGraphAddEventRecordNode, cuGraphAddEventWaitNode,
    cuGraphAddExternalSemaphoresSignalNode, cuGraphAddExternalSemaphoresWaitNode, cuGraphAddHostNode,
    cuGraphAddKernelNode_v2, cuGraphAddMemAllocNode, cuGraphAddMemFreeNode, cuGraphAddMemcpyNode,
    cuGraphAddMemsetNode, cuGraphAddNode_v2, cuGraphBatchMemOpNodeGetParams, cuGraphBatchMemOpNodeSetParams,
    cuGraphChildGraphNodeGetGraph, cuGraphClone, cuGraphConditionalHandleCreate, cuGraphCreate,
    cuGraphDebugDotPrint, cuGraphDestroy, cuGraphDestroyNode, cuGraphEventRecordNodeGetEvent,
    cuGraphEventRecordNodeSetEvent, cuGraphEventWaitNodeGetEvent, cuGraphEventWaitNodeSetEvent,
    cuGraphExecBatchMemOpNodeSetParams, cuGraphExecChildGraphNodeSetParams, cuGraphExecDestroy,
    cuGraphExecEventRecordNodeSetEvent, cuGraphExecEventWaitNodeSetEvent,
    cuGraphExecExternalSemaphoresSignalNodeSetParams, cuGraphExecExternalSemaphoresWaitNodeSetParams,
    cuGraphExecGetFlags, cuGraphExecHostNodeSetParams, cuGraphExecKernelNodeSetParams_v2,
    cuGraphExecMemcpyNodeSetParams, cuGraphExecMemsetNodeSetParams, cuGraphExecNodeSetParams,
    cuGraphExecUpdate_v2, cuGraphExternalSemaphoresSignalNodeGetParams,
    cuGraphExternalSemaphoresSignalNodeSetParams, cuGraphExternalSemaphoresWaitNodeGetParams,
    cuGraphExternalSemaphoresWaitNodeSetParams, cuGraphGetEdges_v2, cuGraphGetNodes, cuGraphGetRootNodes,
    cuGraphHostNodeGetParams, cuGraphHostNodeSetParams, cuGraphInstantiateWithFlags,
    cuGraphInstantiateWithParams, cuGraphKernelNodeCopyAttributes, cuGraphKernelNodeGetAttribute,
    cuGraphKernelNodeGetParams_v2, cuGraphKernelNodeSetAttribute, cuGraphKernelNodeSetParams_v2,
    cuGraphLaunch, cuGraphMemAllocNodeGetParams, cuGraphMemFreeNodeGetParams, cuGraphMemcpyNodeGetParams,
    cuGraphMemcpyNodeSetParams, cuGraphMemsetNodeGetParams, cuGraphMemsetNodeSetParams,
    cuGraphNodeFindInClone, cuGraphNodeGetDependencies_v2, cuGraphNodeGetDependentNodes_v2,
    cuGraphNodeGetEnabled, cuGraphNodeGetType, cuGraphNodeSetEnabled, cuGraphNodeSetParams,
    cuGraphReleaseUserObject, cuGraphRemoveDependencies_v2, cuGraphRetainUserObject, cuGraphUpload,
    cuGraphicsMapResources, cuGraphicsResourceGetMappedMipmappedArray, cuGraphicsResourceGetMappedPointer_v2,
    cuGraphicsResourceSetMapFlags_v2, cuGraphicsSubResourceGetMappedArray, cuGraphicsUnmapResources,
    cuGraphicsUnregisterResource, cuGreenCtxCreate, cuGreenCtxDestroy, cuGreenCtxGetDevResource,
    cuGreenCtxGetId, cuGreenCtxRecordEvent, cuGreenCtxStreamCreate, cuGreenCtxWaitEvent,
    cuImportExternalMemory, cuImportExternalSemaphore, cuIpcGetEventHandle, cuIpcOpenEventHandle,
    cuKernelGetAttribute, cuKernelGetFunction, cuKernelGetLibrary, cuKernelGetName, cuKernelGetParamInfo,
    cuKernelSetAttribute, cuKernelSetCacheConfig, cuLaunch, cuLaunchCooperativeKernel,
    cuLaunchCooperativeKernelMultiDevice, cuLaunchGrid, cuLaunchGridAsync, cuLaunchHostFunc,
    cuLaunchKernelEx, cuLibraryEnumerateKernels, cuLibraryGetGlobal, cuLibraryGetKernel,
    cuLibraryGetKernelCount, cuLibraryGetManaged, cuLibraryGetModule, cuLibraryGetUnifiedFunction,
    cuLibraryLoadData, cuLibraryLoadFromFile, cuLibraryUnload, cuLinkAddData_v2, cuLinkAddFile_v2,
    cuLinkComplete, cuLinkCreate_v2, cuLinkDestroy, cuLogsCurrent, cuLogsDumpToFile, cuLogsDumpToMemory,
    cuLogsRegisterCallback, cuLogsUnregisterCallback, cuMemAdvise_v2, cuMemAllocHost_v2, cuMemAllocManaged,
    cuMemAllocPitch_v2, cuMemBatchDecompressAsync, cuMemDiscardAndPrefetchBatchAsync, cuMemDiscardBatchAsync,
    cuMemFreeHost, cuMemGetAccess, cuMemGetAllocationPropertiesFromHandle, cuMemGetDefaultMemPool,
    cuMemGetHandleForAddressRange, cuMemGetMemPool, cuMemHostAlloc, cuMemHostGetDevicePointer_v2,
    cuMemHostGetFlags, cuMemHostRegister_v2, cuMemHostUnregister, cuMemMapArrayAsync, cuMemPrefetchAsync_v2,
    cuMemPrefetchBatchAsync, cuMemRangeGetAttribute, cuMemRangeGetAttributes, cuMemSetMemPool,
    cuMemcpy2DAsync_v2, cuMemcpy2DUnaligned_v2, cuMemcpy2D_v2, cuMemcpy3DAsync_v2, cuMemcpy3DBatchAsync_v2,
    cuMemcpy3DPeer, cuMemcpy3DPeerAsync, cuMemcpy3D_v2, cuMemcpyAtoA_v2, cuMemcpyAtoD_v2,
    cuMemcpyAtoHAsync_v2, cuMemcpyAtoH_v2, cuMemcpyBatchAsync_v2, cuMemcpyDtoA_v2, cuMemcpyHtoAAsync_v2,
    cuMemcpyHtoA_v2, cuMemsetD16Async, cuMemsetD16_v2, cuMemsetD2D16Async, cuMemsetD2D16_v2,
    cuMemsetD2D32Async, cuMemsetD2D32_v2, cuMemsetD2D8Async, cuMemsetD2D8_v2, cuMipmappedArrayCreate,
    cuMipmappedArrayDestroy, cuMipmappedArrayGetLevel, cuMipmappedArrayGetMemoryRequirements,
    cuMipmappedArrayGetSparseProperties, cuModuleEnumerateFunctions, cuModuleGetFunctionCount,
    cuModuleGetGlobal_v2, cuModuleGetLoadingMode, cuModuleGetSurfRef, cuModuleGetTexRef, cuModuleLoad,
    cuModuleLoadFatBinary, cuMulticastAddDevice, cuMulticastBindAddr, cuMulticastBindMem, cuMulticastCreate,
    cuMulticastGetGranularity, cuMulticastUnbind, cuOccupancyAvailableDynamicSMemPerBlock,
    cuOccupancyMaxActiveBlocksPerMultiprocessor, cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags,
    cuOccupancyMaxActiveClusters, cuOccupancyMaxPotentialBlockSize,
    cuOccupancyMaxPotentialBlockSizeWithFlags, cuOccupancyMaxPotentialClusterSize, cuParamSetSize,
    cuParamSetTexRef, cuParamSetf, cuParamSeti, cuParamSetv, cuPointerSetAttribute, cuProfilerInitialize,
    cuProfilerStart, cuProfilerStop, cuSignalExternalSemaphoresAsync, cuStreamAddCallback,
    cuStreamAttachMemAsync, cuStreamBatchMemOp_v2, cuStreamBeginCaptureToGraph, cuStreamBeginCapture_v2,
    cuStreamCopyAttributes, cuStreamEndCapture, cuStreamGetAttribute, cuStreamGetCaptureInfo_v3,
    cuStreamGetCtx, cuStreamGetCtx_v2, cuStreamGetDevice, cuStreamGetFlags, cuStreamGetGreenCtx,
    cuStreamGetId, cuStreamGetPriority, cuStreamSetAttribute,
    cuStreamUpdateCaptureDependencies_v2, cuStreamWaitValue32_v2, cuStreamWaitValue64_v2,
    cuStreamWriteValue32_v2, cuStreamWriteValue64_v2, cuSurfObjectCreate, cuSurfObjectDestroy,
    cuSurfObjectGetResourceDesc, cuSurfRefGetArray, cuSurfRefSetArray, cuTensorMapEncodeIm2col,
    cuTensorMapEncodeIm2colWide, cuTensorMapEncodeTiled, cuTensorMapReplaceAddress, cuTexObjectCreate,
    cuTexObjectDestroy, cuTexObjectGetResourceDesc, cuTexObjectGetResourceViewDesc,
    cuTexObjectGetTextureDesc, cuTexRefCreate, cuTexRefDestroy, cuTexRefGetAddressMode,
    cuTexRefGetAddress_v2, cuTexRefGetArray, cuTexRefGetBorderColor, cuTexRefGetFilterMode, cuTexRefGetFlags,
    cuTexRefGetFormat, cuTexRefGetMaxAnisotropy, cuTexRefGetMipmapFilterMode, cuTexRefGetMipmapLevelBias,
    cuTexRefGetMipmapLevelClamp, cuTexRefGetMipmappedArray, cuTexRefSetAddress2D_v3, cuTexRefSetAddressMode,
    cuTexRefSetAddress_v2, cuTexRefSetArray, cuTexRefSetBorderColor, cuTexRefSetFilterMode, cuTexRefSetFlags,
    cuTexRefSetFormat, cuTexRefSetMaxAnisotropy, cuTexRefSetMipmapFilterMode, cuTexRefSetMipmapLevelBias,
    cuTexRefSetMipmapLevelClamp, cuTexRefSetMipmappedArray, cuThreadExchangeStreamCaptureMode,
    cuUserObjectCreate, cuUserObjectRelease, cuUserObjectRetain, cuWaitExternalSemaphoresAsync, culib,
}
