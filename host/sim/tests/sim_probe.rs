//! `docs/hardware/2026-11-30-foundation/driver_probe.txt`, replayed against the simulator.
//!
//! The probe (`host/examples/driver_probe.rs`) recorded how the real driver on the H200s of the run records
//! answers edge cases, one `case => result` line each. [`replay`] makes the same calls in the
//! same order on `SimDriver` with `Topology::two_h200()` and prints lines in the same format;
//! the test compares them line by line with the committed file. The last lines, where the real
//! driver returned stale data for a destroyed pool and then crashed, are known differences and
//! are asserted separately.

use peerpool::System;
use peerpool::driver::*;
use peerpool_sim::{SimDriver, SimOptions, Topology};
use std::fmt::Debug;
use std::sync::Arc;

const PROBE: &str = include_str!("../../../docs/hardware/2026-11-30-foundation/driver_probe.txt");

/// The first probe line the simulator answers differently on purpose (see `peerpool::sim`).
const KNOWN_DIFFERENCE: &str = "destroyed pool: get_access(owner)";

/// The probe's output, as the simulator answers.
#[derive(Default)]
struct Lines(Vec<String>);

impl Lines {
    fn show<T: Debug>(&mut self, case: &str, r: Result<T, peerpool::CudaError>) {
        let text = match r {
            Ok(v) => format!("ok {v:?}"),
            Err(e) => format!("err {}", e.code_name()),
        };
        self.0.push(format!("{case} => {text}"));
    }
}

fn rw(device: i32) -> AccessDesc {
    AccessDesc { device, access: Access::ReadWrite }
}
fn none(device: i32) -> AccessDesc {
    AccessDesc { device, access: Access::None }
}
fn read(device: i32) -> AccessDesc {
    AccessDesc { device, access: Access::Read }
}

