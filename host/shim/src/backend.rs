//! Who answers the entry points: the simulator (the default) or NVIDIA's libcuda, forwarded to
//! through the same fault rules and trace (`PEERPOOL_SHIM_BACKEND=real`). Decided once, from
//! the environment, at the first call of any entry point.
//!
//! Forwarding costs one atomic load for the backend, one for the entry point's resolved address
//! and two for the ledger while no rule and no trace is set: no lock, no allocation.

use peerpool::fault::Ledger;
use peerpool_sim::env::{self, Config, SHIM_MARKER, Target};
use std::ffi::{CStr, c_int, c_void};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicPtr, Ordering};

/// Who answers.
#[allow(clippy::large_enum_variant)] // one value per process, in a static: no copies to save
pub(crate) enum Backend {
    /// The simulator, made at `cuInit` (`runtime.rs`). `pinned`: a forwarding copy of the shim
    /// loaded this one as its real library, so the fault rules and the trace in the
    /// environment are that copy's, and this one ignores them.
    Sim { pinned: bool },
    /// NVIDIA's libcuda.
    Real(Real),
}

/// NVIDIA's libcuda, opened for the life of the process, and the ledger of the calls forwarded.
pub(crate) struct Real {
    library: libloading::os::unix::Library,
    pub(crate) ledger: Ledger,
}

static BACKEND: OnceLock<Result<Backend, String>> = OnceLock::new();

/// The backend, decided at the first call; a mistake is printed once and kept.
pub(crate) fn get() -> &'static Result<Backend, String> {
    BACKEND.get_or_init(|| {
        let decided = decide();
        if let Err(why) = &decided {
            peerpool::fault::notice(&format!("peerpool-shim: {why}"));
        }
        decided
    })
}

/// The real library, when forwarding.
#[inline]
pub(crate) fn real() -> Option<&'static Real> {
    match get() {
        Ok(Backend::Real(real)) => Some(real),
        _ => None,
    }
}

/// Whether the environment's rules and trace belong to a forwarding copy of the shim.
pub(crate) fn pinned() -> bool {
    matches!(get(), Ok(Backend::Sim { pinned: true }))
}

/// Makes this copy of the shim the simulator, whatever the environment says, unless it has
/// already answered a call: 0 when pinned, 1 when too late. A forwarding shim calls it on the
/// library it opened, before anything else, when that library is a copy of the shim (CI tests
/// the forwarding path that way, with no GPU).
#[unsafe(no_mangle)]
pub extern "C" fn peerpool_shim_pin_simulator() -> c_int {
    let decided = BACKEND.get_or_init(|| Ok(Backend::Sim { pinned: true }));
    match decided {
        Ok(Backend::Sim { pinned: true }) => 0,
        _ => 1,
    }
}

fn decide() -> Result<Backend, String> {
    let Config { target, plan, trace, .. } = env::read(env::var)?;
    let (library, path) = match target {
        Target::Simulated(_) => return Ok(Backend::Sim { pinned: false }),
        Target::Real(Some(path)) => (open(&path, true)?, path),
        Target::Real(None) => find()?,
    };
    let ledger = Ledger::new(plan, false);
    let ledger = match trace {
        Some(mut sink) => {
            // The trace says first which library answered (a write error is the trace's loss only).
            let _ = writeln!(sink, "# peerpool-shim: forwarding to {}", path.display());
            ledger.tracing_to(sink)
        }
        None => ledger,
    };
    Ok(Backend::Real(Real { library, ledger }))
}

