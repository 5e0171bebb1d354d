#![allow(unused_unsafe)] // the calls marked safe in the table are called like the others
//! The fault injector: Nth-call and every-call rules, prefixes, stickiness, reset and re-arm,
//! the recorded call list, seeded random plans, and call names that are the real driver's.
//
// SAFETY (every `unsafe` block below): the driver is a simulator, or a fault injector over
// one, which checks every handle, range and argument list itself.

use peerpool::driver::*;
use peerpool::fault::{FaultInjector, FaultPlan, Rule, When};
use peerpool::{CudaCode, CudaError, PoolOptions, System, ptx_image};
use peerpool_sim::{SimDriver, Topology};
use std::collections::BTreeSet;
use std::sync::Arc;

const INVALID: CudaCode = CudaCode::CUDA_ERROR_INVALID_VALUE;

fn injector(plan: FaultPlan) -> (Arc<SimDriver>, Arc<FaultInjector>) {
    let sim = Arc::new(SimDriver::new(Topology::two_h200()));
    (sim.clone(), Arc::new(FaultInjector::with_plan(sim, plan)))
}

fn rw(device: i32) -> [AccessDesc; 1] {
    [AccessDesc { device, access: Access::ReadWrite }]
}

#[test]
fn nth_rule_fails_exactly_that_call_and_applies_nothing() {
    let (_, d) = injector(FaultPlan::new().with(Rule::nth("cuMemPoolSetAccess", 2, INVALID)));
    let pool = d.device_get_default_mem_pool(0).unwrap();
    unsafe { d.mem_pool_set_access(pool, &[]) }.unwrap();
    let error = unsafe { d.mem_pool_set_access(pool, &rw(1)) }.unwrap_err();
    assert_eq!(error, CudaError { call: "cuMemPoolSetAccess", code: INVALID, sticky: false });
    assert_eq!(
        unsafe { d.mem_pool_get_access(pool, 1) }.unwrap(),
        Access::None,
        "the failed call never reached the driver"
    );
    unsafe { d.mem_pool_set_access(pool, &rw(1)) }.unwrap();
    assert_eq!(unsafe { d.mem_pool_get_access(pool, 1) }.unwrap(), Access::ReadWrite);
    let injected = d.injected();
    assert_eq!(injected.len(), 1);
    assert_eq!((injected[0].call, injected[0].nth, injected[0].sticky), ("cuMemPoolSetAccess", 2, false));
    assert_eq!(d.count("cuMemPoolSetAccess"), 3);
}

#[test]
fn every_rule_and_prefix_rule() {
    let plan = FaultPlan::new()
        .with(Rule::every("cuDeviceGetName", CudaCode::CUDA_ERROR_UNKNOWN))
        .with(Rule::every("cuDeviceGetP2P*", CudaCode::CUDA_ERROR_NOT_SUPPORTED));
    let (_, d) = injector(plan);
    for _ in 0..3 {
        assert_eq!(code(d.device_get_name(0)).as_deref(), Some("CUDA_ERROR_UNKNOWN"));
    }
    let rank = d.device_get_p2p_attribute(P2pAttribute::PerformanceRank, 0, 1);
    assert_eq!(code(rank).as_deref(), Some("CUDA_ERROR_NOT_SUPPORTED"));
    assert!(d.device_total_mem(0).is_ok());
    assert_eq!(d.injected().len(), 4);
}

