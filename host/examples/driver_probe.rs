//! Records how the real driver answers the edge cases the simulator must reproduce.
//!
//! Run on a machine with two GPUs: `cargo run --release --example driver_probe`. Each line is
//! `case => result`. The output is committed under `docs/hardware/` and the simulator's
//! fidelity tests are written against it. Cases that could crash the process come last.
//!
//! Safety: the probe calls the seam's `unsafe` methods with the handles and memory it made, and
//! at the end, on purpose, with what breaks their contract (a destroyed pool's handle crashed
//! the real driver): that is what it records. Run it in a process of its own, never as a library.

use peerpool::driver::*;
use peerpool::{Error, System};
use std::io::Write;

fn show<T: std::fmt::Debug>(case: &str, r: Result<T, peerpool::CudaError>) {
    let text = match r {
        Ok(v) => format!("ok {v:?}"),
        Err(e) => format!("err {}", e.code_name()),
    };
    println!("{case} => {text}");
    let _ = std::io::stdout().flush();
}

fn main() -> Result<(), Error> {
    // SAFETY: see the module docs: the probe passes what it made, and last, on purpose,
    // what breaks the contract; it runs in a process of its own.
    unsafe {
        match std::env::args().nth(1).as_deref() {
            Some("destroy-live") => return destroy_with_live_allocation(),
            Some("fabric") => return fabric_pool(true),
            Some("fabric-noexport") => return fabric_pool(false),
            _ => {}
        }
        let system = System::open()?;
        let d = system.driver().clone();
        let n = system.device_count();
        println!("devices => {n}");
        if n < 2 {
            println!("needs two GPUs");
            return Ok(());
        }
        let _ctx0 = system.enter(0)?;
        let rw = |device| AccessDesc { device, access: Access::ReadWrite };
        let none = |device| AccessDesc { device, access: Access::None };
        let props = PoolProps { device: 0, ..PoolProps::default() };
        let pool = d.mem_pool_create(&props)?;
        show("get_access(pool, owner)", d.mem_pool_get_access(pool, 0));
        show("get_access(pool, peer) fresh", d.mem_pool_get_access(pool, 1));
        show("get_access(pool, 2)", d.mem_pool_get_access(pool, 2));
        show("get_access(pool, 99)", d.mem_pool_get_access(pool, 99));
        show("get_access(pool, -1)", d.mem_pool_get_access(pool, -1));
        show("set_access(pool, [])", d.mem_pool_set_access(pool, &[]));
        show("set_access(pool, [owner rw])", d.mem_pool_set_access(pool, &[rw(0)]));
        show("set_access(pool, [owner none])", d.mem_pool_set_access(pool, &[none(0)]));
        show("set_access(pool, [peer rw, owner none])", d.mem_pool_set_access(pool, &[rw(1), none(0)]));
        show("  then get_access(pool, peer)", d.mem_pool_get_access(pool, 1));
        show("set_access(pool, [owner none, peer rw])", d.mem_pool_set_access(pool, &[none(0), rw(1)]));
        show("  then get_access(pool, peer)", d.mem_pool_get_access(pool, 1));
        show("set_access(pool, [peer rw, 99 rw])", d.mem_pool_set_access(pool, &[rw(1), rw(99)]));
        show("  then get_access(pool, peer)", d.mem_pool_get_access(pool, 1));
        show("set_access(pool, [99 rw])", d.mem_pool_set_access(pool, &[rw(99)]));
        show("set_access(pool, [-1 rw])", d.mem_pool_set_access(pool, &[rw(-1)]));
        show(
            "set_access(pool, [peer read])",
            d.mem_pool_set_access(pool, &[AccessDesc { device: 1, access: Access::Read }]),
        );
        show("  then get_access(pool, peer)", d.mem_pool_get_access(pool, 1));
        show(
            "set_access(pool, [owner read])",
            d.mem_pool_set_access(pool, &[AccessDesc { device: 0, access: Access::Read }]),
        );
        show("set_access(pool, [peer rw, peer none])", d.mem_pool_set_access(pool, &[rw(1), none(1)]));
        show("  then get_access(pool, peer)", d.mem_pool_get_access(pool, 1));
        show("set_access(pool, [peer none, peer rw])", d.mem_pool_set_access(pool, &[none(1), rw(1)]));
        show("  then get_access(pool, peer)", d.mem_pool_get_access(pool, 1));
        show("set_access(pool, [peer rw]) repeat", d.mem_pool_set_access(pool, &[rw(1)]));
        show("set_access(pool, [peer none])", d.mem_pool_set_access(pool, &[none(1)]));
        show("set_access(pool, [peer none]) repeat", d.mem_pool_set_access(pool, &[none(1)]));
        show("set_access(null pool, [peer rw])", d.mem_pool_set_access(Pool(0), &[rw(1)]));
        show("get_access(null pool, peer)", d.mem_pool_get_access(Pool(0), 1));
        show("mem_pool_create(device 99)", d.mem_pool_create(&PoolProps { device: 99, ..props }));
        show("mem_pool_create(device -1)", d.mem_pool_create(&PoolProps { device: -1, ..props }));
        show(
            "mem_pool_create(posix fd)",
            d.mem_pool_create(&PoolProps { handle_types: HandleKinds::POSIX_FD, ..props })
                .map(|p| d.mem_pool_destroy(p)),
        );
        show(
            "mem_pool_create(posix fd | fabric)",
            d.mem_pool_create(&PoolProps { handle_types: HandleKinds(0x9), ..props }).map(|p| d.mem_pool_destroy(p)),
        );
        show("device_get_default_mem_pool(99)", d.device_get_default_mem_pool(99));
        show("device_get_mem_pool(99)", d.device_get_mem_pool(99));
        show("device_can_access_peer(0, 0)", d.device_can_access_peer(0, 0));
        show("device_can_access_peer(0, 99)", d.device_can_access_peer(0, 99));
        show("p2p_attribute(rank, 0, 0)", d.device_get_p2p_attribute(P2pAttribute::PerformanceRank, 0, 0));
        show("primary_ctx_retain(99)", d.primary_ctx_retain(99));
        show("ctx_get_device (gpu0 current)", d.ctx_get_device());

        // Pools are independent; the default pool is untouched by a grant on another pool.
        let second = d.mem_pool_create(&props)?;
        let default = d.device_get_default_mem_pool(0)?;
        show("default == current", d.device_get_mem_pool(0).map(|p| p == default));
        d.mem_pool_set_access(pool, &[rw(1)])?;
        show("grant pool; second pool access(peer)", d.mem_pool_get_access(second, 1));
        show("grant pool; default pool access(peer)", d.mem_pool_get_access(default, 1));
        show("set_mem_pool(0, second)", d.device_set_mem_pool(0, second));
        show("  then device_get_mem_pool(0) == second", d.device_get_mem_pool(0).map(|p| p == second));
        show("set_mem_pool(1, pool of gpu0)", d.device_set_mem_pool(1, pool));
        show("restore set_mem_pool(0, default)", d.device_set_mem_pool(0, default));
        let default1 = d.device_get_default_mem_pool(1)?;
        show("restore set_mem_pool(1, default)", d.device_set_mem_pool(1, default1));

        // Pointer attributes.
        let granted = d.mem_alloc_from_pool_async(1 << 20, pool, Stream::LEGACY)?;
        let ungranted = d.mem_alloc_from_pool_async(1 << 20, second, Stream::LEGACY)?;
        let legacy = d.mem_alloc(1 << 20)?;
        d.stream_synchronize(Stream::LEGACY)?;
        show("alloc_from_pool(0 bytes)", d.mem_alloc_from_pool_async(0, pool, Stream::LEGACY));
        for (what, ptr) in
            [("pool ptr", granted), ("pool ptr + 4096", granted.offset(4096)), ("cuMemAlloc ptr", legacy)]
        {
            show(
                &format!("pointer {what}: mempool handle == pool"),
                d.pointer_get_attribute(ptr, PointerAttribute::MempoolHandle).map(|h| h == pool.0),
            );
            show(
                &format!("pointer {what}: mempool handle is null"),
                d.pointer_get_attribute(ptr, PointerAttribute::MempoolHandle).map(|h| h == 0),
            );
            show(
                &format!("pointer {what}: device ordinal"),
                d.pointer_get_attribute(ptr, PointerAttribute::DeviceOrdinal),
            );
            show(
                &format!("pointer {what}: legacy ipc"),
                d.pointer_get_attribute(ptr, PointerAttribute::IsLegacyCudaIpcCapable),
            );
            show(
                &format!("pointer {what}: handle types"),
                d.pointer_get_attribute(ptr, PointerAttribute::AllowedHandleTypes),
            );
            show(&format!("pointer {what}: range size"), d.pointer_get_attribute(ptr, PointerAttribute::RangeSize));
        }
        let host = [0u8; 64];
        show(
            "pointer host vec: mempool handle",
            d.pointer_get_attribute(DevicePtr(host.as_ptr() as u64), PointerAttribute::MempoolHandle),
        );
        show(
            "pointer host vec: device ordinal",
            d.pointer_get_attribute(DevicePtr(host.as_ptr() as u64), PointerAttribute::DeviceOrdinal),
        );
        show(
            "pointer 0x1000: mempool handle",
            d.pointer_get_attribute(DevicePtr(0x1000), PointerAttribute::MempoolHandle),
        );
        show("pointer null: mempool handle", d.pointer_get_attribute(DevicePtr(0), PointerAttribute::MempoolHandle));

        // Copies from gpu1's context: the copy engine needs the grant, cuMemcpyPeer does not.
        let c0 = system.driver().ctx_get_current()?.expect("gpu0 current");
        let _ctx1 = system.enter(1)?;
        let c1 = system.driver().ctx_get_current()?.expect("gpu1 current");
        let local_pool = d.device_get_default_mem_pool(1)?;
        let local = d.mem_alloc_from_pool_async(1 << 20, local_pool, Stream::LEGACY)?;
        d.stream_synchronize(Stream::LEGACY)?;
        show(
            "gpu1 ctx: dtod from granted gpu0 pool",
            d.memcpy_dtod_async(local, granted, 1 << 20, Stream::LEGACY)
                .and_then(|_| d.stream_synchronize(Stream::LEGACY)),
        );
        show(
            "gpu1 ctx: dtod to granted gpu0 pool",
            d.memcpy_dtod_async(granted, local, 1 << 20, Stream::LEGACY)
                .and_then(|_| d.stream_synchronize(Stream::LEGACY)),
        );
        show("gpu1 ctx: dtod from ungranted gpu0 pool", d.memcpy_dtod_async(local, ungranted, 1 << 20, Stream::LEGACY));
        show("gpu1 ctx: dtod to ungranted gpu0 pool", d.memcpy_dtod_async(ungranted, local, 1 << 20, Stream::LEGACY));
        show("gpu1 ctx: sync after ungranted dtod", d.stream_synchronize(Stream::LEGACY));
        let peer = |dst, dst_ctx, src, src_ctx| PeerCopy { dst, dst_ctx, src, src_ctx, bytes: 1 << 20 };
        show(
            "gpu1 ctx: peer copy from ungranted gpu0 pool",
            d.memcpy_peer_async(peer(local, c1, ungranted, c0), Stream::LEGACY)
                .and_then(|_| d.stream_synchronize(Stream::LEGACY)),
        );
        show(
            "gpu1 ctx: peer copy to ungranted gpu0 pool",
            d.memcpy_peer_async(peer(ungranted, c0, local, c1), Stream::LEGACY)
                .and_then(|_| d.stream_synchronize(Stream::LEGACY)),
        );
        show(
            "gpu1 ctx: memset ungranted gpu0 pool",
            d.memset_d32_async(ungranted, 1, 16, Stream::LEGACY).and_then(|_| d.stream_synchronize(Stream::LEGACY)),
        );
        show(
            "gpu1 ctx: memset granted gpu0 pool",
            d.memset_d32_async(granted, 1, 16, Stream::LEGACY).and_then(|_| d.stream_synchronize(Stream::LEGACY)),
        );
        show("gpu1 ctx: dtoh ungranted gpu0 pool", {
            let mut b = [0u8; 16];
            d.memcpy_dtoh(&mut b, ungranted)
        });
        show("gpu1 ctx: htod ungranted gpu0 pool", d.memcpy_htod(ungranted, &[0u8; 16]));
        show(
            "gpu1 ctx: alloc from gpu0 pool on gpu1 stream",
            d.mem_alloc_from_pool_async(4096, pool, Stream::LEGACY)
                .and_then(|p| d.stream_synchronize(Stream::LEGACY).map(|_| p))
                .map(|p| d.mem_free_async(p, Stream::LEGACY)),
        );
        show(
            "gpu1 ctx: free gpu0 pool ptr",
            d.mem_free_async(ungranted, Stream::LEGACY).and_then(|_| d.stream_synchronize(Stream::LEGACY)),
        );
        drop(_ctx1);
        show("revoke with live allocations", d.mem_pool_set_access(pool, &[none(1)]));
        show("  then get_access(pool, peer)", d.mem_pool_get_access(pool, 1));
        show(
            "free granted",
            d.mem_free_async(granted, Stream::LEGACY).and_then(|_| d.stream_synchronize(Stream::LEGACY)),
        );
        show(
            "double free",
            d.mem_free_async(granted, Stream::LEGACY).and_then(|_| d.stream_synchronize(Stream::LEGACY)),
        );
        show("pointer freed: mempool handle", d.pointer_get_attribute(granted, PointerAttribute::MempoolHandle));
        show("cuMemFree legacy", d.mem_free(legacy));

        // Handle recycling: does a new pool reuse a destroyed handle, and with which access?
        d.mem_pool_set_access(second, &[rw(1)])?;
        let old = second;
        show("destroy granted pool with no allocations", d.mem_pool_destroy(second));
        let mut reused = 0;
        for _ in 0..8 {
            let fresh = d.mem_pool_create(&props)?;
            if fresh == old {
                reused += 1;
                show("recycled handle: peer access", d.mem_pool_get_access(fresh, 1));
            }
            d.mem_pool_destroy(fresh)?;
        }
        println!("recycled handles in 8 creates => {reused}");
        show("destroy pool", d.mem_pool_destroy(pool));
        show("destroyed pool: get_access(owner)", d.mem_pool_get_access(pool, 0));
        show("destroyed pool: set_access(peer rw)", d.mem_pool_set_access(pool, &[rw(1)]));
        show("destroyed pool: destroy again", d.mem_pool_destroy(pool));
        show("destroy default pool", d.mem_pool_destroy(default));
        println!("probe done");
        Ok(())
    }
}

