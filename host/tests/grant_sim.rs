//! The grant engine on simulated topologies (no GPU needed): every typed outcome, scope, set
//! semantics, side effects and the caller's context, on the machines the catalog describes.
//
// SAFETY (every `unsafe` block below): the driver is a simulator, or a fault injector over
// one, which checks every handle, range and argument list itself.

use peerpool::driver::{Access, AccessDesc, Driver, PoolProps};
use peerpool::grant::{Direction, Method, Stage};
use peerpool::{Grant, GrantError, PoolOptions, PoolRef, Revoke, System};
use peerpool_sim::{SimDriver, SimOptions, Topology, catalog_topology};
use std::sync::Arc;

fn system(topology: Topology) -> (System, Arc<SimDriver>) {
    let sim = Arc::new(SimDriver::new(topology));
    (System::with_driver(sim.clone()).expect("the simulator opens"), sim)
}

fn topology(stem: &str) -> Topology {
    catalog_topology(stem).expect("catalog topology")
}

fn access(sys: &System, pool: PoolRef<'_>, device: usize) -> Access {
    sys.pool_access(pool, device).expect("readable")
}

#[test]
fn first_grant_verifies_then_repeats_are_already_granted() {
    let (sys, _) = system(Topology::two_h200());
    let pool = sys.create_pool(0, PoolOptions::default()).unwrap();
    assert_eq!(sys.evidence(0, 1), None);
    assert_eq!(sys.grant(pool.as_ref(), 1), Ok(Grant::Granted { previous: Access::None }));
    let evidence = sys.evidence(0, 1).expect("cached after the first grant");
    assert!(evidence.reverse_checked);
    assert_eq!(sys.evidence(1, 0), None, "evidence is per ordered pair");
    assert_eq!(sys.grant(pool.as_ref(), 1), Ok(Grant::AlreadyGranted));
    assert_eq!(sys.grant(pool.as_ref(), 0), Ok(Grant::OwnerAccess));
    assert_eq!(sys.peers(pool.as_ref()), Ok(vec![1]));
}

#[test]
fn a_grant_changes_one_pool_for_one_accessor() {
    let (sys, _) = system(topology("eight_gpu_nvswitch"));
    let target = sys.create_pool(3, PoolOptions::default()).unwrap();
    let second = sys.create_pool(3, PoolOptions::default()).unwrap();
    sys.grant(target.as_ref(), 5).unwrap();
    for device in 0..8 {
        let want = if device == 3 || device == 5 { Access::ReadWrite } else { Access::None };
        assert_eq!(access(&sys, target.as_ref(), device), want, "target pool, gpu{device}");
        let own = if device == 3 { Access::ReadWrite } else { Access::None };
        assert_eq!(access(&sys, second.as_ref(), device), own, "second pool, gpu{device}");
        assert_eq!(access(&sys, sys.default_pool(3).unwrap(), device), own, "default pool, gpu{device}");
    }
}

#[test]
fn a_pair_without_peer_capability_is_unsupported_and_says_which_way() {
    let (sys, _) = system(topology("one_way_pair")); // 1 can access 0; 0 cannot access 1
    let on1 = sys.create_pool(1, PoolOptions::default()).unwrap();
    let e = sys.grant(on1.as_ref(), 0).unwrap_err();
    assert_eq!(e, GrantError::Unsupported { owner: 1, accessor: 0, reverse_capable: true });
    assert_eq!(access(&sys, on1.as_ref(), 0), Access::None);
    // The capable direction works; the reverse kernel check is skipped and says so.
    let on0 = sys.create_pool(0, PoolOptions::default()).unwrap();
    assert!(matches!(sys.grant(on0.as_ref(), 1), Ok(Grant::Granted { .. })));
    assert!(!sys.evidence(0, 1).unwrap().reverse_checked);
}

#[test]
fn a_corrupting_link_rejects_verification_with_direction_and_method() {
    let (sys, sim) = system(topology("corrupt_link_pair")); // data flowing 0 -> 1 is corrupted
    let pools_before = sim.stats().pools;
    let on0 = sys.create_pool(0, PoolOptions::default()).unwrap();
    let GrantError::Rejected { owner: 0, accessor: 1, rejection } = sys.grant(on0.as_ref(), 1).unwrap_err() else {
        panic!("expected a rejection");
    };
    assert_eq!((rejection.direction, rejection.method), (Direction::OwnerToAccessor, Method::CopyEngine));
    assert!(rejection.bytes_wrong > 0 && rejection.bytes_wrong <= rejection.bytes_checked);
    assert_eq!(rejection.first_bad_offset % 4, 0);
    assert_eq!(access(&sys, on0.as_ref(), 1), Access::None, "nothing granted");
    assert_eq!(sys.evidence(0, 1), None, "a rejection is not cached");
    // The other ordered pair meets the same link when its accessor writes.
    let on1 = sys.create_pool(1, PoolOptions::default()).unwrap();
    let GrantError::Rejected { rejection, .. } = sys.grant(on1.as_ref(), 0).unwrap_err() else { panic!() };
    assert_eq!(rejection.direction, Direction::AccessorToOwner);
    drop((on0, on1));
    assert_eq!(sim.stats().pools, pools_before + 2, "the test pools are destroyed, one probe pool per device stays");
    drop(sys);
    assert_eq!(sim.stats().pools, pools_before, "the probe pools go with the system");
}