#[test]
fn a_sticky_rule_kills_every_later_call_until_reset() {
    let (_, d) =
        injector(FaultPlan::new().with(Rule::nth("cuStreamSynchronize", 1, CudaCode::CUDA_ERROR_ILLEGAL_ADDRESS)));
    assert!(matches!(d.ctx_get_current(), Ok(None)));
    let error = unsafe { d.stream_synchronize(Stream::LEGACY) }.unwrap_err();
    assert!(error.sticky);
    for error in [
        d.device_get_count().unwrap_err(),
        d.module_load_data(ModuleImage::Ptx(ptx_image())).unwrap_err(),
        unsafe { d.mem_pool_get_access(Pool(1), 0) }.unwrap_err(),
    ] {
        assert!(error.sticky && error.code == CudaCode::CUDA_ERROR_ILLEGAL_ADDRESS, "{error}");
    }
    assert_eq!(d.sticky_error(), Some(CudaCode::CUDA_ERROR_ILLEGAL_ADDRESS));
    d.reset();
    assert_eq!(d.sticky_error(), None);
    assert_eq!(d.calls(), Vec::<&str>::new());
    assert_eq!(d.device_get_count().unwrap(), 2);
    // Re-armed: the first synchronise after the reset fails again.
    assert!(unsafe { d.stream_synchronize(Stream::LEGACY) }.unwrap_err().sticky);
}

#[test]
fn stickiness_can_be_overridden_either_way() {
    let plan = FaultPlan::new()
        .with(Rule::nth("cuDeviceGetCount", 1, CudaCode::CUDA_ERROR_ILLEGAL_ADDRESS).sticky(false))
        .with(Rule::nth("cuDeviceGetCount", 3, INVALID).sticky(true));
    let (_, d) = injector(plan);
    assert!(!d.device_get_count().unwrap_err().sticky);
    assert_eq!(d.device_get_count().unwrap(), 2);
    assert!(d.device_get_count().unwrap_err().sticky);
    assert_eq!(code(d.driver_get_version()).as_deref(), Some("CUDA_ERROR_INVALID_VALUE"));
}

#[test]
fn arm_replaces_the_plan_and_add_rule_extends_it() {
    let (_, d) = injector(FaultPlan::new().with(Rule::every("cuDeviceGetCount", INVALID)));
    assert!(d.device_get_count().is_err());
    d.arm(FaultPlan::new());
    assert!(d.device_get_count().is_ok());
    d.add_rule(Rule::nth("cuDeviceGetCount", 2, INVALID));
    // A rule counts calls from its addition: the next call is its 1st, the one after its 2nd.
    assert!(d.device_get_count().is_ok());
    assert!(d.device_get_count().is_err());
    assert_eq!(d.count("cuDeviceGetCount"), 3, "counted since the arm");
}

#[test]
fn calls_are_recorded_in_order_with_counts() {
    let (_, d) = injector(FaultPlan::new());
    let system = System::with_driver(d.clone()).unwrap();
    let pool = system.create_pool(1, PoolOptions::default()).unwrap();
    let _memory = system.alloc(pool.as_ref(), 4096).unwrap();
    let calls = d.calls();
    assert_eq!(calls[0], "cuDeviceGetCount");
    let create = calls.iter().position(|&c| c == "cuMemPoolCreate").unwrap();
    let alloc = calls.iter().position(|&c| c == "cuMemAllocFromPoolAsync").unwrap();
    assert!(calls[..create].contains(&"cuDevicePrimaryCtxRetain"), "the pool is made in its owner's context");
    assert!(create < alloc);
    let counts = d.counts();
    assert_eq!(counts.values().sum::<u64>(), calls.len() as u64);
    for (name, n) in &counts {
        assert_eq!(calls.iter().filter(|c| *c == name).count() as u64, *n);
    }
}

#[test]
fn random_plans_are_seeded_and_name_recorded_call_sites() {
    let calls = ["cuCtxGetCurrent", "cuMemPoolCreate", "cuCtxGetCurrent", "cuMemAlloc", "cuMemFree"];
    let a = FaultPlan::random(42, &calls, 3);
    assert_eq!(a, FaultPlan::random(42, &calls, 3), "same seed, same plan");
    let plans: BTreeSet<String> = (0..32).map(|seed| format!("{:?}", FaultPlan::random(seed, &calls, 2))).collect();
    assert!(plans.len() > 8, "seeds vary the plan: {}", plans.len());
    for seed in 0..64 {
        for rule in FaultPlan::random(seed, &calls, 4).rules {
            let When::Nth(n) = rule.when else { panic!("random rules are Nth rules") };
            let seen = calls.iter().filter(|&&c| c == rule.call).count() as u64;
            assert!(n >= 1 && n <= seen, "{rule:?}");
            assert_eq!(rule.sticky, rule.code.is_sticky());
        }
    }
    assert!(FaultPlan::random(1, &[], 5).rules.is_empty());
}