/// The probe's calls, in its order, on `system`; returns its lines and the destroyed pool.
fn replay((d, system): &(Arc<SimDriver>, System)) -> Result<(Lines, Pool), peerpool::Error> {
    let mut out = Lines::default();
    out.0.push(format!("devices => {}", system.device_count()));
    let _ctx0 = system.enter(0)?;
    let props = PoolProps { device: 0, ..PoolProps::default() };
    let pool = d.mem_pool_create(&props)?;
    out.show("get_access(pool, owner)", d.mem_pool_get_access(pool, 0));
    out.show("get_access(pool, peer) fresh", d.mem_pool_get_access(pool, 1));
    for device in [2, 99, -1] {
        out.show(&format!("get_access(pool, {device})"), d.mem_pool_get_access(pool, device));
    }
    out.show("set_access(pool, [])", d.mem_pool_set_access(pool, &[]));
    out.show("set_access(pool, [owner rw])", d.mem_pool_set_access(pool, &[rw(0)]));
    out.show("set_access(pool, [owner none])", d.mem_pool_set_access(pool, &[none(0)]));
    let then = |out: &mut Lines| out.show("  then get_access(pool, peer)", d.mem_pool_get_access(pool, 1));
    out.show("set_access(pool, [peer rw, owner none])", d.mem_pool_set_access(pool, &[rw(1), none(0)]));
    then(&mut out);
    out.show("set_access(pool, [owner none, peer rw])", d.mem_pool_set_access(pool, &[none(0), rw(1)]));
    then(&mut out);
    out.show("set_access(pool, [peer rw, 99 rw])", d.mem_pool_set_access(pool, &[rw(1), rw(99)]));
    then(&mut out);
    out.show("set_access(pool, [99 rw])", d.mem_pool_set_access(pool, &[rw(99)]));
    out.show("set_access(pool, [-1 rw])", d.mem_pool_set_access(pool, &[rw(-1)]));
    out.show("set_access(pool, [peer read])", d.mem_pool_set_access(pool, &[read(1)]));
    then(&mut out);
    out.show("set_access(pool, [owner read])", d.mem_pool_set_access(pool, &[read(0)]));
    out.show("set_access(pool, [peer rw, peer none])", d.mem_pool_set_access(pool, &[rw(1), none(1)]));
    then(&mut out);
    out.show("set_access(pool, [peer none, peer rw])", d.mem_pool_set_access(pool, &[none(1), rw(1)]));
    then(&mut out);
    out.show("set_access(pool, [peer rw]) repeat", d.mem_pool_set_access(pool, &[rw(1)]));
    out.show("set_access(pool, [peer none])", d.mem_pool_set_access(pool, &[none(1)]));
    out.show("set_access(pool, [peer none]) repeat", d.mem_pool_set_access(pool, &[none(1)]));
    out.show("set_access(null pool, [peer rw])", d.mem_pool_set_access(Pool(0), &[rw(1)]));
    out.show("get_access(null pool, peer)", d.mem_pool_get_access(Pool(0), 1));
    for device in [99, -1] {
        out.show(&format!("mem_pool_create(device {device})"), d.mem_pool_create(&PoolProps { device, ..props }));
    }
    for (what, types) in [("posix fd", HandleKinds::POSIX_FD), ("posix fd | fabric", HandleKinds(0x9))] {
        let made = d.mem_pool_create(&PoolProps { handle_types: types, ..props });
        out.show(&format!("mem_pool_create({what})"), made.map(|p| d.mem_pool_destroy(p)));
    }
    out.show("device_get_default_mem_pool(99)", d.device_get_default_mem_pool(99));
    out.show("device_get_mem_pool(99)", d.device_get_mem_pool(99));
    out.show("device_can_access_peer(0, 0)", d.device_can_access_peer(0, 0));
    out.show("device_can_access_peer(0, 99)", d.device_can_access_peer(0, 99));
    out.show("p2p_attribute(rank, 0, 0)", d.device_get_p2p_attribute(P2pAttribute::PerformanceRank, 0, 0));
    out.show("primary_ctx_retain(99)", d.primary_ctx_retain(99));
    out.show("ctx_get_device (gpu0 current)", d.ctx_get_device());

    let second = d.mem_pool_create(&props)?;
    let default = d.device_get_default_mem_pool(0)?;
    out.show("default == current", d.device_get_mem_pool(0).map(|p| p == default));
    d.mem_pool_set_access(pool, &[rw(1)])?;
    out.show("grant pool; second pool access(peer)", d.mem_pool_get_access(second, 1));
    out.show("grant pool; default pool access(peer)", d.mem_pool_get_access(default, 1));
    out.show("set_mem_pool(0, second)", d.device_set_mem_pool(0, second));
    out.show("  then device_get_mem_pool(0) == second", d.device_get_mem_pool(0).map(|p| p == second));
    out.show("set_mem_pool(1, pool of gpu0)", d.device_set_mem_pool(1, pool));
    out.show("restore set_mem_pool(0, default)", d.device_set_mem_pool(0, default));
    let default1 = d.device_get_default_mem_pool(1)?;
    out.show("restore set_mem_pool(1, default)", d.device_set_mem_pool(1, default1));

    let granted = d.mem_alloc_from_pool_async(1 << 20, pool, Stream::LEGACY)?;
    let ungranted = d.mem_alloc_from_pool_async(1 << 20, second, Stream::LEGACY)?;
    let legacy = d.mem_alloc(1 << 20)?;
    d.stream_synchronize(Stream::LEGACY)?;
    out.show("alloc_from_pool(0 bytes)", d.mem_alloc_from_pool_async(0, pool, Stream::LEGACY));
    for (what, ptr) in [("pool ptr", granted), ("pool ptr + 4096", granted.offset(4096)), ("cuMemAlloc ptr", legacy)] {
        let attr = |a| d.pointer_get_attribute(ptr, a);
        out.show(
            &format!("pointer {what}: mempool handle == pool"),
            attr(PointerAttribute::MempoolHandle).map(|h| h == pool.0),
        );
        out.show(
            &format!("pointer {what}: mempool handle is null"),
            attr(PointerAttribute::MempoolHandle).map(|h| h == 0),
        );
        out.show(&format!("pointer {what}: device ordinal"), attr(PointerAttribute::DeviceOrdinal));
        out.show(&format!("pointer {what}: legacy ipc"), attr(PointerAttribute::IsLegacyCudaIpcCapable));
        out.show(&format!("pointer {what}: handle types"), attr(PointerAttribute::AllowedHandleTypes));
        out.show(&format!("pointer {what}: range size"), attr(PointerAttribute::RangeSize));
    }
    let host = [0u8; 64];
    let host_ptr = DevicePtr(host.as_ptr() as u64);
    out.show("pointer host vec: mempool handle", d.pointer_get_attribute(host_ptr, PointerAttribute::MempoolHandle));
    out.show("pointer host vec: device ordinal", d.pointer_get_attribute(host_ptr, PointerAttribute::DeviceOrdinal));
    out.show(
        "pointer 0x1000: mempool handle",
        d.pointer_get_attribute(DevicePtr(0x1000), PointerAttribute::MempoolHandle),
    );
    out.show("pointer null: mempool handle", d.pointer_get_attribute(DevicePtr(0), PointerAttribute::MempoolHandle));

    let c0 = d.ctx_get_current()?.ok_or_else(|| peerpool::Error::InvalidArgument("gpu0 not current".into()))?;
    let ctx1 = system.enter(1)?;
    let c1 = d.ctx_get_current()?.ok_or_else(|| peerpool::Error::InvalidArgument("gpu1 not current".into()))?;
    let local = d.mem_alloc_from_pool_async(1 << 20, d.device_get_default_mem_pool(1)?, Stream::LEGACY)?;
    d.stream_synchronize(Stream::LEGACY)?;
    let sync = || d.stream_synchronize(Stream::LEGACY);
    let s = Stream::LEGACY;
    out.show(
        "gpu1 ctx: dtod from granted gpu0 pool",
        d.memcpy_dtod_async(local, granted, 1 << 20, s).and_then(|_| sync()),
    );
    out.show(
        "gpu1 ctx: dtod to granted gpu0 pool",
        d.memcpy_dtod_async(granted, local, 1 << 20, s).and_then(|_| sync()),
    );
    out.show("gpu1 ctx: dtod from ungranted gpu0 pool", d.memcpy_dtod_async(local, ungranted, 1 << 20, s));
    out.show("gpu1 ctx: dtod to ungranted gpu0 pool", d.memcpy_dtod_async(ungranted, local, 1 << 20, s));
    out.show("gpu1 ctx: sync after ungranted dtod", sync());
    let peer = |dst, dst_ctx, src, src_ctx| PeerCopy { dst, dst_ctx, src, src_ctx, bytes: 1 << 20 };
    out.show(
        "gpu1 ctx: peer copy from ungranted gpu0 pool",
        d.memcpy_peer_async(peer(local, c1, ungranted, c0), s).and_then(|_| sync()),
    );
    out.show(
        "gpu1 ctx: peer copy to ungranted gpu0 pool",
        d.memcpy_peer_async(peer(ungranted, c0, local, c1), s).and_then(|_| sync()),
    );
    out.show("gpu1 ctx: memset ungranted gpu0 pool", d.memset_d32_async(ungranted, 1, 16, s).and_then(|_| sync()));
    out.show("gpu1 ctx: memset granted gpu0 pool", d.memset_d32_async(granted, 1, 16, s).and_then(|_| sync()));
    let mut sixteen = [0u8; 16];
    out.show("gpu1 ctx: dtoh ungranted gpu0 pool", d.memcpy_dtoh(&mut sixteen, ungranted));
    out.show("gpu1 ctx: htod ungranted gpu0 pool", d.memcpy_htod(ungranted, &[0u8; 16]));
    out.show(
        "gpu1 ctx: alloc from gpu0 pool on gpu1 stream",
        d.mem_alloc_from_pool_async(4096, pool, s).and_then(|p| sync().map(|_| p)).map(|p| d.mem_free_async(p, s)),
    );
    out.show("gpu1 ctx: free gpu0 pool ptr", d.mem_free_async(ungranted, s).and_then(|_| sync()));
    drop(ctx1);
    out.show("revoke with live allocations", d.mem_pool_set_access(pool, &[none(1)]));
    then(&mut out);
    out.show("free granted", d.mem_free_async(granted, s).and_then(|_| sync()));
    out.show("double free", d.mem_free_async(granted, s).and_then(|_| sync()));
    out.show("pointer freed: mempool handle", d.pointer_get_attribute(granted, PointerAttribute::MempoolHandle));
    out.show("cuMemFree legacy", d.mem_free(legacy));

    d.mem_pool_set_access(second, &[rw(1)])?;
    out.show("destroy granted pool with no allocations", d.mem_pool_destroy(second));
    let mut reused = 0;
    for _ in 0..8 {
        let fresh = d.mem_pool_create(&props)?;
        if fresh == second {
            reused += 1;
            out.show("recycled handle: peer access", d.mem_pool_get_access(fresh, 1));
        }
        d.mem_pool_destroy(fresh)?;
    }
    out.0.push(format!("recycled handles in 8 creates => {reused}"));
    out.show("destroy pool", d.mem_pool_destroy(pool));
    Ok((out, pool))
}