#[test]
fn invalid_arguments_are_refused_before_anything_changes() {
    let (sys, sim) = system(Topology::two_h200());
    let pool = sys.create_pool(0, PoolOptions::default()).unwrap();
    let p = pool.as_ref();
    assert_eq!(sys.grant(p, 99), Err(GrantError::InvalidDevice { ordinal: 99, count: 2 }));
    assert_eq!(sys.revoke(p, 0), Err(GrantError::OwnerRevoke { owner: 0 }));
    assert!(sys.set_peers(p, &[1, 5]).unwrap_err().is_invalid_argument());
    assert_eq!(access(&sys, p, 1), Access::None);
    assert_eq!(sys.evidence(0, 1), None, "no verification ran");
    assert_eq!(sim.stats().pools, 3, "two default pools and ours");
    assert!(unsafe { PoolRef::from_raw(peerpool::driver::Pool(0), 0) }.is_err(), "a null handle is refused");
}

#[test]
fn read_only_access_is_its_own_outcome() {
    let (sys, _) = system(Topology::two_h200());
    let pool = sys.create_pool(0, PoolOptions::default()).unwrap();
    assert_eq!(sys.grant_read_only(pool.as_ref(), 1), Err(GrantError::ReadOnlyUnsupported { owner: 0, accessor: 1 }));
    assert_eq!(access(&sys, pool.as_ref(), 1), Access::None);
}

#[test]
fn revoke_reports_what_it_changed() {
    let (sys, _) = system(Topology::two_h200());
    let pool = sys.create_pool(1, PoolOptions::default()).unwrap();
    assert_eq!(sys.revoke(pool.as_ref(), 0), Ok(Revoke::AlreadyNone));
    sys.grant(pool.as_ref(), 0).unwrap();
    assert_eq!(sys.revoke(pool.as_ref(), 0), Ok(Revoke::Revoked { previous: Access::ReadWrite }));
    assert_eq!(access(&sys, pool.as_ref(), 0), Access::None);
}

#[test]
fn set_peers_is_a_set_applied_in_one_call() {
    let (sys, _) = system(topology("eight_gpu_nvswitch"));
    let pool = sys.create_pool(2, PoolOptions::default()).unwrap();
    let p = pool.as_ref();
    let up = sys.set_peers(p, &[5, 1, 2, 5]).unwrap();
    assert_eq!((up.granted.clone(), up.peers.clone()), (vec![1, 5], vec![1, 5]));
    assert!(up.owner_ignored && up.duplicates_ignored);
    let up = sys.set_peers(p, &[5, 7]).unwrap();
    assert_eq!((up.granted, up.revoked, up.peers), (vec![7], vec![1], vec![5, 7]));
    assert!(!up.owner_ignored && !up.duplicates_ignored);
    let up = sys.set_peers(p, &[]).unwrap();
    assert_eq!((up.revoked, up.peers), (vec![5, 7], vec![]));
    assert_eq!(access(&sys, p, 2), Access::ReadWrite, "the owner keeps its access");
}

#[test]
fn set_peers_changes_nothing_when_one_peer_is_unsupported() {
    let (sys, _) = system(topology("four_gpu_islands")); // {0,1} and {2,3}
    let pool = sys.create_pool(0, PoolOptions::default()).unwrap();
    sys.grant(pool.as_ref(), 1).unwrap();
    let e = sys.set_peers(pool.as_ref(), &[2]).unwrap_err();
    assert!(matches!(e, GrantError::Unsupported { owner: 0, accessor: 2, reverse_capable: false }), "{e:?}");
    assert_eq!(sys.peers(pool.as_ref()), Ok(vec![1]), "the revoke of gpu1 was not applied either");
}

