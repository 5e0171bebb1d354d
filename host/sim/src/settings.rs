//! The calls programs make around their kernels beyond peerpool's seam: every device attribute,
//! 16-bit and 2D memsets, and what contexts and streams are set to (stream flags, priorities and
//! ids, context ids, limits and cache configuration). The settings change nothing the simulator
//! does; each reads back as set, from the defaults one H200 answered
//! (`docs/hardware/2026-12-01-clients`, `outside_kernels.txt`).

use super::driver::SimDriver;
use super::share::{fail, invalid};
use super::state::{ATTRIBUTE_VALUE_BYTES, StreamSettings};
use super::timing::Work;
use peerpool::CudaCode;
use peerpool::driver::{Context, DeviceAttribute, DriverResult, Stream};

/// The id `cuStreamGetId` gives the legacy default stream (and the null stream).
pub const LEGACY_STREAM_ID: u64 = 1;
/// The id it gives the per-thread default stream.
pub const PER_THREAD_STREAM_ID: u64 = 2;

/// The limits `cuCtxGetLimit` knows, with the H200's defaults: stack size, printf FIFO, malloc
/// heap, device-runtime sync depth and pending launches, L2 fetch granularity, persisting L2.
const LIMITS: [(u32, u64); 7] =
    [(0, 1024), (1, 8_650_752), (2, 8_388_608), (3, 2), (4, 2048), (5, 64), (6, 11_796_480)];

/// The priorities a stream may have: from 0 (least) to -5 (greatest), as on the H200.
pub const PRIORITY_RANGE: (i32, i32) = (0, -5);

/// `CUstreamAttrID`s a stream has: the access policy window, the synchronisation policy, the
/// priority, the memory synchronisation domain map and domain.
const STREAM_ATTRIBUTES: [u32; 5] = [1, SYNCHRONIZATION_POLICY, PRIORITY, 9, 10];
const SYNCHRONIZATION_POLICY: u32 = 3;
const PRIORITY: u32 = 8;

impl SimDriver {
    /// `cuDeviceGetAttribute` for any attribute number: the topology's where it gives one, else
    /// what an H200 answered (`attributes.rs`); a number the H200 did not answer is
    /// `CUDA_ERROR_INVALID_VALUE`.
    pub fn device_get_attribute_raw(&self, device: i32, raw: u32) -> DriverResult<i32> {
        if let Some(attribute) = DeviceAttribute::from_raw(raw) {
            return peerpool::driver::Driver::device_get_attribute(self, device, attribute);
        }
        self.run("cuDeviceGetAttribute", |s| {
            s.device(device)?;
            super::attributes::answered(raw).ok_or_else(|| CudaCode::CUDA_ERROR_INVALID_VALUE.into())
        })
    }

    /// `cuMemsetD8Async`, `D16Async`, `D32Async` (`unit`: the value's bytes; the synchronous
    /// forms are these on the null stream, then a synchronisation): `count` values at `dst`.
    pub fn memset_async<const N: usize>(
        &self,
        dst: u64,
        unit: [u8; N],
        count: usize,
        stream: Stream,
    ) -> DriverResult<()> {
        const { assert!(matches!(N, 1 | 2 | 4), "a memset sets bytes, 16-bit or 32-bit words") };
        let call = ["cuMemsetD8Async", "cuMemsetD16Async", "cuMemsetD32Async"][N / 2];
        self.run(call, |s| {
            let device = s.stream_device(stream)?;
            super::copies::memset(s, device, dst, &unit, count)?;
            s.work = Some(Work::Memset { device, bytes: count as u64 * N as u64 });
            Ok(())
        })
    }

    /// `cuMemsetD2D8Async`, `D2D16Async`, `D2D32Async` (`unit` is the value's bytes): `height`
    /// rows of `width` values, `pitch` bytes apart.
    pub fn memset_2d_async<const N: usize>(
        &self,
        dst: u64,
        pitch: usize,
        unit: [u8; N],
        width: usize,
        height: usize,
        stream: Stream,
    ) -> DriverResult<()> {
        const { assert!(matches!(N, 1 | 2 | 4), "a memset sets bytes, 16-bit or 32-bit words") };
        let call = ["cuMemsetD2D8Async", "cuMemsetD2D16Async", "cuMemsetD2D32Async"][N / 2];
        let unit = &unit[..];
        self.run(call, |s| {
            let device = s.stream_device(stream)?;
            super::copies::memset_2d(s, device, dst, pitch, unit, width, height)?;
            let bytes = (width as u64).saturating_mul(height as u64).saturating_mul(unit.len() as u64);
            s.work = Some(Work::Memset { device, bytes });
            Ok(())
        })
    }