/// The failure's `CudaCode` name, `None` on success.
fn code<T>(r: Result<T, peerpool::CudaError>) -> Option<String> {
    r.err().map(|e| e.code_name())
}

fn two_h200(options: SimOptions) -> (Arc<SimDriver>, System) {
    let sim = Arc::new(SimDriver::with_options(Topology::two_h200(), options));
    (sim.clone(), System::with_driver(sim).expect("the sim opens"))
}

#[test]
fn driver_probe_txt_replayed_line_by_line() {
    let (lines, _) = replay(&two_h200(SimOptions::default())).expect("the replay runs");
    let expected: Vec<&str> = PROBE.lines().take_while(|l| !l.starts_with(KNOWN_DIFFERENCE)).collect();
    let mut wrong = Vec::new();
    for (i, want) in expected.iter().enumerate() {
        let got = lines.0.get(i).map_or("<missing>", String::as_str);
        if got != *want {
            wrong.push(format!("driver_probe.txt line {}:\n  hardware: {want}\n  sim:      {got}", i + 1));
        }
    }
    assert!(wrong.is_empty(), "{} of {} probe lines differ:\n{}", wrong.len(), expected.len(), wrong.join("\n"));
    assert_eq!(lines.0.len(), expected.len(), "the sim printed lines the probe did not");
    assert!(expected.len() > 90, "the probe file lost lines: {}", expected.len());
}

