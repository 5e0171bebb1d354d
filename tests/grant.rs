//! The grant engine on real GPU pairs: typed outcomes, scope, set semantics, revocation proved
//! by a faulting kernel (in a child process), and the caller's context restored.

use peerpool::driver::{Access, Context};
use peerpool::{Grant, GrantError, OwnedPool, PoolOptions, Revoke, System};
use peerpool_fixtures::{ChildError, Failed, Needs, Pair, machine_test, pair_test};
use peerpool_tests::{WORDS, ensure, expect_illegal_address};

/// The pair's system and a new pool on its owner.
fn owner_pool(pair: &Pair) -> Result<(&System, OwnedPool), Failed> {
    Ok((&pair.system, pair.system.create_pool(pair.owner, PoolOptions::default())?))
}

#[pair_test]
fn kernels_read_and_write_after_grant(pair: &Pair) -> Result<(), Failed> {
    let (sys, pool) = owner_pool(pair)?;
    let outcome = sys.grant(pool.as_ref(), pair.accessor)?;
    ensure(outcome == Grant::Granted { previous: Access::None }, || format!("first grant gave {outcome:?}"))?;
    let evidence = sys.evidence(pair.owner, pair.accessor).ok_or("no evidence cached after a grant")?;
    ensure(evidence.reverse_checked, || "both GPUs can access each other: the reverse must be checked".into())?;
    let memory = sys.alloc(pool.as_ref(), (WORDS * 4) as usize)?;
    sys.with_kernels(pair.accessor, |k| k.fill(memory.words(WORDS)?, 1))?;
    let seen = sys.with_kernels(pair.owner, |k| k.compare_pattern(memory.words(WORDS)?, 1))?;
    ensure(seen.is_clean(), || format!("accessor write: {seen:?}"))?;
    sys.with_kernels(pair.owner, |k| k.fill(memory.words(WORDS)?, 2))?;
    let seen = sys.with_kernels(pair.accessor, |k| k.compare_pattern(memory.words(WORDS)?, 2))?;
    ensure(seen.is_clean(), || format!("accessor read: {seen:?}"))
}

#[pair_test]
fn scope_is_one_pool(pair: &Pair) -> Result<(), Failed> {
    let sys = &pair.system;
    let target = sys.create_pool(pair.owner, PoolOptions::default())?;
    let second = sys.create_pool(pair.owner, PoolOptions::default())?;
    sys.grant(target.as_ref(), pair.accessor)?;
    expect(sys, target.as_ref(), pair.accessor, Access::ReadWrite)?;
    expect(sys, second.as_ref(), pair.accessor, Access::None)?;
    expect(sys, sys.default_pool(pair.owner)?, pair.accessor, Access::None)?;
    expect(sys, sys.current_pool(pair.owner)?, pair.accessor, Access::None)?;
    // Independent both ways: grant the second, revoke the first.
    sys.grant(second.as_ref(), pair.accessor)?;
    sys.revoke(target.as_ref(), pair.accessor)?;
    expect(sys, target.as_ref(), pair.accessor, Access::None)?;
    expect(sys, second.as_ref(), pair.accessor, Access::ReadWrite)
}

#[pair_test]
fn repeat_self_and_revoke_outcomes(pair: &Pair) -> Result<(), Failed> {
    let (sys, pool) = owner_pool(pair)?;
    let p = pool.as_ref();
    let (o, a) = (pair.owner, pair.accessor);
    ensure(sys.grant(p, o)? == Grant::OwnerAccess, || "self access".into())?;
    ensure(matches!(sys.grant(p, a)?, Grant::Granted { .. }), || "first grant".into())?;
    ensure(sys.grant(p, a)? == Grant::AlreadyGranted, || "repeat".into())?;
    ensure(matches!(sys.revoke(p, o), Err(GrantError::OwnerRevoke { .. })), || "owner revoke".into())?;
    ensure(sys.revoke(p, a)? == Revoke::Revoked { previous: Access::ReadWrite }, || "revoke".into())?;
    ensure(sys.revoke(p, a)? == Revoke::AlreadyNone, || "repeat revoke".into())?;
    expect(sys, p, o, Access::ReadWrite)
}