    /// `cuStreamCreateWithPriority` (`cuStreamCreate` is priority 0): a priority outside the
    /// range is clamped to it, as the driver documents.
    pub fn stream_create_with(&self, flags: u32, priority: i32) -> DriverResult<Stream> {
        let stream = peerpool::driver::Driver::stream_create(self)?;
        let priority = priority.clamp(PRIORITY_RANGE.1, PRIORITY_RANGE.0);
        let settings = StreamSettings { flags, priority, ..StreamSettings::default() };
        self.lock_state().stream_settings.insert(stream.0, settings);
        Ok(stream)
    }

    /// Whether `stream` is in a graph capture (the shim's): work reaching the simulator on it is
    /// refused, so that nothing runs at capture time that was not captured.
    pub fn stream_set_capturing(&self, stream: Stream, capturing: bool) -> DriverResult<()> {
        self.run("cuStreamBeginCapture", |s| {
            s.stream_device_any(stream)?;
            match capturing {
                true => s.capturing.insert(stream.0),
                false => s.capturing.remove(&stream.0),
            };
            Ok(())
        })
    }

    /// The stream whose work was last refused for its capture, once.
    pub fn take_capture_refusal(&self) -> Option<u64> {
        self.lock_state().capture_refused.take()
    }

    /// A created stream's flags and priority; the null stream's are 0 and 0.
    pub fn stream_settings(&self, stream: Stream) -> DriverResult<(u32, i32)> {
        self.run("cuStreamGetFlags", |s| {
            s.stream_device_any(stream)?;
            let set = s.stream_settings.get(&stream.0).cloned().unwrap_or_default();
            Ok((set.flags, set.priority))
        })
    }

    /// `cuStreamGetAttribute`: what `cuStreamSetAttribute` set, else the default an H100
    /// answered (a synchronisation policy of -1, the stream's priority, zeros); an attribute a
    /// stream does not have is `CUDA_ERROR_INVALID_VALUE`.
    pub fn stream_get_attribute(&self, stream: Stream, attribute: u32) -> DriverResult<[u8; ATTRIBUTE_VALUE_BYTES]> {
        self.run("cuStreamGetAttribute", |s| {
            s.stream_device_any(stream)?;
            if !STREAM_ATTRIBUTES.contains(&attribute) {
                return Err(CudaCode::CUDA_ERROR_INVALID_VALUE.into());
            }
            let set = s.stream_settings.get(&stream.0).cloned().unwrap_or_default();
            if let Some((_, value)) = set.attributes.iter().find(|(a, _)| *a == attribute) {
                return Ok(*value);
            }
            let mut value = [0u8; ATTRIBUTE_VALUE_BYTES];
            let first = match attribute {
                SYNCHRONIZATION_POLICY => -1,
                PRIORITY => set.priority,
                _ => 0,
            };
            value[..4].copy_from_slice(&first.to_le_bytes());
            Ok(value)
        })
    }

    /// `cuStreamSetAttribute`: kept for `cuStreamGetAttribute` (none changes what the simulator
    /// does: its streams run in order, a priority included); the priority is clamped to the
    /// range, as at creation.
    pub fn stream_set_attribute(
        &self,
        stream: Stream,
        attribute: u32,
        mut value: [u8; ATTRIBUTE_VALUE_BYTES],
    ) -> DriverResult<()> {
        self.run("cuStreamSetAttribute", |s| {
            s.stream_device_any(stream)?;
            if !STREAM_ATTRIBUTES.contains(&attribute) {
                return Err(CudaCode::CUDA_ERROR_INVALID_VALUE.into());
            }
            let set = s.stream_settings.entry(stream.0).or_default();
            if attribute == PRIORITY {
                let asked = i32::from_le_bytes(value[..4].try_into().expect("4 bytes"));
                set.priority = asked.clamp(PRIORITY_RANGE.1, PRIORITY_RANGE.0);
                value[..4].copy_from_slice(&set.priority.to_le_bytes());
            }
            set.attributes.retain(|(a, _)| *a != attribute);
            set.attributes.push((attribute, value));
            Ok(())
        })
    }

