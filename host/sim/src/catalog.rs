//! The topology catalog: the commented TOML files in `topologies/` (in this crate, `host/sim/topologies/` in the repository), embedded at compile time
//! with `include_str!`, so the catalog works from an installed binary with no checkout beside
//! it. A test keeps this list and the directory in step.

use super::topology::{Topology, TopologyError};

/// One catalog file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CatalogEntry {
    /// The file name in `topologies/`, e.g. `"two_h200_nvlink.toml"`.
    pub file: &'static str,
    /// Its text, as embedded.
    pub toml: &'static str,
}

impl CatalogEntry {
    /// The file name without `.toml`: the name [`catalog_topology`] takes.
    pub fn stem(&self) -> &'static str {
        self.file.strip_suffix(".toml").unwrap_or(self.file)
    }

    /// The parsed topology; errors name the file.
    pub fn topology(&self) -> Result<Topology, TopologyError> {
        Topology::from_toml_str(self.toml).map_err(|e| TopologyError { source_name: self.file.into(), ..e })
    }
}

macro_rules! entries {
    ($($file:literal),* $(,)?) => {
        &[$(CatalogEntry {
            file: $file,
            toml: include_str!(concat!("../topologies/", $file)),
        }),*]
    };
}

const CATALOG: &[CatalogEntry] = entries![
    "one_gpu.toml",
    "two_h200_nvlink.toml",
    "four_gpu_islands.toml",
    "eight_gpu_nvswitch.toml",
    "sixteen_gpu_nvswitch.toml",
    "gb200_nvl72_tray.toml",
    "one_way_pair.toml",
    "corrupt_link_pair.toml",
];

/// Every catalog file.
pub fn catalog() -> &'static [CatalogEntry] {
    CATALOG
}

/// The catalog topology named `stem` (`"eight_gpu_nvswitch"`, `"one_way_pair"`, …).
pub fn catalog_topology(stem: &str) -> Result<Topology, TopologyError> {
    match CATALOG.iter().find(|e| e.stem() == stem) {
        Some(entry) => entry.topology(),
        None => {
            Err(TopologyError { source_name: peerpool::text::echo(stem), message: "no such catalog topology".into() })
        }
    }
}