/// This library's own file, to keep the search from finding it again through its links.
fn own_file() -> Option<PathBuf> {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr reads the address of one of this library's functions and fills `info`,
    // whose `dli_fname` points to a NUL-terminated name owned by the loader.
    let found = unsafe { libc::dladdr(peerpool_shim_pin_simulator as *const c_void, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: as above.
    let name = unsafe { CStr::from_ptr(info.dli_fname) };
    std::fs::canonicalize(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name.to_bytes())).ok()
}

/// NVIDIA's libcuda, found as the loader would: the first candidate that is not a shim.
fn find() -> Result<(libloading::os::unix::Library, PathBuf), String> {
    let own = own_file().unwrap_or_default();
    let path = peerpool::env::var("LD_LIBRARY_PATH").map_err(|e| e.to_string())?;
    let candidates = env::libcuda_candidates(path.as_deref(), &own);
    let mut refused = Vec::new();
    for candidate in &candidates {
        match open(candidate, false) {
            Ok(library) => return Ok((library, candidate.clone())),
            Err(why) => refused.push(why),
        }
    }
    Err(format!(
        "{}=real: no NVIDIA libcuda.so.1 found on LD_LIBRARY_PATH, in /etc/ld.so.conf or the system's library \
         directories{}; name it with {}",
        env::BACKEND,
        if refused.is_empty() { String::new() } else { format!(" ({})", refused.join("; ")) },
        env::LIBCUDA
    ))
}

/// Opens `path` as the real library. A copy of the shim is taken (and pinned to the
/// simulator) only when the user named it.
fn open(path: &Path, named: bool) -> Result<libloading::os::unix::Library, String> {
    use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};
    // SAFETY: loading runs the library's initialisers: NVIDIA's libcuda, or a copy of this
    // shim, which has none. RTLD_LOCAL keeps its symbols out of the process's global scope, so
    // the program keeps resolving CUDA's names to this library.
    let library = unsafe { Library::open(Some(path), RTLD_NOW | RTLD_LOCAL) }
        .map_err(|e| format!("{}: {} cannot be loaded: {e}", env::LIBCUDA, path.display()))?;
    let marker = format!("{SHIM_MARKER}\0");
    // SAFETY: the marker is a function taking nothing and returning an int in every shim.
    let pin = unsafe { library.get::<extern "C" fn() -> c_int>(marker.as_bytes()) };
    // This very library (its own file, or a link to it): the loader hands back the shim that is
    // asking, whose backend is being decided, so forwarding to it would never return.
    if let Ok(pin) = &pin
        && **pin as usize == peerpool_shim_pin_simulator as *const () as usize
    {
        return Err(format!("{}: {} is this shim itself, not NVIDIA's libcuda", env::LIBCUDA, path.display()));
    }
    let topology = std::env::var_os(env::TOPOLOGY).is_some_and(|t| !t.is_empty());
    match (pin, named) {
        (Err(_), _) if topology => {
            Err(format!("{} has no meaning: {} is NVIDIA's libcuda, not a simulator", env::TOPOLOGY, path.display()))
        }
        (Err(_), _) => Ok(library),
        (Ok(_), false) => Err(format!("{} is a peerpool shim, not NVIDIA's libcuda", path.display())),
        (Ok(pin), true) if pin() == 0 => Ok(library),
        (Ok(_), true) => {
            Err(format!("{}: the shim at {} has already chosen its backend", env::LIBCUDA, path.display()))
        }
    }
}

/// One entry point's address in the real library, resolved at its first forwarded call.
pub(crate) struct Slot(AtomicPtr<c_void>);

impl Slot {
    pub(crate) const fn new() -> Slot {
        Slot(AtomicPtr::new(std::ptr::null_mut()))
    }
}

impl Real {
    /// The address of `symbol` in the real library, cached in `slot`; `None` when the library
    /// lacks it (an older driver).
    #[inline]
    pub(crate) fn resolve(&self, slot: &Slot, symbol: &str) -> Option<*mut c_void> {
        let cached = slot.0.load(Ordering::Acquire);
        if !cached.is_null() {
            return Some(cached);
        }
        let found = self.address(symbol)?;
        slot.0.store(found, Ordering::Release);
        Some(found)
    }

    /// The address of `symbol` in the real library, looked up now (not on the hot path: the
    /// loader needs a NUL-terminated copy of the name).
    pub(crate) fn address(&self, symbol: &str) -> Option<*mut c_void> {
        // SAFETY: only the address is taken; the caller gives it the entry point's signature.
        let found = unsafe { self.library.get::<*mut c_void>(symbol.as_bytes()) }.ok()?;
        Some(*found).filter(|p| !p.is_null())
    }
}
