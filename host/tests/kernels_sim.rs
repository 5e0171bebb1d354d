//! peerpool's kernels from several threads at once, on the simulator: each `check` gets its own
//! result even while another thread checks other memory on the same device (they share the
//! device's result buffer). Seen through the libcuda shim in CI: a clean copy reported the other
//! thread's mismatch.

use peerpool::{PoolOptions, System};
use peerpool_sim::{SimDriver, Topology};
use std::sync::Arc;

#[test]
fn concurrent_checks_on_one_device_keep_their_own_results() {
    let system = System::with_driver(Arc::new(SimDriver::new(Topology::two_h200()))).unwrap();
    let pool = system.create_pool(0, PoolOptions::default()).unwrap();
    let words = 4096u64;
    let (clean, dirty) = (
        system.alloc(pool.as_ref(), 4 * words as usize).unwrap(),
        system.alloc(pool.as_ref(), 4 * words as usize).unwrap(),
    );
    system.with_kernels(0, |k| k.fill(clean.words(words)?, 5)).unwrap();
    system.with_kernels(0, |k| k.fill(dirty.words(words)?, 6)).unwrap();
    std::thread::scope(|s| {
        let dirty_side = s.spawn(|| {
            for _ in 0..2000 {
                let seen = system.with_kernels(0, |k| k.compare_pattern(dirty.words(words)?, 5)).unwrap();
                assert_eq!(seen.mismatches, words, "every word of the other pattern mismatches");
            }
        });
        for _ in 0..2000 {
            let seen = system.with_kernels(0, |k| k.compare_pattern(clean.words(words)?, 5)).unwrap();
            assert!(seen.is_clean(), "a clean range read back {seen:?}");
        }
        dirty_side.join().unwrap();
    });
}