/// A value of each argument type of the seam, valid or not: enough to reach every call.
trait Sample {
    fn sample() -> Self;
}

macro_rules! samples {
    ($($ty:ty => $value:expr;)*) => { $(impl Sample for $ty { fn sample() -> Self { $value } })* };
}

static POOL_PROPS: PoolProps = PoolProps { device: 0, handle_types: HandleKinds::NONE, max_size: 0 };
static ALLOC_PROPS: AllocationProps = AllocationProps { device: 0, handle_types: HandleKinds::POSIX_FD };
static FABRIC: FabricHandle = FabricHandle([0; 64]);
static EXPORT_DATA: PoolPtrExportData = PoolPtrExportData([0; 64]);
static IPC_HANDLE: IpcMemHandle = IpcMemHandle([0; 64]);

samples! {
    i32 => 0;
    u8 => 0;
    u32 => 0;
    u64 => 0;
    PoolAttribute => PoolAttribute::ReleaseThreshold;
    usize => 4;
    DeviceAttribute => DeviceAttribute::MultiprocessorCount;
    P2pAttribute => P2pAttribute::PerformanceRank;
    PointerAttribute => PointerAttribute::DeviceOrdinal;
    Granularity => Granularity::Minimum;
    HandleKind => HandleKind::PosixFd;
    Option<Context> => None;
    Context => Context(1);
    Pool => Pool(1);
    DevicePtr => DevicePtr(0x1000);
    Stream => Stream::LEGACY;
    Module => Module(1);
    Function => Function(1);
    Event => Event(1);
    MemHandle => MemHandle(1);
    LaunchShape => LaunchShape { grid: 1, block: 1 };
    PeerCopy => PeerCopy { dst: DevicePtr(0x1000), dst_ctx: Context(1), src: DevicePtr(0x1000), src_ctx: Context(1), bytes: 4 };
    &'static PoolProps => &POOL_PROPS;
    &'static AllocationProps => &ALLOC_PROPS;
    &'static PoolPtrExportData => &EXPORT_DATA;
    &'static IpcMemHandle => &IPC_HANDLE;
    &'static [AccessDesc] => &[];
    &'static [KernelArg] => &[];
    &'static [u8] => &[0; 4];
    &'static mut [u8] => &mut [];
    &'static std::ffi::CStr => c"pp_fill";
    ModuleImage<'static> => ModuleImage::Ptx(c"");
    ExportedHandleRef<'static> => ExportedHandleRef::Fabric(&FABRIC);
}

