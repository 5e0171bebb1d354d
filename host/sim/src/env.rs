//! What the environment asks of a simulated libcuda (`peerpool-shim`), read by its first `cuInit`
//! and checked up front by `peerpool sim`:
//!
//! | variable | meaning | default |
//! | --- | --- | --- |
//! | `PEERPOOL_SIM_TOPOLOGY` | a catalog name (`eight_gpu_nvswitch`) or a TOML file | `two_h200_nvlink` |
//! | `PEERPOOL_SIM_FAULTS` | fault rules, `call[@n\|~p]=CODE[!sticky\|!transient]; ...` (`peerpool::fault`) | none |
//! | `PEERPOOL_SIM_TRACE` | a file to append one line per call to (`-` for stderr) | none |
//! | `PEERPOOL_SIM_SEED` | the seed of the `~p` rules' draws | 0 |
//!
//! Anything wrong is one line on stderr and an error from `cuInit`, never a crash.

use crate::{Topology, catalog, catalog_topology};
use peerpool::fault::FaultPlan;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;

pub const TOPOLOGY: &str = "PEERPOOL_SIM_TOPOLOGY";
pub const FAULTS: &str = "PEERPOOL_SIM_FAULTS";
pub const TRACE: &str = "PEERPOOL_SIM_TRACE";
pub const SEED: &str = "PEERPOOL_SIM_SEED";

/// The names of the variables, in the table's order.
pub const VARIABLES: [&str; 4] = [TOPOLOGY, FAULTS, TRACE, SEED];

/// A simulated libcuda's settings.
pub struct Config {
    /// The machine simulated.
    pub topology: Topology,
    /// The fault rules, seeded.
    pub plan: FaultPlan,
    /// Where trace lines go.
    pub trace: Option<Box<dyn Write + Send>>,
}

/// Reads the settings from `var` (the environment, or a test's map); every mistake is one line.
pub fn read(var: impl Fn(&str) -> Option<String>) -> Result<Config, String> {
    let topology = match var(TOPOLOGY).filter(|t| !t.is_empty()) {
        None => Topology::two_h200(),
        Some(name) => load_topology(&name)?,
    };
    let plan = match var(FAULTS) {
        None => FaultPlan::new(),
        Some(text) => text.parse().map_err(|e| format!("{FAULTS}: {e}"))?,
    };
    let trace: Option<Box<dyn Write + Send>> = match var(TRACE).filter(|t| !t.is_empty()) {
        None => None,
        Some(path) if path == "-" => Some(Box::new(std::io::stderr())),
        Some(path) => {
            let file = OpenOptions::new().create(true).append(true).open(&path);
            Some(Box::new(file.map_err(|e| format!("{TRACE}: cannot open {path}: {e}"))?))
        }
    };
    let seed = match var(SEED) {
        None => 0,
        Some(text) => text.trim().parse().map_err(|_| format!("{SEED}: {text:?} is not a number"))?,
    };
    Ok(Config { topology, plan: FaultPlan { seed, ..plan }, trace })
}

/// A catalog stem, or a path to a TOML file (a name with a `/` or ending in `.toml`).
fn load_topology(name: &str) -> Result<Topology, String> {
    if name.contains('/') || name.ends_with(".toml") {
        if !Path::new(name).is_file() {
            return Err(format!("{TOPOLOGY}: no topology file at {name}"));
        }
        return Topology::load(name).map_err(|e| format!("{TOPOLOGY}: {e}"));
    }
    catalog_topology(name).map_err(|e| {
        let stems: Vec<&str> = catalog().iter().map(|c| c.stem()).collect();
        format!("{TOPOLOGY}: {e} (the catalog has {})", stems.join(", "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn read_from(pairs: &[(&str, &str)]) -> Result<Config, String> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        read(|k| map.get(k).cloned())
    }

    #[test]
    fn defaults_are_the_lent_pair_without_faults() {
        let config = read_from(&[]).unwrap();
        assert_eq!(config.topology.device_count(), 2);
        assert!(config.plan.rules.is_empty() && config.trace.is_none() && config.plan.seed == 0);
    }

    #[test]
    fn each_setting_is_read_and_each_mistake_named() {
        let config =
            read_from(&[(TOPOLOGY, "eight_gpu_nvswitch"), (FAULTS, "cuMemAlloc@2=OUT_OF_MEMORY"), (SEED, "7")]);
        let config = config.unwrap();
        assert_eq!((config.topology.device_count(), config.plan.rules.len(), config.plan.seed), (8, 1, 7));
        for (pairs, says) in [
            (vec![(TOPOLOGY, "no_such_machine")], "no_such_machine"),
            (vec![(TOPOLOGY, "/nowhere/machine.toml")], "no topology file"),
            (vec![(FAULTS, "cuMemAlloc=NOT_A_CODE")], "PEERPOOL_SIM_FAULTS"),
            (vec![(TRACE, "/nowhere/at/all/trace.txt")], "cannot open"),
            (vec![(SEED, "many")], "not a number"),
        ] {
            let error = read_from(&pairs).err().expect("refused");
            assert!(error.contains(says), "{pairs:?}: {error}");
            assert!(!error.contains('\n'), "one line: {error}");
        }
    }
}