#[pair_test]
fn invalid_arguments_change_nothing(pair: &Pair) -> Result<(), Failed> {
    let (sys, pool) = owner_pool(pair)?;
    let p = pool.as_ref();
    let e = sys.grant(p, 99).unwrap_err();
    ensure(matches!(e, GrantError::InvalidDevice { ordinal: 99, .. }), || format!("{e:?}"))?;
    let e = sys.set_peers(p, &[pair.accessor, 99]).unwrap_err();
    ensure(matches!(e, GrantError::InvalidDevice { .. }), || format!("{e:?}"))?;
    expect(sys, p, pair.accessor, Access::None)
}

#[pair_test]
fn read_only_is_refused(pair: &Pair) -> Result<(), Failed> {
    let (sys, pool) = owner_pool(pair)?;
    let e = sys.grant_read_only(pool.as_ref(), pair.accessor);
    ensure(matches!(e, Err(GrantError::ReadOnlyUnsupported { .. })), || format!("{e:?}"))?;
    expect(sys, pool.as_ref(), pair.accessor, Access::None)
}

#[pair_test]
fn set_peers_is_a_set(pair: &Pair) -> Result<(), Failed> {
    let (sys, pool) = owner_pool(pair)?;
    let p = pool.as_ref();
    let up = sys.set_peers(p, &[pair.accessor, pair.owner, pair.accessor])?;
    ensure(up.granted == vec![pair.accessor] && up.owner_ignored && up.duplicates_ignored, || format!("{up:?}"))?;
    ensure(up.peers == vec![pair.accessor] && sys.peers(p)? == vec![pair.accessor], || format!("{up:?}"))?;
    let up = sys.set_peers(p, &[pair.accessor])?;
    ensure(up.granted.is_empty() && up.revoked.is_empty(), || format!("no-op update: {up:?}"))?;
    let up = sys.set_peers(p, &[])?;
    ensure(up.revoked == vec![pair.accessor] && up.peers.is_empty(), || format!("{up:?}"))?;
    expect(sys, p, pair.owner, Access::ReadWrite)
}

#[pair_test]
fn all_visible_reports_each_peer(pair: &Pair) -> Result<(), Failed> {
    let (sys, pool) = owner_pool(pair)?;
    let report = sys.grant_all_visible(pool.as_ref())?;
    ensure(report.granted().contains(&pair.accessor), || format!("{report:?}"))?;
    ensure(report.results.len() == sys.device_count() - 1, || "one result per peer".into())?;
    // Every peer with a path is granted; one without (another island) is refused as such.
    for (peer, result) in &report.results {
        let can = sys.driver().device_can_access_peer(*peer as i32, pair.owner as i32)?;
        let as_expected = match result {
            Ok(Grant::Granted { .. }) => can,
            Err(GrantError::Unsupported { .. }) => !can,
            _ => false,
        };
        ensure(as_expected, || format!("gpu{peer} (peer path: {can}): {result:?}"))?;
    }
    expect(sys, sys.default_pool(pair.owner)?, pair.accessor, Access::None)
}

#[pair_test]
fn caller_context_restored(pair: &Pair) -> Result<(), Failed> {
    let (sys, pool) = owner_pool(pair)?;
    sys.forget_evidence(); // make the grant verify, the path that touches most contexts
    for caller in [None, Some(pair.owner), Some(pair.accessor)] {
        let guard = match caller {
            Some(device) => Some(sys.enter(device)?),
            None => {
                // SAFETY: no context is named.
                unsafe { sys.driver().ctx_set_current(None) }?;
                None
            }
        };
        let before: Option<Context> = sys.driver().ctx_get_current()?;
        let _ = sys.grant(pool.as_ref(), pair.accessor)?;
        let _ = sys.grant(pool.as_ref(), 99); // an error path
        let _ = sys.revoke(pool.as_ref(), pair.accessor)?;
        sys.forget_evidence();
        let after = sys.driver().ctx_get_current()?;
        ensure(before == after, || format!("caller {caller:?}: current context {before:?} became {after:?}"))?;
        drop(guard);
    }
    Ok(())
}