/// driver_probe.txt, last lines: the real driver said `ok ReadWrite` for a destroyed pool and then
/// crashed in `cuMemPoolSetAccess` (exit 139). The simulator panics on destroyed handles, naming
/// them, so that any path that sends one fails its test loudly.
#[test]
fn driver_probe_destroyed_pool_is_a_known_difference() {
    let sim = two_h200(SimOptions::default());
    let (_, destroyed) = replay(&sim).expect("the replay runs");
    let (d, system) = &sim;
    let _ctx = system.enter(0).expect("enter gpu0");
    let grant = [AccessDesc { device: 1, access: Access::ReadWrite }];
    let panics = [
        std::panic::catch_unwind(|| d.mem_pool_get_access(destroyed, 0)).map(drop),
        std::panic::catch_unwind(|| d.mem_pool_set_access(destroyed, &grant)).map(drop),
        std::panic::catch_unwind(|| d.mem_pool_destroy(destroyed)).map(drop),
    ];
    for panic in panics {
        let panic = panic.expect_err("a destroyed pool's handle panics");
        let message = panic.downcast_ref::<String>().map_or("", String::as_str);
        assert!(message.contains("destroyed pool") && message.contains(&format!("{:#x}", destroyed.0)), "{message}");
    }
    let default = d.device_get_default_mem_pool(0).expect("default pool");
    assert_eq!(code(d.mem_pool_destroy(default)), Some("CUDA_ERROR_INVALID_VALUE".into()));
}

/// driver_probe.txt: `recycled handles in 8 creates => 0` on the H200s. With recycling switched
/// on (nvbug 5698116, seen on other drivers) every create reuses the handle, grant included.
#[test]
fn driver_probe_recycled_handles_when_emulating_nvbug_5698116() {
    let (lines, _) =
        replay(&two_h200(SimOptions { recycle_pool_handles: true })).expect("the replay runs with recycling");
    let recycled: Vec<&String> = lines.0.iter().filter(|l| l.starts_with("recycled handle: peer access")).collect();
    assert_eq!(recycled.len(), 8, "{:#?}", lines.0);
    assert!(recycled.iter().all(|l| l.ends_with("=> ok ReadWrite")), "{recycled:?}");
    assert!(lines.0.contains(&"recycled handles in 8 creates => 8".to_string()));
}
