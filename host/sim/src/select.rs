//! Which GPUs a process checks, chosen by the environment, for code that opens them itself
//! (`peerpool_fixtures::Hardware::detect`, `peerpool check`): one test binary serves CPU and GPU
//! CI alike.
//!
//! | variable | meaning | default |
//! | --- | --- | --- |
//! | `PEERPOOL_TOPOLOGY` | `real` (the CUDA driver), or a catalog name (`four_gpu_islands`) or TOML file (a name with a `/` or ending in `.toml`): that topology, simulated | `real` |
//! | `PEERPOOL_REQUIRE_GPUS` | `N`: at least N real GPUs must be there; none, fewer, or a simulated topology in their place is an error with its own exit code (69) instead of skips or a simulated fallback | not required |
//!
//! `PEERPOOL_TOPOLOGY` is also the libcuda shim's topology ([`crate::env::topology`] reads it
//! for both, with its deprecated names), so one setting names the machine wherever it is
//! simulated. Who simulates it: the shim, when the libcuda this process would load is
//! peerpool's (under `peerpool sim`, whose fault rules and trace then see every call; the
//! process opens it as the real driver, [`Choice::Shim`]); otherwise this process itself,
//! behind peerpool's driver seam ([`Choice::Simulated`]), and NVIDIA's libcuda, if present, is
//! never initialised. Programs that do not use peerpool (cudarc, C, Python) can only be
//! simulated through the shim.

use crate::Topology;
pub use crate::env::resolve_topology;
use peerpool::text::echo;

/// The topology setting: `real`, or a simulated topology.
pub use crate::env::TOPOLOGY;
/// The GPUs-required mode: the least number of real GPUs.
pub const REQUIRE_GPUS: &str = "PEERPOOL_REQUIRE_GPUS";

/// What [`TOPOLOGY`] asks for.
#[derive(Clone, Debug)]
pub enum Choice {
    /// The CUDA driver and its GPUs (or none, where there is no driver).
    Real,
    /// A topology simulated in this process.
    Simulated {
        /// The name it was given by (a catalog stem or a file's path).
        name: String,
        /// The topology.
        topology: Topology,
        /// The variable that named it: [`TOPOLOGY`], or a deprecated name of it.
        variable: &'static str,
    },
    /// A topology the libcuda shim simulates: this process's libcuda is peerpool's shim, which
    /// reads the same setting, so the process opens it as the CUDA driver.
    Shim {
        /// The name it was given by.
        name: String,
        /// The variable that named it.
        variable: &'static str,
    },
}

/// Reads [`TOPOLOGY`] from `var` (the environment through [`crate::env::var`], or a test's
/// map). An unknown name, a topology file that cannot be read, names that disagree, or a value
/// that is not UTF-8 is an error naming the variable. Never [`Choice::Shim`]: that is
/// [`choice_from_env`]'s, which looks at the library.
pub fn choice(var: impl Fn(&str) -> Result<Option<String>, String>) -> Result<Choice, String> {
    match crate::env::topology(var)? {
        None => Ok(Choice::Real),
        Some((_, value)) if value == "real" => Ok(Choice::Real),
        Some((variable, name)) => match resolve_topology(&name) {
            Ok(topology) => Ok(Choice::Simulated { name, topology, variable }),
            Err(e) => Err(format!("{variable}={}: {e} (or `real` for the CUDA driver)", echo(&name))),
        },
    }
}

/// [`choice`] from this process's environment; a simulated topology is [`Choice::Shim`] when
/// the libcuda this process would load is peerpool's shim (opened, not initialised, to ask).
pub fn choice_from_env() -> Result<Choice, String> {
    match choice(crate::env::var)? {
        Choice::Simulated { name, variable, .. } if peerpool::driver::libcuda_exports(crate::env::SHIM_MARKER) => {
            Ok(Choice::Shim { name, variable })
        }
        other => Ok(other),
    }
}

/// Reads [`REQUIRE_GPUS`] from `var`: `None` when unset, empty or `0`; an error when it is not
/// a number, or not UTF-8 (never taken as unset: the mode must not fail open).
pub fn required_gpus(var: impl Fn(&str) -> Result<Option<String>, String>) -> Result<Option<usize>, String> {
    match var(REQUIRE_GPUS)?.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(text) => match text.parse::<usize>() {
            Ok(0) => Ok(None),
            Ok(n) => Ok(Some(n)),
            Err(_) => Err(format!("{REQUIRE_GPUS}=\"{}\": not a number of GPUs", echo(text))),
        },
    }
}