    /// `cuPointerSetAttribute(CU_POINTER_ATTRIBUTE_SYNC_MEMOPS)` on the allocation holding `ptr`
    /// (`CUDA_ERROR_INVALID_VALUE` for an address in none), and what it reads back.
    pub fn pointer_set_sync_memops(&self, ptr: u64, on: bool) -> DriverResult<()> {
        self.run("cuPointerSetAttribute", |s| {
            let Some(base) = s.memory.find(ptr).map(|b| b.base) else { return invalid() };
            if let Some(block) = s.memory.at_mut(base) {
                block.sync_memops = on;
            }
            Ok(())
        })
    }

    /// `cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_SYNC_MEMOPS)`.
    pub fn pointer_sync_memops(&self, ptr: u64) -> DriverResult<bool> {
        self.run("cuPointerGetAttribute", |s| match s.memory.find(ptr) {
            Some(block) => Ok(block.sync_memops),
            None => invalid(),
        })
    }

    /// `cuStreamGetId`: a created stream's id is unique and grows with creation; the null
    /// stream's is the legacy stream's.
    pub fn stream_get_id(&self, stream: Stream) -> DriverResult<u64> {
        self.run("cuStreamGetId", |s| {
            s.stream_device_any(stream)?;
            Ok(match stream {
                Stream::LEGACY => LEGACY_STREAM_ID,
                Stream(handle) => handle,
            })
        })
    }

    /// `cuStreamGetCtx`: the context a stream was made in; the null stream's is the current one.
    pub fn stream_get_ctx(&self, stream: Stream) -> DriverResult<Context> {
        self.run("cuStreamGetCtx", |s| match stream {
            Stream::LEGACY => Ok(Context(s.current_owner()?.ctx)),
            Stream(handle) => {
                s.streams.get(&handle).map(|o| Context(o.ctx)).ok_or_else(|| CudaCode::CUDA_ERROR_INVALID_HANDLE.into())
            }
        })
    }

    /// `cuCtxGetId`: unique for the process's life (the null context is the current one).
    pub fn ctx_get_id(&self, ctx: Option<Context>) -> DriverResult<u64> {
        self.run("cuCtxGetId", |s| {
            let handle = match ctx {
                Some(c) => c.0,
                None => s.current_owner()?.ctx,
            };
            match s.context_device(handle) {
                Some(_) => Ok(handle),
                None => fail(CudaCode::CUDA_ERROR_INVALID_CONTEXT),
            }
        })
    }

    /// `cuCtxGetLimit` of the current context.
    pub fn ctx_get_limit(&self, limit: u32) -> DriverResult<u64> {
        self.run("cuCtxGetLimit", |s| {
            let ctx = s.current_owner()?.ctx;
            let Some(&(_, default)) = LIMITS.iter().find(|l| l.0 == limit) else { return invalid() };
            let set = s.context_settings.get(&ctx).and_then(|c| c.limits.iter().find(|l| l.0 == limit));
            Ok(set.map_or(default, |l| l.1))
        })
    }

    /// `cuCtxSetLimit` of the current context: read back as set.
    pub fn ctx_set_limit(&self, limit: u32, value: u64) -> DriverResult<()> {
        self.run("cuCtxSetLimit", |s| {
            let ctx = s.current_owner()?.ctx;
            if !LIMITS.iter().any(|l| l.0 == limit) {
                return invalid();
            }
            let limits = &mut s.context_settings.entry(ctx).or_default().limits;
            limits.retain(|l| l.0 != limit);
            limits.push((limit, value));
            Ok(())
        })
    }

    /// `cuCtxGetCacheConfig` of the current context.
    pub fn ctx_get_cache_config(&self) -> DriverResult<u32> {
        self.run("cuCtxGetCacheConfig", |s| {
            let ctx = s.current_owner()?.ctx;
            Ok(s.context_settings.get(&ctx).map_or(0, |c| c.cache_config))
        })
    }

    /// `cuCtxSetCacheConfig` of the current context (`CU_FUNC_CACHE_PREFER_NONE` to `_EQUAL`).
    pub fn ctx_set_cache_config(&self, config: u32) -> DriverResult<()> {
        self.run("cuCtxSetCacheConfig", |s| {
            let ctx = s.current_owner()?.ctx;
            if config > 3 {
                return invalid();
            }
            s.context_settings.entry(ctx).or_default().cache_config = config;
            Ok(())
        })
    }
}