/// `driver_probe destroy-live`: a pool destroyed while an allocation is live, then the free.
fn destroy_with_live_allocation() -> Result<(), Error> {
    // SAFETY: see the module docs: the probe passes what it made, and last, on purpose,
    // what breaks the contract; it runs in a process of its own.
    unsafe {
        let system = System::open()?;
        let d = system.driver().clone();
        let _ctx0 = system.enter(0)?;
        let pool = d.mem_pool_create(&PoolProps { device: 0, ..PoolProps::default() })?;
        d.mem_pool_set_access(pool, &[AccessDesc { device: 1, access: Access::ReadWrite }])?;
        let ptr = d.mem_alloc_from_pool_async(1 << 20, pool, Stream::LEGACY)?;
        show("alloc then sync", d.stream_synchronize(Stream::LEGACY));
        show(
            "revoke peer (pool has a live allocation)",
            d.mem_pool_set_access(pool, &[AccessDesc { device: 1, access: Access::None }]),
        );
        show("destroy pool with a live allocation", d.mem_pool_destroy(pool));
        show(
            "pointer attribute mempool after destroy",
            d.pointer_get_attribute(ptr, PointerAttribute::MempoolHandle).map(|h| h == pool.0),
        );
        show("free after destroy", d.mem_free_async(ptr, Stream::LEGACY));
        show("sync after free", d.stream_synchronize(Stream::LEGACY));
        println!("destroy-live done");
        Ok(())
    }
}

