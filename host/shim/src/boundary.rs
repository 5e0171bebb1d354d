//! The C boundary every entry point crosses: to the simulator (`cuInit` first, the fault rules,
//! the trace, no panic unwinding into a C caller) or forwarded to NVIDIA's libcuda (the same
//! rules and trace).

use crate::backend::{Real, Slot};
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
/// `CUDA_ERROR_UNKNOWN`. The trace gets one line per call. Inlined into its entry point, so that
/// a call through the simulator makes one frame fewer.
#[inline(always)]
pub(crate) fn enter(symbol: &'static str, args: impl FnOnce() -> String, body: impl FnOnce() -> Answer) -> CUresult {
    let Some(runtime) = runtime::get() else { return CUresult::CUDA_ERROR_NOT_INITIALIZED };
    enter_on(runtime, symbol, args, body)
}

/// [`enter`] on `runtime` whether or not the driver has started: `cuInit`'s own way in.
#[inline(always)]
pub(crate) fn enter_on(
    runtime: &'static runtime::Runtime,
    symbol: &'static str,
    args: impl FnOnce() -> String,
    body: impl FnOnce() -> Answer,
) -> CUresult {
    // A host function is pending (or running on this very thread): the one check on the way in.
    if crate::host_functions::pending()
        && let Some(code) = host_function_gate(symbol)
    {
        return code;
    }
    let run = || {
        // A stream captures somewhere: a call the driver forbids this thread now is refused.
        if crate::graphs::any_capturing()
            && let Some(code) = crate::capture_rules::gate(documented_name(symbol))
        {
            name_once(
                symbol,
                "is forbidden while a stream captures in a mode that forbids it to this thread \
                 (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED), and the capture is invalidated, as the driver does",
            );
            return code;
        }
        match std::panic::catch_unwind(AssertUnwindSafe(body)) {
            Ok(Ok(())) => CUresult::CUDA_SUCCESS,
            Ok(Err(CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)) => uncaptured(symbol),
            Ok(Err(code)) => code,
            Err(panic) => panicked(symbol, panic),
        }
    };
    if runtime.ledger.is_idle() {
        return run(); // no rule, no trace: nothing to decide or write
    }
    let name = documented_name(symbol);
    let code = ruled(&runtime.ledger, name, run);
    let detail = DETAIL.take();
    runtime.ledger.trace(name, || args() + &detail.map(|d| format!(" ({d})")).unwrap_or_default(), Code(code));
    code
}

std::thread_local! {
    /// What the call in progress on this thread adds to its trace line ([`trace_detail`]).
    static DETAIL: std::cell::Cell<Option<String>> = const { std::cell::Cell::new(None) };
}

/// Adds `detail` to the trace line of the call in progress on this thread: what the call chose
/// that its arguments do not show (which code of an image the driver takes, which runs).
pub(crate) fn trace_detail(detail: impl FnOnce() -> String) {
    if runtime::get().is_some_and(|r| !r.ledger.is_idle()) {
        DETAIL.set(Some(detail()));
    }
}

/// While host functions are pending: a call from inside one is `CUDA_ERROR_NOT_PERMITTED` (but
/// naming an error code); a call that queues work or synchronises first waits for them
/// (`host_functions.rs`).
#[cold]
#[inline(never)]
fn host_function_gate(symbol: &'static str) -> Option<CUresult> {
    let name = documented_name(symbol);
    if crate::host_functions::inside() {
        return (!TEXT_LOOKUPS.contains(&name)).then_some(CUresult::CUDA_ERROR_NOT_PERMITTED);
    }
    if crate::host_functions::waits(name) {
        crate::host_functions::drain();
    }
    None
}

/// What a panic in `symbol`'s body answers: `CUDA_ERROR_UNKNOWN`, the panic named on stderr.
/// Apart from the entry points, so that each of them carries only the call.
#[cold]
#[inline(never)]
fn panicked(symbol: &str, panic: Box<dyn std::any::Any + Send>) -> CUresult {
    let why = panic.downcast_ref::<String>().map(String::as_str).or(panic.downcast_ref::<&str>().copied());
    peerpool::fault::notice(&format!("peerpool-shim: {symbol} panicked: {}", why.unwrap_or("(no message)")));
    CUresult::CUDA_ERROR_UNKNOWN
}

