//! The first proof on two GPUs: after `cuMemPoolSetAccess`, the accessor's kernels read, write
//! and atomically update the owner's pool memory; without it, the accessor's read faults
//! (checked in a child process, because the fault kills the CUDA context for good).

use peerpool::PoolOptions;
use peerpool::driver::{Access, KernelArg, LaunchShape, ModuleImage, Stream};
use peerpool::kernels::BLOCK;
use peerpool::kernels::pattern::pattern;
use peerpool_fixtures::{ChildError, Failed, Needs, Pair, System, machine_test, pair_test};
use peerpool_tests::{WORDS, ensure, expect_illegal_address, granted_pool};

#[pair_test]
fn accessor_writes(pair: &Pair) -> Result<(), Failed> {
    let pool = granted_pool(pair)?;
    let memory = pair.system.alloc(pool.as_ref(), (WORDS * 4) as usize)?;
    pair.system.with_kernels(pair.accessor, |k| k.fill(memory.words(WORDS)?, 11))?;
    let seen = pair.system.with_kernels(pair.owner, |k| k.compare_pattern(memory.words(WORDS)?, 11))?;
    ensure(seen.is_clean(), || format!("the owner found the accessor's writes wrong: {seen:?}"))?;
    // The host computes the same pattern from the same source file.
    let words = memory.read_words(64)?;
    ensure(words.iter().enumerate().all(|(i, &w)| w == pattern(i as u64, 11)), || format!("host disagrees: {words:x?}"))
}

#[pair_test]
fn accessor_reads(pair: &Pair) -> Result<(), Failed> {
    let pool = granted_pool(pair)?;
    let memory = pair.system.alloc(pool.as_ref(), (WORDS * 4) as usize)?;
    pair.system.with_kernels(pair.owner, |k| k.fill(memory.words(WORDS)?, 22))?;
    let accessor = pair.system.kernels(pair.accessor)?;
    let seen = accessor.compare_pattern(memory.words(WORDS)?, 22)?;
    ensure(seen.is_clean(), || format!("the accessor read wrong bytes: {seen:?}"))?;
    // The check is not vacuous: one planted bad word is found, at its index.
    drop(accessor);
    let bad_index = WORDS - 3;
    memory.write_at(bad_index as usize * 4, &(!pattern(bad_index, 22)).to_le_bytes())?;
    let seen = pair.system.with_kernels(pair.accessor, |k| k.compare_pattern(memory.words(WORDS)?, 22))?;
    ensure(seen.mismatches == 1 && seen.first_mismatch == Some(bad_index), || {
        format!("planted word not found: {seen:?}")
    })
}

#[pair_test]
fn vector_copy_both_ways(pair: &Pair) -> Result<(), Failed> {
    let pool = granted_pool(pair)?;
    let remote = pair.system.alloc(pool.as_ref(), (WORDS * 4) as usize)?;
    let local_pool = pair.system.create_pool(pair.accessor, PoolOptions::default())?;
    let local = pair.system.alloc(local_pool.as_ref(), (WORDS * 4) as usize)?;
    pair.system.with_kernels(pair.owner, |k| k.fill(remote.words(WORDS)?, 33))?;
    let accessor = pair.system.kernels(pair.accessor)?;
    accessor.copy16(local.words(WORDS)?, remote.words(WORDS)?)?; // read the owner's memory
    let seen = accessor.compare_pattern(local.words(WORDS)?, 33)?;
    ensure(seen.is_clean(), || format!("owner -> accessor copy wrong: {seen:?}"))?;
    accessor.fill(local.words(WORDS)?, 34)?;
    accessor.copy16(remote.words(WORDS)?, local.words(WORDS)?)?; // write the owner's memory
    drop(accessor);
    let seen = pair.system.with_kernels(pair.owner, |k| k.compare_pattern(remote.words(WORDS)?, 34))?;
    ensure(seen.is_clean(), || format!("accessor -> owner copy wrong: {seen:?}"))
}

#[pair_test(needs = Needs::atomic_pair())]
fn system_atomics_from_both(pair: &Pair) -> Result<(), Failed> {
    let pool = granted_pool(pair)?;
    let slots = 64u64;
    let counters = pair.system.alloc(pool.as_ref(), (slots * 4) as usize)?;
    counters.write(&vec![0u8; (slots * 4) as usize])?;
    let shape = LaunchShape { grid: 132, block: BLOCK };
    let reps = 100u32;
    // Both devices add to the same counters at once: each launch is synchronous, so run
    // the two devices from two threads to overlap them.
    std::thread::scope(|s| -> Result<(), peerpool::Error> {
        let a = s.spawn(|| {
            pair.system.with_kernels(pair.accessor, |k| k.atomic_add_sys(counters.words(slots)?, reps, shape))
        });
        pair.system.with_kernels(pair.owner, |k| k.atomic_add_sys(counters.words(slots)?, reps, shape))?;
        a.join().expect("the accessor's thread does not panic")
    })?;
    let expected = 2 * (shape.grid as u64 * shape.block as u64 / slots) * reps as u64;
    let words = counters.read_words(slots as usize)?;
    ensure(words.iter().all(|&w| w as u64 == expected), || format!("expected {expected} in every slot, got {words:?}"))
}

