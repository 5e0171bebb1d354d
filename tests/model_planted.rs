//! Planted bugs, caught by the model suite and shrunk to at most four steps. Each bug lives in a
//! test-only wrapper of the driver seam below (never in production code):
//! - a grant applied to the owner's current pool instead of the pool given;
//! - a set-to-list update that skips one revoke;
//! - an error path that leaves another device's context current.

use peerpool::driver::*;
use peerpool::fault::FaultInjector;
use peerpool::sim::{SimDriver, Topology, catalog_topology};
use peerpool::{CudaError, System};
use peerpool_fixtures::model::{Caps, CheckConfig, Mix, OwnedPools, Target, check};
use peerpool_tests::SimProber;
use std::collections::HashMap;
use std::ffi::CStr;
use std::sync::{Arc, Mutex};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bug {
    GrantsCurrentPool,
    SkipsOneRevoke,
    LeavesContextOnError,
}

/// Forwards every call to `inner`, except where `bug` says otherwise.
struct Planted {
    inner: Arc<dyn Driver>,
    bug: Bug,
    owners: Mutex<HashMap<Pool, i32>>,
}

impl Planted {
    /// The planted error path: after a failed call, the last device's context is left current.
    fn after<T>(&self, result: DriverResult<T>) -> DriverResult<T> {
        if self.bug == Bug::LeavesContextOnError && result.as_ref().is_err_and(|e: &CudaError| !e.sticky) {
            let last = self.inner.device_get_count().unwrap_or(1) - 1;
            if let Ok(context) = self.inner.primary_ctx_retain(last) {
                let _ = self.inner.ctx_set_current(Some(context));
                let _ = self.inner.primary_ctx_release(last);
            }
        }
        result
    }
}

macro_rules! forward {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        $(fn $name(&self, $($arg: $ty),*) -> DriverResult<$ret> { self.after(self.inner.$name($($arg),*)) })*
    };
}

impl Driver for Planted {
    fn describe(&self) -> String {
        format!("{} with the planted bug {:?}", self.inner.describe(), self.bug)
    }

    fn mem_pool_create(&self, props: &PoolProps) -> DriverResult<Pool> {
        let pool = self.after(self.inner.mem_pool_create(props))?;
        self.owners.lock().unwrap().insert(pool, props.device);
        Ok(pool)
    }

    fn mem_pool_set_access(&self, pool: Pool, map: &[AccessDesc]) -> DriverResult<()> {
        let owner = self.owners.lock().unwrap().get(&pool).copied();
        match (self.bug, owner) {
            (Bug::GrantsCurrentPool, Some(owner)) if map.iter().all(|d| d.access == Access::ReadWrite) => {
                let current = self.inner.device_get_mem_pool(owner)?;
                self.after(self.inner.mem_pool_set_access(current, map))
            }
            (Bug::SkipsOneRevoke, _) if map.len() > 1 => {
                let mut kept = map.to_vec();
                if let Some(last) = kept.iter().rposition(|d| d.access == Access::None) {
                    kept.remove(last);
                }
                self.after(self.inner.mem_pool_set_access(pool, &kept))
            }
            _ => self.after(self.inner.mem_pool_set_access(pool, map)),
        }
    }