/// Forwards the entry point `symbol` to the real library through the fault rules and the trace
/// (the simulator's, under the same names); `call` calls the real entry point at the address
/// given. A library without the symbol (an older driver) answers `CUDA_ERROR_NOT_FOUND`.
#[inline]
pub(crate) fn forward(
    real: &'static Real,
    symbol: &'static str,
    slot: &Slot,
    args: impl FnOnce() -> String,
    call: impl FnOnce(*mut std::ffi::c_void) -> CUresult,
) -> CUresult {
    let made = || match real.resolve(slot, symbol) {
        Some(address) => call(address),
        None => {
            name_once(symbol, "is not in the real libcuda: it answers CUDA_ERROR_NOT_FOUND");
            CUresult::CUDA_ERROR_NOT_FOUND
        }
    };
    if real.ledger.is_idle() {
        return made(); // no rule, no trace: the address, then the call
    }
    let name = documented_name(symbol);
    let code = match TEXT_LOOKUPS.contains(&name) {
        true => made(),
        false => ruled(&real.ledger, name, made),
    };
    real.ledger.trace(name, args, Code(code));
    code
}

/// Calls that only look up text: no rule, and no sticky fault, reaches them (as on hardware,
/// where a dead context still names its error).
const TEXT_LOOKUPS: [&str; 2] = ["cuGetErrorName", "cuGetErrorString"];

/// The fault rules' verdict on `name`, then `call` unless a rule fails it before the driver
/// sees it; an `!after` rule replaces the result of the call made.
#[inline]
fn ruled(ledger: &peerpool::fault::Ledger, name: &'static str, call: impl FnOnce() -> CUresult) -> CUresult {
    match ledger.decide(name) {
        Some(fault) if !fault.after => fault.code.to_bindings(),
        fault => {
            let made = call();
            fault.map_or(made, |f| f.code.to_bindings())
        }
    }
}

/// A call the simulator refused on a stream in capture (`graphs.rs` captures what it can before
/// the simulator sees it): the capture is invalidated, as the driver invalidates it, and the
/// call named once.
#[cold]
fn uncaptured(symbol: &'static str) -> CUresult {
    if let Some(stream) = sim().take_capture_refusal() {
        crate::graphs::invalidate(stream);
        name_once(
            symbol,
            "on a stream in capture is refused (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED), and the capture \
             invalidated: the driver forbids it in capture, or the simulator does not capture it",
        );
    }
    CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
}

/// A result code as the trace writes it, formatted only when a trace is written.
struct Code(CUresult);

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

/// Prints `peerpool-shim: <symbol> <what>` on stderr the first time only.
fn name_once(symbol: &'static str, what: &str) {
    name_once_owned(symbol.to_string(), what)
}

/// [`name_once`] for a name made at run time.
pub(crate) fn name_once_owned(name: String, what: &str) {
    static NAMED: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    let mut named = NAMED.lock().unwrap_or_else(|e| e.into_inner());
    if named.get_or_insert_with(HashSet::new).insert(name.clone()) {
        peerpool::fault::notice(&format!("peerpool-shim: {name} {what}"));
    }
}

/// The simulator behind the entry points (only called inside [`enter`], after `cuInit`).
pub(crate) fn sim() -> &'static SimDriver {
    &runtime::get().expect("entry points run after cuInit").sim
}