macro_rules! call_all {
    (() $( $(#[$doc:meta])* $safety:ident fn $method:ident($($arg:ident: $ty:ty),*) -> $out:ty
        = $call:ident @ $symbol:ident; )*) => {
        /// Every method of the seam once, in the table's order, with sample arguments.
        fn call_every_method(d: &dyn Driver) -> Vec<Option<CudaError>> {
            // SAFETY: `d` is a simulator (or an injector over one), which checks every handle.
            vec![$( unsafe { d.$method($(<$ty as Sample>::sample()),*) }.err(), )*]
        }
    };
}

peerpool::for_each_driver_call!(call_all);

#[test]
fn each_method_is_recorded_once_under_its_name_in_the_table() {
    let (_, d) = injector(FaultPlan::new());
    call_every_method(d.as_ref());
    let table: Vec<&str> = Call::ALL.iter().map(|c| c.name()).collect();
    assert_eq!(d.calls(), table);
    assert!(Call::ALL.iter().all(|c| Call::from_name(c.name()) == Some(*c)));
    assert_eq!(Call::cuMemAlloc.symbol(), "cuMemAlloc_v2");
}

#[test]
fn a_dead_sim_names_each_call_as_the_injector_does() {
    let sim = Arc::new(SimDriver::new(Topology::two_h200()));
    let system = System::with_driver(sim.clone()).unwrap();
    let pool = system.create_pool(0, PoolOptions::default()).unwrap();
    let memory = system.alloc(pool.as_ref(), 4096).unwrap();
    assert!(system.kernels(1).unwrap().fill(memory.words(1024).unwrap(), 1).unwrap_err().is_sticky());
    let d = FaultInjector::new(sim);
    let errors = call_every_method(&d);
    let names = d.calls();
    assert_eq!(errors.len(), names.len());
    for (error, name) in errors.into_iter().zip(names) {
        // Device queries and the current context's identity answer, as on an H200.
        let Some(error) = error else {
            assert!(peerpool_sim::ANSWERED_WHEN_DEAD.contains(&name), "{name} succeeded on a dead process");
            continue;
        };
        assert_eq!((error.call, error.code, error.sticky), (name, CudaCode::CUDA_ERROR_ILLEGAL_ADDRESS, true));
    }
}

#[test]
fn the_sim_names_bad_ordinals_as_cu_device_get() {
    let sim = SimDriver::new(Topology::two_h200());
    for error in [
        sim.device_get_name(5).unwrap_err(),
        sim.device_total_mem(-1).unwrap_err(),
        sim.device_can_access_peer(0, 9).unwrap_err(),
        sim.primary_ctx_retain(2).unwrap_err(),
        sim.device_get_default_mem_pool(99).unwrap_err(),
    ] {
        assert_eq!((error.call, error.code), ("cuDeviceGet", CudaCode::CUDA_ERROR_INVALID_DEVICE));
    }
    let error = sim.mem_pool_create(&PoolProps { device: 9, ..PoolProps::default() }).unwrap_err();
    assert_eq!((error.call, error.code), ("cuMemPoolCreate", CudaCode::CUDA_ERROR_INVALID_VALUE));
}

#[test]
fn times_cover_the_calls_that_reached_the_driver_and_clear_on_reset() {
    let (_, d) = injector(FaultPlan::new().with(Rule::nth("cuMemPoolSetAccess", 1, INVALID)));
    let pool = d.device_get_default_mem_pool(0).unwrap();
    assert!(unsafe { d.mem_pool_set_access(pool, &rw(1)) }.is_err());
    d.device_get_count().unwrap();
    let times = d.times();
    let names: BTreeSet<_> = times.keys().copied().collect();
    // The failed call was answered by the injector: it never reached the driver.
    assert_eq!(names, BTreeSet::from(["cuDeviceGetDefaultMemPool", "cuDeviceGetCount"]));
    assert_eq!(d.count("cuMemPoolSetAccess"), 1, "still counted");
    d.reset();
    assert!(d.times().is_empty());
}

/// The `CudaCode` name of a failed call, `None` for success.
fn code<T>(r: Result<T, CudaError>) -> Option<String> {
    r.err().map(|e| e.code_name())
}

/// A trace sink that takes `ok` writes, then fails every one, counting them all.
struct Failing {
    ok: usize,
    writes: Arc<std::sync::atomic::AtomicUsize>,
}

impl std::io::Write for Failing {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.writes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if n < self.ok { Ok(buf.len()) } else { Err(std::io::Error::from_raw_os_error(28)) } // ENOSPC
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A trace that cannot be written (a full disk) leaves every call's result alone and stops at
/// its first failed write instead of trying again on every call.
#[test]
fn a_trace_that_cannot_be_written_stops_and_changes_no_result() {
    let writes = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let sink = Failing { ok: 2, writes: writes.clone() };
    let ledger = peerpool::fault::Ledger::new(FaultPlan::new(), false).tracing_to(Box::new(sink));
    for _ in 0..10 {
        ledger.trace("cuCtxGetCurrent", String::new, "CUDA_SUCCESS");
    }
    assert_eq!(writes.load(std::sync::atomic::Ordering::SeqCst), 3, "two lines, one failed write, then nothing");
}
