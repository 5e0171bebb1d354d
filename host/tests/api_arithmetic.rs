//! Sizes callers pass to the public API are checked before any arithmetic or buffer: an
//! overflowing size is a typed `Error::InvalidArgument`, never a panic or a huge allocation.

use peerpool::{Error, PoolOptions, System};
use peerpool_sim::{SimDriver, Topology};
use std::sync::Arc;

fn system() -> System {
    System::with_driver(Arc::new(SimDriver::new(Topology::two_h200()))).expect("opens on the simulator")
}

#[test]
fn probe_sizes_beyond_the_limit_are_refused_and_change_nothing() {
    let system = system();
    let before = system.scratch_bytes();
    for bytes in [u64::MAX, u64::MAX - 15, (1 << 30) + 1] {
        assert!(matches!(system.set_scratch_bytes(bytes), Err(Error::InvalidArgument(_))), "{bytes}");
        assert_eq!(system.scratch_bytes(), before);
    }
    system.set_scratch_bytes(1 << 30).expect("1 GiB is allowed");
    assert_eq!(system.scratch_bytes(), 1 << 30);
    system.set_scratch_bytes(17).expect("rounded up");
    assert_eq!(system.scratch_bytes(), 32);
}

#[test]
fn reading_more_words_than_fit_is_refused_before_allocating() {
    let system = system();
    let pool = system.create_pool(0, PoolOptions::default()).unwrap();
    let memory = system.alloc(pool.as_ref(), 4096).unwrap();
    for words in [usize::MAX / 4 + 1, usize::MAX, usize::MAX / 8, 1025] {
        assert!(matches!(memory.read_words(words), Err(Error::InvalidArgument(_))), "{words}");
    }
    assert_eq!(memory.read_words(1024).unwrap().len(), 1024);
}