/// The name CUDA documents for an exported symbol: `cuMemAlloc` for `cuMemAlloc_v2`.
pub(crate) fn documented_name(symbol: &'static str) -> &'static str {
    peerpool::driver::documented_name(symbol)
}

/// A call's error code.
pub(crate) fn code<T>(result: DriverResult<T>) -> Result<T, CUresult> {
    result.map_err(|e| e.code.to_bindings())
}

/// `name=value` pairs for the trace.
pub(crate) fn show_args(args: &[(&str, String)]) -> String {
    args.iter().map(|(name, value)| format!("{name}={value}")).collect::<Vec<_>>().join(" ")
}

/// The body of an entry point the simulator does not model: `CUDA_ERROR_NOT_SUPPORTED`, named
/// once on stderr.
pub(crate) fn not_simulated(symbol: &'static str) -> Answer {
    name_once(symbol, "is not simulated: it answers CUDA_ERROR_NOT_SUPPORTED");
    Err(CUresult::CUDA_ERROR_NOT_SUPPORTED)
}

/// The body of the exported entry point `$name`, whose parameters are the `$arg`s: forwarded
/// when the backend is real; else `$body`, an [`Answer`], runs through [`enter`]. Each entry
/// point is a plain `pub unsafe extern "C" fn` around it (`exports/`), so that its name finds it.
///
/// The body reads and writes through the caller's pointers as the CUDA driver API documents for
/// the call: that is the C caller's promise, and the `# Safety` of every export.
macro_rules! entry {
    ($name:ident($($arg:ident),* $(,)?), $body:block) => {{
        $crate::boundary::forward_if_real!($name($($arg),*));
        // SAFETY: the caller's, above.
        #[allow(unused_unsafe)]
        let body = || unsafe { $body };
        $crate::boundary::enter(
            stringify!($name),
            || $crate::boundary::show_args(&[$((stringify!($arg), format!("{:?}", $arg))),*]),
            body,
        )
    }};
}
pub(crate) use entry;

/// Defines the exported entry points the simulator does not model, one a line with its C
/// signature (`unsupported.rs`): forwarded when the backend is real; on the simulator each
/// answers [`not_simulated`]. Writes the module's `table()` too.
macro_rules! stubs {
    ($( fn $name:ident($($arg:ident: $ty:ty),* $(,)?); )*) => {
        $(
            /// # Safety
            /// Every pointer is valid for what the CUDA driver API documents this call reads or
            /// writes.
            #[unsafe(no_mangle)]
            #[allow(non_snake_case, clippy::missing_safety_doc)]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> cudarc::driver::sys::CUresult {
                $crate::boundary::entry!($name($($arg),*), { $crate::boundary::not_simulated(stringify!($name)) })
            }
        )*

        $crate::boundary::entry_table!($($name),*);
    };
}
pub(crate) use stubs;

/// Defines the per-thread default stream's variants (`name = base(params)`): forwarded to
/// NVIDIA's variant of the same name when the backend is real; on the simulator, whose default
/// streams are one, the call of `base`, the entry point the variant stands for. Writes the
/// module's `table()` too.
macro_rules! per_thread {
    ($( $name:ident = $base:path [$($arg:ident: $ty:ty),* $(,)?]; )*) => {
        $(
            /// # Safety
            /// As for the entry point this variant stands for.
            #[unsafe(no_mangle)]
            #[allow(non_snake_case, clippy::missing_safety_doc)]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> cudarc::driver::sys::CUresult {
                $crate::boundary::forward_if_real!($name($($arg),*));
                type Base = unsafe extern "C" fn($($ty),*) -> cudarc::driver::sys::CUresult;
                // SAFETY: `base` is exported with this C signature (its Rust parameter types may
                // name the same C types differently, e.g. an enum as `c_uint`); the caller's
                // promise passes on.
                unsafe {
                    let base = std::mem::transmute::<*const (), Base>($base as *const ());
                    base($($arg),*)
                }
            }
        )*

        $crate::boundary::entry_table!($($name),*);
    };
}
pub(crate) use per_thread;

/// A module's `table()` of its entry points for `cuGetProcAddress`, each by its exported name
/// (the function's own).
macro_rules! entry_table {
    ($($name:ident),* $(,)?) => {
        /// This module's entry points, by exported name.
        pub(crate) fn table() -> Vec<(&'static str, *const std::ffi::c_void)> {
            vec![$((stringify!($name), $name as *const std::ffi::c_void)),*]
        }
    };
}
pub(crate) use entry_table;

/// In an entry point `$name` with these parameters: when the backend is real, returns what
/// NVIDIA's entry point of that name answers, through the fault rules and the trace.
macro_rules! forward_if_real {
    ($name:ident($($arg:ident),*)) => {
        if let Some(real) = $crate::backend::real() {
            static REAL: $crate::backend::Slot = $crate::backend::Slot::new();
            return $crate::boundary::forward(
                real,
                stringify!($name),
                &REAL,
                || $crate::boundary::show_args(&[$((stringify!($arg), format!("{:?}", $arg))),*]),
                // SAFETY: the real library's symbol of this name is this entry point, with the
                // driver API's signature: these parameters' types, which the call infers; the
                // caller's promise passes on.
                |address| unsafe {
                    std::mem::transmute::<
                        *mut std::ffi::c_void,
                        unsafe extern "C" fn($($crate::boundary::infer!($arg)),*) -> cudarc::driver::sys::CUresult,
                    >(address)($($arg),*)
                },
            );
        }
    };
}
pub(crate) use forward_if_real;

/// `_`, a type the compiler infers, for each parameter `forward_if_real!` passes on.
macro_rules! infer {
    ($arg:ident) => {
        _
    };
}
pub(crate) use infer;