#[test]
fn all_visible_reports_each_peer_and_touches_only_that_pool() {
    let (sys, _) = system(topology("four_gpu_islands"));
    let pool = sys.create_pool(2, PoolOptions::default()).unwrap();
    let report = sys.grant_all_visible(pool.as_ref()).unwrap();
    assert_eq!(report.granted(), vec![3]);
    assert!(!report.all_granted());
    let unsupported: Vec<usize> = report
        .results
        .iter()
        .filter(|(_, r)| matches!(r, Err(GrantError::Unsupported { .. })))
        .map(|(d, _)| *d)
        .collect();
    assert_eq!(unsupported, vec![0, 1]);
    assert_eq!(sys.peers(sys.default_pool(2).unwrap()), Ok(vec![]), "the default pool is untouched");
    assert_eq!(sys.peers(sys.current_pool(2).unwrap()), Ok(vec![]), "so is the current pool");
}

#[test]
fn the_callers_context_is_restored_on_every_path() {
    let (sys, _) = system(Topology::two_h200());
    let pool = sys.create_pool(0, PoolOptions::default()).unwrap();
    let driver = sys.driver().clone();
    let contexts = [None, Some(driver.primary_ctx_retain(0).unwrap()), Some(driver.primary_ctx_retain(1).unwrap())];
    for caller in contexts {
        unsafe { driver.ctx_set_current(caller) }.unwrap();
        sys.forget_evidence();
        sys.grant(pool.as_ref(), 1).unwrap();
        assert_eq!(driver.ctx_get_current().unwrap(), caller, "after a verifying grant");
        let _ = sys.grant(pool.as_ref(), 9);
        let _ = sys.grant(pool.as_ref(), 0);
        assert_eq!(driver.ctx_get_current().unwrap(), caller, "after argument errors");
        sys.revoke(pool.as_ref(), 1).unwrap();
        assert_eq!(driver.ctx_get_current().unwrap(), caller, "after a revoke");
    }
}

#[test]
fn probes_are_made_once_per_device_and_go_with_the_system() {
    let (sys, sim) = system(Topology::two_h200());
    let before = sim.stats();
    sys.verify_pair(0, 1).unwrap();
    let after = sim.stats();
    assert_eq!(after.pools, before.pools + 2, "one probe pool per device");
    // Also kept, by design: both primary contexts, the loaded modules and their 16-byte
    // result buffers (documented side effects), and each probe pool's one buffer.
    assert_eq!((after.modules, after.allocations), (2, 4));
    // The other direction and a second verification reuse them: nothing new.
    sys.verify_pair(1, 0).unwrap();
    sys.verify_pair(0, 1).unwrap();
    assert_eq!(sim.stats(), after);
    // A new probe size replaces the buffers, not the pools.
    sys.set_scratch_bytes(8192).unwrap();
    sys.verify_pair(0, 1).unwrap();
    let resized = sim.stats();
    assert_eq!((resized.pools, resized.allocations), (after.pools, 4));
    assert_eq!(resized.allocated_bytes + 2 * (peerpool::PROBE_BYTES - 8192), after.allocated_bytes);
    // Released on demand, made again by the next verification.
    sys.release_scratch().unwrap();
    assert_eq!((sim.stats().pools, sim.stats().allocations), (before.pools, 2));
    sys.verify_pair(1, 0).unwrap();
    assert_eq!(sim.stats().pools, before.pools + 2);
    drop(sys);
    let last = sim.stats();
    assert_eq!((last.pools, last.modules, last.allocations, last.context_retains), (before.pools, 0, 0, 0));
}

#[test]
fn verifying_a_pair_touches_no_caller_pool_and_probes_only_its_two_devices() {
    let (sys, sim) = system(catalog_topology("eight_gpu_nvswitch").unwrap());
    let pool = sys.create_pool(2, PoolOptions::default()).unwrap();
    sys.verify_pair(2, 5).unwrap();
    // Every live pool but the probes: untouched.
    assert_eq!(sys.pool_access_table(pool.as_ref()).unwrap().iter().filter(|&&a| a == Access::ReadWrite).count(), 1);
    for d in 0..8 {
        let default = sys.default_pool(d).unwrap();
        assert_eq!(sys.peers(default).unwrap(), Vec::<usize>::new(), "gpu{d}'s default pool");
    }
    // Devices 2 and 5 have probes; the others none.
    assert_eq!(sim.stats().pools, 8 + 1 + 2);
}