#[pair_test]
fn pool_handles_from_pointers(pair: &Pair) -> Result<(), Failed> {
    let (sys, pool) = owner_pool(pair)?;
    let memory = sys.alloc(pool.as_ref(), 4096)?;
    // SAFETY: every pool found is `pool` or a default pool, both alive to the trial's end.
    let pool_of = |ptr| unsafe { sys.pool_of(ptr) };
    let found = pool_of(memory.ptr())?.ok_or("a pool allocation has a pool")?;
    ensure(found == pool.as_ref(), || format!("{found:?} != {:?}", pool.as_ref()))?;
    let inner = pool_of(memory.ptr().offset(1024))?;
    ensure(inner == Some(pool.as_ref()), || "an interior pointer names the same pool".into())?;
    let from_default = sys.alloc(sys.default_pool(pair.owner)?, 4096)?;
    ensure(pool_of(from_default.ptr())? == Some(sys.default_pool(pair.owner)?), || "default pool".into())?;
    let legacy = sys.alloc_legacy(pair.owner, 4096)?;
    ensure(pool_of(legacy.ptr())?.is_none(), || "cuMemAlloc memory has no pool".into())?;
    let host = [0u8; 16];
    ensure(pool_of(peerpool::DevicePtr(host.as_ptr() as u64))?.is_none(), || "host memory".into())?;
    // A grant through the discovered handle is a grant on the pool itself.
    sys.grant(found, pair.accessor)?;
    expect(sys, pool.as_ref(), pair.accessor, Access::ReadWrite)
}

#[pair_test(sandboxed(judge = expect_illegal_address, timeout_secs = 60))]
fn revoke_then_kernel_faults(pair: &Pair) -> Result<(), ChildError> {
    let sys = &pair.system;
    let pool = sys.create_pool(pair.owner, PoolOptions::default())?;
    let memory = sys.alloc(pool.as_ref(), (WORDS * 4) as usize)?;
    sys.grant(pool.as_ref(), pair.accessor)?;
    sys.with_kernels(pair.owner, |k| k.fill(memory.words(WORDS)?, 5))?;
    let seen = sys.with_kernels(pair.accessor, |k| k.compare_pattern(memory.words(WORDS)?, 5))?;
    if !seen.is_clean() {
        return Err(format!("granted read wrong: {seen:?}").into());
    }
    sys.revoke(pool.as_ref(), pair.accessor)?;
    sys.with_kernels(pair.accessor, |k| k.compare_pattern(memory.words(WORDS)?, 5))?; // must fault
    Ok(())
}

/// Destroys granted pools and watches whether new pools reuse their handles; a reused handle
/// must come back with no peer access (owned pools revoke before destroy). Prints what it saw.
#[machine_test(needs = Needs::gpus(2))]
fn recycled_handle_detector(sys: &System) -> Result<(), Failed> {
    let mut destroyed = Vec::new();
    let mut reused = 0;
    for _ in 0..16 {
        let pool = sys.create_pool(0, PoolOptions::default())?;
        if destroyed.contains(&pool.handle()) {
            reused += 1;
            expect(sys, pool.as_ref(), 1, Access::None)?;
        }
        sys.grant(pool.as_ref(), 1)?;
        destroyed.push(pool.handle());
        pool.destroy()?;
    }
    println!("recycled pool handles in 16 create/destroy rounds: {reused}");
    Ok(())
}

fn expect(sys: &System, pool: peerpool::PoolRef<'_>, device: usize, want: Access) -> Result<(), Failed> {
    let got = sys.pool_access(pool, device)?;
    ensure(got == want, || {
        format!("gpu{device} on gpu{}'s pool {:?}: {got:?}, expected {want:?}", pool.owner(), pool.handle())
    })
}

peerpool_fixtures::main!();