#[pair_test(name = "seam::launch_arguments_are_checked")]
fn launch_arguments_are_checked(pair: &Pair) -> Result<(), Failed> {
    // The driver reads as many parameters as the kernel declares: a launch with too
    // few, too many or wrongly sized arguments must be refused before it reaches the
    // GPU (the real driver by `cuFuncGetParamInfo`, the simulator by its own table).
    let memory = pair.system.alloc_legacy(pair.owner, 4096)?;
    let d = pair.system.driver();
    let _current = pair.system.enter(pair.owner)?;
    let module = d.module_load_data(ModuleImage::Ptx(peerpool::ptx_image()))?;
    // SAFETY: the module just loaded, unloaded below; `pp_fill(ptr, words, seed)`'s
    // pointer is a live allocation and no word is written (0 words), so even a launch
    // that got through could touch nothing.
    let refused = unsafe {
        let fill = d.module_get_function(module, c"pp_fill")?;
        let ptr = KernelArg::Ptr(memory.ptr());
        let cases = [
            vec![ptr, KernelArg::U64(0)],
            vec![ptr, KernelArg::U64(0), KernelArg::U64(1)],
            vec![ptr, KernelArg::U64(0), KernelArg::U32(1), KernelArg::U32(1)],
        ];
        let shape = LaunchShape { grid: 1, block: 1 };
        let refused: Vec<_> = cases.iter().map(|args| d.launch_kernel(fill, shape, Stream::LEGACY, args)).collect();
        let right = d.launch_kernel(fill, shape, Stream::LEGACY, &[ptr, KernelArg::U64(0), KernelArg::U32(1)]);
        d.ctx_synchronize()?;
        d.module_unload(module)?;
        right?;
        refused
    };
    ensure(
        refused.iter().all(|r| r.is_err_and(|e| e.code == peerpool::CudaCode::CUDA_ERROR_INVALID_VALUE && !e.sticky)),
        || format!("mismatched launches were not all refused: {refused:?}"),
    )
}

#[pair_test(sandboxed(judge = expect_illegal_address, timeout_secs = 60))]
fn ungranted_read_faults(pair: &Pair) -> Result<(), ChildError> {
    let pool = pair.system.create_pool(pair.owner, PoolOptions::default())?;
    let memory = pair.system.alloc(pool.as_ref(), (WORDS * 4) as usize)?;
    pair.system.with_kernels(pair.owner, |k| k.fill(memory.words(WORDS)?, 44))?;
    if pair.system.pool_access(pool.as_ref(), pair.accessor)? != Access::None {
        return Err("a new pool already grants the accessor".into());
    }
    // Expected to end in a sticky CUDA_ERROR_ILLEGAL_ADDRESS.
    pair.system.with_kernels(pair.accessor, |k| k.compare_pattern(memory.words(WORDS)?, 44))?;
    Ok(())
}

/// Skips where link names cannot come from NVML: a simulated topology, or no NVML here.
fn nvml_here() -> Result<(), String> {
    use peerpool_fixtures::sim::select::{Choice, choice_from_env};
    match choice_from_env()? {
        Choice::Real => peerpool::links::nvml_available(),
        Choice::Simulated { .. } | Choice::Shim { .. } => Err("a simulated topology has no NVML links".into()),
    }
}

/// NVML names the link of every pair with a peer path (NV18 on the H200s), its devices found by
/// PCI address, so the names follow CUDA's ordinals.
#[machine_test(name = "facts::links_named_by_nvml", needs = Needs::gpus(2), precondition = nvml_here)]
fn links_named_by_nvml(system: &System) -> Result<(), Failed> {
    let facts = system.facts()?;
    for p in &facts.peers {
        println!("gpu{} -> gpu{}: peer access {}, link {:?}", p.from, p.to, p.can_access, p.link);
    }
    let unnamed: Vec<String> = facts
        .peers
        .iter()
        .filter(|p| p.can_access && p.link.is_none())
        .map(|p| format!("gpu{}->gpu{}", p.from, p.to))
        .collect();
    ensure(unnamed.is_empty(), || format!("NVML named no link for {unnamed:?}"))
}

peerpool_fixtures::main!();