#[test]
fn a_revoked_accessor_faults_and_the_fault_is_sticky() {
    let (sys, sim) = system(Topology::two_h200());
    let pool = sys.create_pool(0, PoolOptions::default()).unwrap();
    let memory = sys.alloc(pool.as_ref(), 4096).unwrap();
    sys.grant(pool.as_ref(), 1).unwrap();
    sys.kernels(0).unwrap().fill(memory.words(1024).unwrap(), 3).unwrap();
    assert!(sys.kernels(1).unwrap().compare_pattern(memory.words(1024).unwrap(), 3).unwrap().is_clean());
    sys.revoke(pool.as_ref(), 1).unwrap();
    let e = sys.kernels(1).and_then(|k| k.compare_pattern(memory.words(1024)?, 3)).unwrap_err();
    assert!(e.is_sticky() && e.cuda().unwrap().code_name() == "CUDA_ERROR_ILLEGAL_ADDRESS", "{e}");
    assert!(sim.sticky_error().is_some());
    let later = sys.grant(pool.as_ref(), 1).unwrap_err();
    assert!(later.is_sticky() && matches!(later, GrantError::Cuda { stage: Stage::Query, .. }), "{later:?}");
}

#[test]
fn owned_pools_reset_access_so_recycled_handles_come_back_clean() {
    // The simulator can reproduce the driver bug: a new pool takes the last destroyed handle
    // with its access table.
    let sim = Arc::new(SimDriver::with_options(Topology::two_h200(), SimOptions { recycle_pool_handles: true }));
    let raw: &dyn Driver = sim.as_ref();
    let props = PoolProps { device: 0, ..PoolProps::default() };
    let leaky = raw.mem_pool_create(&props).unwrap();
    unsafe { raw.mem_pool_set_access(leaky, &[AccessDesc { device: 1, access: Access::ReadWrite }]) }.unwrap();
    unsafe { raw.mem_pool_destroy(leaky) }.unwrap();
    let reused = raw.mem_pool_create(&props).unwrap();
    assert_eq!(reused, leaky, "the bug: same handle");
    assert_eq!(unsafe { raw.mem_pool_get_access(reused, 1) }, Ok(Access::ReadWrite), "the bug: stale access");
    unsafe { raw.mem_pool_destroy(reused) }.unwrap();
    // peerpool's owned pools revoke before destroying, so the recycled handle starts clean.
    let sys = System::with_driver(sim.clone()).unwrap();
    let pool = sys.create_pool(0, PoolOptions::default()).unwrap();
    sys.grant(pool.as_ref(), 1).unwrap();
    let handle = pool.handle();
    pool.destroy().unwrap();
    let again = sys.create_pool(0, PoolOptions::default()).unwrap();
    assert_eq!(again.handle(), handle);
    assert_eq!(access(&sys, again.as_ref(), 1), Access::None);
}

#[test]
fn pool_handles_are_found_from_pointers() {
    let (sys, _) = system(Topology::two_h200());
    let pool = sys.create_pool(1, PoolOptions::default()).unwrap();
    let memory = sys.alloc(pool.as_ref(), 8192).unwrap();
    assert_eq!(unsafe { sys.pool_of(memory.ptr()) }.unwrap(), Some(pool.as_ref()));
    assert_eq!(unsafe { sys.pool_of(memory.ptr().offset(4000)) }.unwrap(), Some(pool.as_ref()), "interior pointer");
    let default = sys.alloc(sys.default_pool(0).unwrap(), 64).unwrap();
    assert_eq!(unsafe { sys.pool_of(default.ptr()) }.unwrap(), Some(sys.default_pool(0).unwrap()));
    let legacy = sys.alloc_legacy(0, 64).unwrap();
    assert_eq!(unsafe { sys.pool_of(legacy.ptr()) }.unwrap(), None, "cuMemAlloc memory");
    assert_eq!(unsafe { sys.pool_of(peerpool::DevicePtr(0x1000)) }.unwrap(), None, "not device memory");
    let found = unsafe { sys.pool_of(memory.ptr()) }.unwrap().unwrap();
    sys.grant(found, 0).unwrap();
    assert_eq!(access(&sys, pool.as_ref(), 0), Access::ReadWrite, "a grant through the found handle");
}

#[test]
fn the_current_pool_is_not_the_pool_granted() {
    let (sys, _) = system(Topology::two_h200());
    let pool = sys.create_pool(0, PoolOptions::default()).unwrap();
    unsafe { sys.driver().device_set_mem_pool(0, pool.handle()) }.unwrap();
    assert_eq!(sys.current_pool(0).unwrap(), pool.as_ref());
    let other = sys.create_pool(0, PoolOptions::default()).unwrap();
    sys.grant(other.as_ref(), 1).unwrap();
    assert_eq!(access(&sys, pool.as_ref(), 1), Access::None, "the current pool is not touched");
    unsafe { sys.driver().device_set_mem_pool(0, sys.default_pool(0).unwrap().handle()) }.unwrap();
}
