//! The shim's one simulated process: made by the first `cuInit` from the environment
//! (`peerpool_sim::env`) and kept for the life of the process.

use peerpool::fault::Ledger;
use peerpool_sim::SimDriver;
use peerpool_sim::env::{self, Config, Target};
use std::sync::OnceLock;

/// The simulator and the ledger of the C calls made on it (fault rules and the trace).
pub(crate) struct Runtime {
    pub(crate) sim: SimDriver,
    pub(crate) ledger: Ledger,
    /// `CUDA_VISIBLE_DEVICES` names a GPU twice: every `cuInit` fails.
    pub(crate) visible_twice: bool,
}

impl Runtime {
    /// Marks the driver started (a `cuInit` that succeeded).
    pub(crate) fn started(&'static self) {
        STARTED.get_or_init(|| self);
    }
}

/// The runtime once a `cuInit` has succeeded: until then every other call is
/// `CUDA_ERROR_NOT_INITIALIZED`, also after a `cuInit` that a fault rule failed. Apart from
/// [`RUNTIME`] so that every call finds it with one load and one comparison.
static STARTED: OnceLock<&'static Runtime> = OnceLock::new();

/// What the first `cuInit` made of the environment: the runtime, or why there is none.
static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();

/// `cuInit`: reads the environment the first time; a mistake is printed once, and every
/// `cuInit` returns it. A copy of the shim pinned by a forwarding one reads only the topology
/// (and, as NVIDIA's driver would, `CUDA_VISIBLE_DEVICES`): the rules and the trace are the
/// forwarder's.
pub(crate) fn init() -> Result<&'static Runtime, &'static str> {
    let made = RUNTIME.get_or_init(|| {
        let pinned = crate::backend::pinned();
        let own = [env::TOPOLOGY, env::TIMING, peerpool_sim::visible::VISIBLE];
        let var = |name: &str| match pinned && !own.contains(&name) {
            true => Ok(None),
            false => env::var(name),
        };
        let made = env::read(var).and_then(|Config { target, plan, trace, timing, visible_twice }| {
            let Target::Simulated(topology) = target else { return Err("the simulator was asked to forward".into()) };
            let ledger = Ledger::new(plan, false);
            let ledger = match trace {
                Some(sink) => ledger.tracing_to(sink),
                None => ledger,
            };
            let sim = match timing {
                Some(model) => SimDriver::new(topology).timed(model),
                None => SimDriver::new(topology),
            };
            // A destroyed pool's handle in a C program is an error code and one line, not a panic.
            let sim = sim.refusing_destroyed_pools();
            Ok(Runtime { sim, ledger, visible_twice })
        });
        if let Err(why) = &made {
            peerpool::fault::notice(&format!("peerpool-shim: {why}"));
        }
        made
    });
    made.as_ref().map_err(String::as_str)
}

/// The simulated driver's CUDA version (`cuDriverGetVersion`'s), known before `cuInit` as
/// NVIDIA's driver knows its own: the default where the settings are wrong (`cuInit` says so).
pub(crate) fn driver_version() -> std::ffi::c_int {
    init().map_or(peerpool_sim::DRIVER_VERSION, |r| r.sim.driver_version())
}

/// The runtime, once a `cuInit` has succeeded.
#[inline]
pub(crate) fn get() -> Option<&'static Runtime> {
    STARTED.get().copied()
}
