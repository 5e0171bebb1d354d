//! Contexts: primary ones, ordinary ones, the calling thread's stack, legacy peer access.

use crate::abi::{as_ptr, context, out};
use crate::boundary::{code, exports, sim};
use cudarc::driver::sys::{self, CUresult};
use std::ffi::{c_int, c_uint};

/// The CUDA version whose ABI the shim implements.
pub(crate) const API_VERSION: c_int = 13000;

/// What `cuCtxGetApiVersion` answers of a live context: the context ABI's version, unchanged
/// since CUDA 3.2 (the H200's driver answered it).
const CONTEXT_API_VERSION: c_uint = 3020;

/// `CU_CTX_MAP_HOST`: every context maps page-locked memory, so the driver reports it always.
const MAP_HOST: c_uint = 0x8;

exports! {
    fn cuDevicePrimaryCtxRetain(ctx: *mut sys::CUcontext, device: sys::CUdevice) {
        out(ctx, as_ptr(code(sim().primary_ctx_retain(device))?.0))
    }

    fn cuDevicePrimaryCtxRelease_v2(device: sys::CUdevice) {
        code(sim().primary_ctx_release(device))
    }

    fn cuDevicePrimaryCtxGetState(device: sys::CUdevice, flags: *mut c_uint, active: *mut c_int) {
        let (f, a) = code(sim().primary_ctx_get_state(device))?;
        out(flags, f)?;
        out(active, a as c_int)
    }

    fn cuDevicePrimaryCtxSetFlags_v2(device: sys::CUdevice, flags: c_uint) {
        code(sim().primary_ctx_set_flags(device, flags))
    }

    fn cuDevicePrimaryCtxReset_v2(device: sys::CUdevice) {
        code(sim().primary_ctx_reset(device))
    }

    /// Creation parameters (execution affinity, CIG) are not simulated.
    fn cuCtxCreate_v4(ctx: *mut sys::CUcontext, params: *mut sys::CUctxCreateParams, flags: c_uint, device: sys::CUdevice) {
        if !params.is_null() {
            return Err(CUresult::CUDA_ERROR_NOT_SUPPORTED);
        }
        out(ctx, as_ptr(code(sim().ctx_create(device, flags))?.0))
    }

    fn cuCtxDestroy_v2(ctx: sys::CUcontext) {
        code(sim().ctx_destroy(context(ctx)))
    }

    fn cuCtxPushCurrent_v2(ctx: sys::CUcontext) {
        code(sim().ctx_push_current(context(ctx)))
    }

    fn cuCtxPopCurrent_v2(ctx: *mut sys::CUcontext) {
        let popped = code(sim().ctx_pop_current())?;
        if !ctx.is_null() {
            ctx.write(as_ptr(popped.map_or(0, |c| c.0)));
        }
        Ok(())
    }

    fn cuCtxGetCurrent(ctx: *mut sys::CUcontext) {
        out(ctx, as_ptr(code(sim().ctx_get_current())?.map_or(0, |c| c.0)))
    }

    fn cuCtxSetCurrent(ctx: sys::CUcontext) {
        let c = context(ctx);
        code(sim().ctx_set_current((c.0 != 0).then_some(c)))
    }

    fn cuCtxGetDevice(device: *mut sys::CUdevice) {
        out(device, code(sim().ctx_get_device())?)
    }

    fn cuCtxSynchronize() {
        code(sim().ctx_synchronize())
    }

    /// CUDA 13's form, naming the context: made current for the call.
    fn cuCtxSynchronize_v2(ctx: sys::CUcontext) {
        let d = sim();
        code(d.ctx_push_current(context(ctx)))?;
        let synced = d.ctx_synchronize();
        code(d.ctx_pop_current())?;
        code(synced)
    }

    fn cuCtxEnablePeerAccess(peer: sys::CUcontext, flags: c_uint) {
        code(sim().ctx_enable_peer_access(context(peer), flags))
    }

    fn cuCtxDisablePeerAccess(peer: sys::CUcontext) {
        code(sim().ctx_disable_peer_access(context(peer)))
    }

    /// The context ABI's version for a live context (a null one is the current context).
    fn cuCtxGetApiVersion(ctx: sys::CUcontext, version: *mut c_uint) {
        let known = match context(ctx).0 {
            0 => code(sim().ctx_get_current())?.is_some(),
            handle => sim_knows(handle),
        };
        if !known {
            return Err(CUresult::CUDA_ERROR_INVALID_CONTEXT);
        }
        out(version, CONTEXT_API_VERSION)
    }

    /// Stream priorities do not change the simulator's order; the range is an H100/H200's.
    fn cuCtxGetStreamPriorityRange(least: *mut c_int, greatest: *mut c_int) {
        code(sim().ctx_get_device())?;
        if !least.is_null() {
            least.write(0);
        }
        if !greatest.is_null() {
            greatest.write(-5);
        }
        Ok(())
    }

    /// The current context's flags: the scheduling defaults, and host memory mapped.
    fn cuCtxGetFlags(flags: *mut c_uint) {
        code(sim().ctx_get_device())?;
        out(flags, MAP_HOST)
    }

    fn cuCtxGetId(ctx: sys::CUcontext, id: *mut std::ffi::c_ulonglong) {
        let c = context(ctx);
        out(id, code(sim().ctx_get_id((c.0 != 0).then_some(c)))?)
    }

    fn cuCtxGetLimit(value: *mut usize, limit: c_uint) {
        out(value, code(sim().ctx_get_limit(limit))? as usize)
    }

    fn cuCtxSetLimit(limit: c_uint, value: usize) {
        code(sim().ctx_set_limit(limit, value as u64))
    }

    fn cuCtxGetCacheConfig(config: *mut c_uint) {
        out(config, code(sim().ctx_get_cache_config())?)
    }

    fn cuCtxSetCacheConfig(config: c_uint) {
        code(sim().ctx_set_cache_config(config))
    }
}

/// Whether `handle` is a live context: pushing it is refused otherwise.
fn sim_knows(handle: u64) -> bool {
    let d = sim();
    let pushed = d.ctx_push_current(peerpool::driver::Context(handle)).is_ok();
    if pushed {
        let _ = d.ctx_pop_current();
    }
    pushed
}