/// [`required_gpus`] from this process's environment.
pub fn required_gpus_from_env() -> Result<Option<usize>, String> {
    required_gpus(crate::env::var)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn with(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Result<Option<String>, String> {
        move |name| Ok(pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string()))
    }

    #[test]
    fn a_refused_setting_is_echoed_escaped_and_cut() {
        let hostile: &'static str = Box::leak(format!("\u{1b}[2J{}", "x".repeat(1 << 20)).into_boxed_str());
        let file: &'static str = Box::leak(format!("./\u{1b}]0;t\u{7}{}.toml", "y".repeat(1 << 16)).into_boxed_str());
        let pairs: Vec<&'static [(&'static str, &'static str)]> = vec![
            Box::leak(Box::new([(TOPOLOGY, hostile)])),
            Box::leak(Box::new([(TOPOLOGY, file)])),
            Box::leak(Box::new([(REQUIRE_GPUS, hostile)])),
        ];
        for env in pairs {
            let error = match env[0].0 {
                TOPOLOGY => choice(with(env)).unwrap_err(),
                _ => required_gpus(with(env)).unwrap_err(),
            };
            assert!(!error.chars().any(char::is_control), "{:?}", &error[..error.len().min(300)]);
            assert!(error.len() < 1024, "{} bytes", error.len());
        }
    }

    #[test]
    fn a_setting_that_cannot_be_read_is_an_error_not_unset() {
        let unreadable = |name: &str| Err(format!("{name} is set to a value that is not UTF-8"));
        assert!(choice(unreadable).unwrap_err().contains("PEERPOOL_TOPOLOGY"));
        assert!(required_gpus(unreadable).unwrap_err().contains("PEERPOOL_REQUIRE_GPUS"));
    }

    #[test]
    fn unset_empty_and_real_are_the_driver() {
        for env in [&[][..], &[(TOPOLOGY, "")], &[(TOPOLOGY, "real")], &[(TOPOLOGY, " real ")]] {
            let pairs: &'static [(&str, &str)] = env;
            assert!(matches!(choice(with(pairs)), Ok(Choice::Real)));
        }
    }

    #[test]
    fn a_catalog_name_is_simulated_and_a_typo_is_named() {
        match choice(with(&[(TOPOLOGY, "four_gpu_islands")])) {
            Ok(Choice::Simulated { name, topology, variable }) => {
                assert_eq!((name.as_str(), topology.device_count(), variable), ("four_gpu_islands", 4, TOPOLOGY));
            }
            other => panic!("{other:?}"),
        }
        let e = choice(with(&[(TOPOLOGY, "four_gpu_island")])).unwrap_err();
        assert!(e.starts_with("PEERPOOL_TOPOLOGY=four_gpu_island: ") && e.contains("two_h200_nvlink"), "{e}");
        let e = choice(with(&[(TOPOLOGY, "./nowhere.toml")])).unwrap_err();
        assert!(e.contains("topology file ./nowhere.toml does not exist"), "{e}");
    }

    /// The deprecated names are read as the one setting, named where they are the source, and
    /// refused when they disagree with it.
    #[test]
    fn a_deprecated_name_is_read_and_a_disagreement_refused() {
        match choice(with(&[("PEERPOOL_HARDWARE", "one_gpu")])) {
            Ok(Choice::Simulated { variable, .. }) => assert_eq!(variable, "PEERPOOL_HARDWARE"),
            other => panic!("{other:?}"),
        }
        let e = choice(with(&[(TOPOLOGY, "real"), ("PEERPOOL_SIM_TOPOLOGY", "one_gpu")])).unwrap_err();
        assert!(e.contains("disagree") && e.contains("PEERPOOL_SIM_TOPOLOGY=one_gpu"), "{e}");
    }

    /// A topology file that cannot be read is said to be what it is: a link loop, a link to
    /// nothing, a device, a directory, not "does not exist".
    #[test]
    fn a_topology_file_that_cannot_be_read_is_named_for_what_it_is() {
        let dir = std::env::temp_dir().join(format!("peerpool-select-kinds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b, dangling) = (dir.join("a.toml"), dir.join("b.toml"), dir.join("dangling.toml"));
        std::os::unix::fs::symlink(&b, &a).unwrap();
        std::os::unix::fs::symlink(&a, &b).unwrap();
        std::os::unix::fs::symlink(dir.join("nowhere"), &dangling).unwrap();
        let said = |path: &Path| resolve_topology(path.to_str().unwrap()).unwrap_err();
        let (looped, nothing, device, directory) =
            (said(&a), said(&dangling), said(Path::new("/dev/null")), said(&dir));
        let missing = said(&dir.join("missing.toml"));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(looped.ends_with("is a symbolic link loop"), "{looped}");
        assert!(nothing.ends_with("is a symbolic link to nothing"), "{nothing}");
        assert!(device.contains("is a character device"), "{device}");
        assert!(directory.contains("is a directory"), "{directory}");
        assert!(missing.ends_with("missing.toml does not exist"), "{missing}");
    }

    #[test]
    fn required_gpus_is_a_count() {
        assert_eq!(required_gpus(with(&[])), Ok(None));
        assert_eq!(required_gpus(with(&[(REQUIRE_GPUS, "0")])), Ok(None));
        assert_eq!(required_gpus(with(&[(REQUIRE_GPUS, " 2 ")])), Ok(Some(2)));
        assert!(required_gpus(with(&[(REQUIRE_GPUS, "two")])).unwrap_err().contains("not a number"));
        assert!(required_gpus(with(&[(REQUIRE_GPUS, "-1")])).is_err());
    }
}
