//! The C boundary every entry point crosses: `cuInit` first, the fault rules, the trace, and
//! no panic unwinding into a C caller.

use crate::runtime;
use cudarc::driver::sys::CUresult;
use peerpool::driver::DriverResult;
use peerpool_sim::SimDriver;
use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::sync::Mutex;

/// The result of an entry point's body: `Ok` is `CUDA_SUCCESS`.
pub(crate) type Answer = Result<(), CUresult>;

/// Runs the entry point `symbol` (as exported, `cuMemAlloc_v2`): `CUDA_ERROR_NOT_INITIALIZED`
/// before `cuInit`; then the fault rules, under the call's documented name (`cuMemAlloc`),
/// decide whether `body` runs at all; a panic in it is named on stderr and answered
/// `CUDA_ERROR_UNKNOWN`. The trace gets one line per call.
pub(crate) fn enter(symbol: &'static str, args: impl FnOnce() -> String, body: impl FnOnce() -> Answer) -> CUresult {
    let Some(runtime) = runtime::get() else { return CUresult::CUDA_ERROR_NOT_INITIALIZED };
    let name = documented_name(symbol);
    let code = match runtime.ledger.decide(name) {
        Some(injected) => injected.code,
        None => match std::panic::catch_unwind(AssertUnwindSafe(body)) {
            Ok(Ok(())) => CUresult::CUDA_SUCCESS,
            Ok(Err(code)) => code,
            Err(panic) => {
                let why = panic.downcast_ref::<String>().map(String::as_str).or(panic.downcast_ref::<&str>().copied());
                eprintln!("peerpool-shim: {symbol} panicked: {}", why.unwrap_or("(no message)"));
                CUresult::CUDA_ERROR_UNKNOWN
            }
        },
    };
    runtime.ledger.trace(name, args, &format!("{code:?}"));
    code
}

/// The simulator behind the entry points (only called inside [`enter`], after `cuInit`).
pub(crate) fn sim() -> &'static SimDriver {
    &runtime::get().expect("entry points run after cuInit").sim
}

/// The name CUDA documents for an exported symbol: `cuMemAlloc` for `cuMemAlloc_v2`.
pub(crate) fn documented_name(symbol: &'static str) -> &'static str {
    match symbol.rsplit_once("_v") {
        Some((base, version)) if !version.is_empty() && version.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => symbol,
    }
}

/// A call's error code.
pub(crate) fn code<T>(result: DriverResult<T>) -> Result<T, CUresult> {
    result.map_err(|e| e.code)
}

/// `name=value` pairs for the trace.
pub(crate) fn show_args(args: &[(&str, String)]) -> String {
    args.iter().map(|(name, value)| format!("{name}={value}")).collect::<Vec<_>>().join(" ")
}

/// An entry point the simulator does not model: `CUDA_ERROR_NOT_SUPPORTED`, named once on stderr.
pub(crate) fn unsupported(symbol: &'static str) -> CUresult {
    static NAMED: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    enter(symbol, String::new, || {
        let mut named = NAMED.lock().unwrap_or_else(|e| e.into_inner());
        if named.get_or_insert_with(HashSet::new).insert(symbol) {
            eprintln!("peerpool-shim: {symbol} is not simulated: it answers CUDA_ERROR_NOT_SUPPORTED");
        }
        Err(CUresult::CUDA_ERROR_NOT_SUPPORTED)
    })
}

/// Defines exported C entry points whose bodies return an [`Answer`]; each runs through
/// [`enter`]. Each module that uses it gets a `table()` of its symbols for `cuGetProcAddress`.
///
/// The bodies read and write through the caller's pointers as the CUDA driver API documents for
/// each call: that is the C caller's promise, and the `# Safety` of every export.
macro_rules! exports {
    ($( $(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $body:block )*) => {
        $(
            $(#[$doc])*
            ///
            /// # Safety
            /// Every pointer is valid for what the CUDA driver API documents this call reads or
            /// writes.
            #[unsafe(no_mangle)]
            #[allow(non_snake_case, clippy::missing_safety_doc, unused_unsafe)]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> cudarc::driver::sys::CUresult {
                $crate::boundary::enter(
                    stringify!($name),
                    || $crate::boundary::show_args(&[$((stringify!($arg), format!("{:?}", $arg))),*]),
                    // SAFETY: the caller's, above.
                    || unsafe { $body },
                )
            }
        )*

        /// This module's entry points, by exported name.
        pub(crate) fn table() -> Vec<(&'static str, *const std::ffi::c_void)> {
            vec![$((stringify!($name), $name as *const std::ffi::c_void)),*]
        }
    };
}
pub(crate) use exports;

#[cfg(test)]
mod tests {
    use super::documented_name;

    #[test]
    fn versioned_symbols_go_by_their_documented_names() {
        assert_eq!(documented_name("cuMemAlloc_v2"), "cuMemAlloc");
        assert_eq!(documented_name("cuCtxCreate_v4"), "cuCtxCreate");
        assert_eq!(documented_name("cuMemPoolSetAccess"), "cuMemPoolSetAccess");
        assert_eq!(documented_name("cuGraphicsVDPAURegisterVideoSurface"), "cuGraphicsVDPAURegisterVideoSurface");
    }
}
