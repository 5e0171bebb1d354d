//! Contexts: primary ones, ordinary ones, the calling thread's stack, legacy peer access.

use crate::abi::{as_ptr, context, out};
use crate::boundary::{code, entry, sim};
use cudarc::driver::sys::{CUcontext, CUctxCreateParams, CUdevice, CUexecAffinityParam, CUresult};
use std::ffi::{c_int, c_uint};

/// What `cuCtxGetApiVersion` answers of a live context: the context ABI's version, unchanged
/// since CUDA 3.2 (the H200's driver answered it).
const CONTEXT_API_VERSION: c_uint = 3020;

/// `CU_CTX_MAP_HOST`: every context maps page-locked memory, so the driver reports it always.
const MAP_HOST: c_uint = 0x8;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevicePrimaryCtxRetain(ctx: *mut CUcontext, device: CUdevice) -> CUresult {
    entry!(cuDevicePrimaryCtxRetain(ctx, device), { out(ctx, as_ptr(code(sim().primary_ctx_retain(device))?.0)) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevicePrimaryCtxRelease_v2(device: CUdevice) -> CUresult {
    entry!(cuDevicePrimaryCtxRelease_v2(device), { code(sim().primary_ctx_release(device)) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevicePrimaryCtxGetState(
    device: CUdevice,
    flags: *mut c_uint,
    active: *mut c_int,
) -> CUresult {
    entry!(cuDevicePrimaryCtxGetState(device, flags, active), {
        let (f, a) = code(sim().primary_ctx_get_state(device))?;
        out(flags, f)?;
        out(active, a as c_int)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevicePrimaryCtxSetFlags_v2(device: CUdevice, flags: c_uint) -> CUresult {
    entry!(cuDevicePrimaryCtxSetFlags_v2(device, flags), { code(sim().primary_ctx_set_flags(device, flags)) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevicePrimaryCtxReset_v2(device: CUdevice) -> CUresult {
    entry!(cuDevicePrimaryCtxReset_v2(device), { code(sim().primary_ctx_reset(device)) })
}

/// Creation parameters (execution affinity, CIG) are not simulated.
/// `cuCtxCreate` as CUDA 12.x headers name it (and `cuGetProcAddress` gives it from 3020 on).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxCreate_v2(ctx: *mut CUcontext, flags: c_uint, device: CUdevice) -> CUresult {
    entry!(cuCtxCreate_v2(ctx, flags, device), { out(ctx, as_ptr(code(sim().ctx_create(device, flags))?.0)) })
}

/// `cuCtxCreate` with execution-affinity parameters (`cuGetProcAddress` gives it from 11040 on):
/// none is a plain context; a limit on multiprocessors is not simulated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxCreate_v3(
    ctx: *mut CUcontext,
    params: *mut CUexecAffinityParam,
    count: c_int,
    flags: c_uint,
    device: CUdevice,
) -> CUresult {
    entry!(cuCtxCreate_v3(ctx, params, count, flags, device), {
        if count != 0 || !params.is_null() {
            crate::boundary::not_simulated("cuCtxCreate_v3 with execution affinity")?;
        }
        out(ctx, as_ptr(code(sim().ctx_create(device, flags))?.0))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxCreate_v4(
    ctx: *mut CUcontext,
    params: *mut CUctxCreateParams,
    flags: c_uint,
    device: CUdevice,
) -> CUresult {
    entry!(cuCtxCreate_v4(ctx, params, flags, device), {
        // SAFETY: a non-null `params` is the caller's, valid for a read.
        let asked = unsafe { params.as_ref() };
        // Zeroed parameters (C's `CUctxCreateParams p = {}`) ask for a plain context.
        if asked
            .is_some_and(|p| !p.execAffinityParams.is_null() || p.numExecAffinityParams != 0 || !p.cigParams.is_null())
        {
            crate::boundary::not_simulated("cuCtxCreate_v4 with execution affinity or CIG parameters")?;
        }
        out(ctx, as_ptr(code(sim().ctx_create(device, flags))?.0))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxDestroy_v2(ctx: CUcontext) -> CUresult {
    entry!(cuCtxDestroy_v2(ctx), { code(sim().ctx_destroy(context(ctx))) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxPushCurrent_v2(ctx: CUcontext) -> CUresult {
    entry!(cuCtxPushCurrent_v2(ctx), { code(sim().ctx_push_current(context(ctx))) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxPopCurrent_v2(ctx: *mut CUcontext) -> CUresult {
    entry!(cuCtxPopCurrent_v2(ctx), {
        let popped = code(sim().ctx_pop_current())?;
        if !ctx.is_null() {
            ctx.write(as_ptr(popped.map_or(0, |c| c.0)));
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetCurrent(ctx: *mut CUcontext) -> CUresult {
    entry!(cuCtxGetCurrent(ctx), { out(ctx, as_ptr(code(sim().ctx_get_current())?.map_or(0, |c| c.0))) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxSetCurrent(ctx: CUcontext) -> CUresult {
    entry!(cuCtxSetCurrent(ctx), {
        let c = context(ctx);
        code(sim().ctx_set_current((c.0 != 0).then_some(c)))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetDevice(device: *mut CUdevice) -> CUresult {
    entry!(cuCtxGetDevice(device), { out(device, code(sim().ctx_get_device())?) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxSynchronize() -> CUresult {
    entry!(cuCtxSynchronize(), { code(sim().ctx_synchronize()) })
}

/// CUDA 13's form, naming the context: made current for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxSynchronize_v2(ctx: CUcontext) -> CUresult {
    entry!(cuCtxSynchronize_v2(ctx), {
        let d = sim();
        code(d.ctx_push_current(context(ctx)))?;
        let synced = d.ctx_synchronize();
        code(d.ctx_pop_current())?;
        code(synced)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxEnablePeerAccess(peer: CUcontext, flags: c_uint) -> CUresult {
    entry!(cuCtxEnablePeerAccess(peer, flags), { code(sim().ctx_enable_peer_access(context(peer), flags)) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxDisablePeerAccess(peer: CUcontext) -> CUresult {
    entry!(cuCtxDisablePeerAccess(peer), { code(sim().ctx_disable_peer_access(context(peer))) })
}

/// The context ABI's version for a live context (a null one is the current context).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetApiVersion(ctx: CUcontext, version: *mut c_uint) -> CUresult {
    entry!(cuCtxGetApiVersion(ctx, version), {
        let known = match context(ctx).0 {
            0 => code(sim().ctx_get_current())?.is_some(),
            handle => sim_knows(handle),
        };
        if !known {
            return Err(CUresult::CUDA_ERROR_INVALID_CONTEXT);
        }
        out(version, CONTEXT_API_VERSION)
    })
}

/// Stream priorities do not change the simulator's order; the range is an H100/H200's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetStreamPriorityRange(least: *mut c_int, greatest: *mut c_int) -> CUresult {
    entry!(cuCtxGetStreamPriorityRange(least, greatest), {
        code(sim().ctx_get_device())?;
        if !least.is_null() {
            least.write(0);
        }
        if !greatest.is_null() {
            greatest.write(-5);
        }
        Ok(())
    })
}

/// The current context's flags: the scheduling defaults, and host memory mapped.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetFlags(flags: *mut c_uint) -> CUresult {
    entry!(cuCtxGetFlags(flags), {
        code(sim().ctx_get_device())?;
        out(flags, MAP_HOST)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetId(ctx: CUcontext, id: *mut std::ffi::c_ulonglong) -> CUresult {
    entry!(cuCtxGetId(ctx, id), {
        let c = context(ctx);
        out(id, code(sim().ctx_get_id((c.0 != 0).then_some(c)))?)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetLimit(value: *mut usize, limit: c_uint) -> CUresult {
    entry!(cuCtxGetLimit(value, limit), { out(value, code(sim().ctx_get_limit(limit))? as usize) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxSetLimit(limit: c_uint, value: usize) -> CUresult {
    entry!(cuCtxSetLimit(limit, value), { code(sim().ctx_set_limit(limit, value as u64)) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetCacheConfig(config: *mut c_uint) -> CUresult {
    entry!(cuCtxGetCacheConfig(config), { out(config, code(sim().ctx_get_cache_config())?) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxSetCacheConfig(config: c_uint) -> CUresult {
    entry!(cuCtxSetCacheConfig(config), { code(sim().ctx_set_cache_config(config)) })
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