/// `driver_probe fabric` / `fabric-noexport`: a fabric-exportable pool's life, one call per
/// line, with or without export attempts (the suite saw a crash after a refused fabric export).
fn fabric_pool(export: bool) -> Result<(), Error> {
    // SAFETY: see the module docs: the probe passes what it made, and last, on purpose,
    // what breaks the contract; it runs in a process of its own.
    unsafe {
        let system = System::open()?;
        let d = system.driver().clone();
        let _ctx0 = system.enter(0)?;
        let pool = d.mem_pool_create(&PoolProps { device: 0, handle_types: HandleKinds::FABRIC, max_size: 0 })?;
        println!("create fabric pool => ok");
        let ptr = d.mem_alloc_from_pool_async(1 << 20, pool, Stream::LEGACY)?;
        show("alloc from fabric pool + sync", d.stream_synchronize(Stream::LEGACY));
        if export {
            let fabric = d.mem_pool_export_to_shareable_handle(pool, HandleKind::Fabric);
            show("export fabric handle", fabric.map(|_| ()));
            let fd = d.mem_pool_export_to_shareable_handle(pool, HandleKind::PosixFd);
            show("export posix fd from a fabric-only pool", fd.map(|_| ()));
        }
        show("pool access of peer", d.mem_pool_get_access(pool, 1));
        show("free", d.mem_free_async(ptr, Stream::LEGACY));
        show("sync after free", d.stream_synchronize(Stream::LEGACY));
        show("destroy fabric pool", d.mem_pool_destroy(pool));
        println!("fabric done");
        Ok(())
    }
}