    forward! {
        driver_get_version() -> i32;
        device_get_count() -> i32;
        device_get_name(device: i32) -> String;
        device_get_attribute(device: i32, attribute: DeviceAttribute) -> i32;
        device_total_mem(device: i32) -> u64;
        device_can_access_peer(device: i32, peer: i32) -> bool;
        device_get_p2p_attribute(attribute: P2pAttribute, src: i32, dst: i32) -> i32;
        primary_ctx_retain(device: i32) -> Context;
        primary_ctx_release(device: i32) -> ();
        ctx_get_current() -> Option<Context>;
        ctx_set_current(context: Option<Context>) -> ();
        ctx_get_device() -> i32;
        ctx_synchronize() -> ();
        device_get_default_mem_pool(device: i32) -> Pool;
        device_get_mem_pool(device: i32) -> Pool;
        device_set_mem_pool(device: i32, pool: Pool) -> ();
        mem_pool_destroy(pool: Pool) -> ();
        mem_pool_get_access(pool: Pool, device: i32) -> Access;
        mem_alloc(bytes: usize) -> DevicePtr;
        mem_free(ptr: DevicePtr) -> ();
        mem_alloc_from_pool_async(bytes: usize, pool: Pool, stream: Stream) -> DevicePtr;
        mem_free_async(ptr: DevicePtr, stream: Stream) -> ();
        stream_create() -> Stream;
        stream_destroy(stream: Stream) -> ();
        stream_synchronize(stream: Stream) -> ();
        memcpy_htod(dst: DevicePtr, src: &[u8]) -> ();
        memcpy_dtoh(dst: &mut [u8], src: DevicePtr) -> ();
        memcpy_dtod_async(dst: DevicePtr, src: DevicePtr, bytes: usize, stream: Stream) -> ();
        memcpy_peer_async(copy: PeerCopy, stream: Stream) -> ();
        memset_d32_async(dst: DevicePtr, value: u32, words: usize, stream: Stream) -> ();
        module_load_data(image: ModuleImage<'_>) -> Module;
        module_unload(module: Module) -> ();
        module_get_function(module: Module, name: &CStr) -> Function;
        launch_kernel(function: Function, shape: LaunchShape, stream: Stream, args: &[KernelArg]) -> ();
        event_create() -> Event;
        event_record(event: Event, stream: Stream) -> ();
        event_synchronize(event: Event) -> ();
        event_elapsed_time(start: Event, end: Event) -> f32;
        event_destroy(event: Event) -> ();
        pointer_get_attribute(ptr: DevicePtr, attribute: PointerAttribute) -> u64;
        mem_pool_export_to_shareable_handle(pool: Pool, handle: ShareHandle) -> ShareableHandle;
        mem_pool_import_from_shareable_handle(handle: ShareableRef<'_>) -> Pool;
        mem_pool_export_pointer(ptr: DevicePtr) -> PoolPtrExportData;
        mem_pool_import_pointer(pool: Pool, data: &PoolPtrExportData) -> DevicePtr;
        ipc_get_mem_handle(ptr: DevicePtr) -> IpcMemHandle;
        ipc_open_mem_handle(handle: &IpcMemHandle) -> DevicePtr;
        ipc_close_mem_handle(ptr: DevicePtr) -> ();
        mem_get_allocation_granularity(props: &AllocationProps, option: Granularity) -> usize;
        mem_create(bytes: usize, props: &AllocationProps) -> MemHandle;
        mem_address_reserve(bytes: usize, alignment: usize) -> DevicePtr;
        mem_map(ptr: DevicePtr, bytes: usize, offset: usize, handle: MemHandle) -> ();
        mem_set_access(ptr: DevicePtr, bytes: usize, map: &[AccessDesc]) -> ();
        mem_unmap(ptr: DevicePtr, bytes: usize) -> ();
        mem_address_free(ptr: DevicePtr, bytes: usize) -> ();
        mem_release(handle: MemHandle) -> ();
        mem_export_to_shareable_handle(handle: MemHandle, kind: ShareHandle) -> ShareableHandle;
        mem_import_from_shareable_handle(handle: ShareableRef<'_>) -> MemHandle;
        mem_retain_allocation_handle(ptr: DevicePtr) -> MemHandle;
    }
}

/// Runs the model on `topology` with `bug` planted; returns the shrunk failing sequence.
fn catch(bug: Bug, topology: Topology) -> peerpool_fixtures::model::Failure {
    let caps = Arc::new(Caps::of_topology(&topology));
    let config = CheckConfig {
        cases: 1000,
        regressions: None,
        mix: Mix { sticky_faults: 0, ..Mix::default() },
        ..Default::default()
    };
    let make = || {
        let sim = Arc::new(SimDriver::new(topology.clone()));
        let injector = Arc::new(FaultInjector::new(sim.clone()));
        let planted = Planted { inner: injector.clone(), bug, owners: Mutex::default() };
        let system = System::with_driver(Arc::new(planted)).map_err(|e| e.to_string())?;
        system.set_probe_bytes(4096);
        Ok(Target {
            system,
            injector: Some(injector),
            allocator: Arc::new(OwnedPools),
            prober: Some(Arc::new(SimProber(sim))),
        })
    };
    let failure = *check(caps, &config, make).expect_err("the planted bug must be caught");
    println!("{bug:?} caught:\n{failure}");
    failure
}

#[test]
fn a_grant_to_the_current_pool_is_caught_in_at_most_four_steps() {
    let failure = catch(Bug::GrantsCurrentPool, Topology::two_h200());
    assert!(failure.steps.len() <= 4, "{failure}");
}

#[test]
fn a_skipped_revoke_is_caught_in_at_most_four_steps() {
    // Two peers are needed for a call with a grant and a revoke, or two revokes.
    let failure = catch(Bug::SkipsOneRevoke, catalog_topology("eight_gpu_nvswitch").unwrap());
    assert!(failure.steps.len() <= 4, "{failure}");
}

#[test]
fn a_context_left_current_on_an_error_path_is_caught_in_at_most_four_steps() {
    let failure = catch(Bug::LeavesContextOnError, Topology::two_h200());
    assert!(failure.steps.len() <= 4, "{failure}");
    assert!(failure.message.contains("current context"), "{failure}");
}
