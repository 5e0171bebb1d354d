//! The CUDA driver calls peerpool knows by name (`peerpool::driver::DOCUMENTED_CALLS`: what a
//! fault rule may name, written from cudarc's bindings by `host/tools/documented_calls.py`, which
//! `.ci/run` checks is current): sorted, by their documented names, the seam's own among them.

use peerpool::driver::{Call, DOCUMENTED_CALLS, documented_name};

#[test]
fn the_seam_calls_by_documented_names() {
    for call in Call::ALL {
        assert!(DOCUMENTED_CALLS.binary_search(&call.name()).is_ok(), "{} is no documented CUDA call", call.name());
    }
    assert!(DOCUMENTED_CALLS.windows(2).all(|w| w[0] < w[1]), "sorted, each once");
    assert!(DOCUMENTED_CALLS.iter().all(|n| documented_name(n) == *n), "no versioned symbol");
}

#[test]
fn versioned_symbols_go_by_their_documented_names() {
    assert_eq!(documented_name("cuMemAlloc_v2"), "cuMemAlloc");
    assert_eq!(documented_name("cuCtxCreate_v4"), "cuCtxCreate");
    assert_eq!(documented_name("cuMemPoolSetAccess"), "cuMemPoolSetAccess");
    assert_eq!(documented_name("cuGraphicsVDPAURegisterVideoSurface"), "cuGraphicsVDPAURegisterVideoSurface");
    assert_eq!(documented_name("cuFoo_v"), "cuFoo_v");
}
