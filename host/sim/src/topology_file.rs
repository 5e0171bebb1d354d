//! The TOML form of a [`Topology`] and the checks it passes before anything is built.
//!
//! A topology file is input from anywhere (`peerpool check --topology FILE`), so every number
//! is checked against the range below before a device or a link table is allocated; anything
//! else is a [`TopologyError`] naming the field, never a panic or an unbounded allocation.
//!
//! | field | accepted |
//! | --- | --- |
//! | text | at most [`MAX_TOPOLOGY_BYTES`] of UTF-8, from a file or a pipe (`input.rs`) |
//! | devices, all groups together | 0 to [`MAX_DEVICES`]; each group's `count` at least 1 |
//! | `name` (machine, device group) | 1 to 256 bytes, no control characters |
//! | `description`, `stands_for` | at most 4096 bytes each |
//! | `kernel_timeout_s` | 0 to 604800: seconds one kernel launch may run before the simulated driver stops it with `CUDA_ERROR_LAUNCH_TIMEOUT` (0: no limit); by default 120 |
//! | `driver_version` | 1000 to 99999 (`cuDriverGetVersion`'s 1000 × major + 10 × minor): which PTX ISA loads and which entry points `cuGetProcAddress` gives follow it; by default the newest the executor reads (13050) |
//! | `memory_mib` / `memory_bytes` | 1 byte to 16 TiB |
//! | `sms` | 1 to 4096 |
//! | `compute_capability` | two numbers: major 1 to 99, minor 0 to 9 |
//! | `pool_handle_types` | bits of `CUmemAllocationHandleType` only (0x1, 0x2, 0x4, 0x8) |
//! | link `rank` | 0 to 1000 |
//! | islands | devices that exist, each once, in at most one island |
//! | pairs, faults | devices that exist, two different ones, each ordered pair once |
//! | fault `period`, `xor` | period at least 1; xor not 0 for `corrupt` |

use super::topology::{FaultKind, Link, LinkFault, MAX_DEVICES, Topology, TopologyError, bus_id};
use crate::DeviceSpec;
use peerpool::driver::HandleKinds;
use peerpool::text::{clipped, echo};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Display;
use std::ops::RangeInclusive;
use std::path::Path;

/// The longest topology text read (1 MiB): the catalog's largest file is under 2 KiB.
pub const MAX_TOPOLOGY_BYTES: usize = 1 << 20;
const NAME_BYTES: RangeInclusive<usize> = 1..=256;
const DESCRIPTION_BYTES: usize = 4096;
const DRIVER_VERSIONS: RangeInclusive<i32> = 1000..=99_999;
/// Seconds, a week at most (0: no limit).
const KERNEL_TIMEOUTS: RangeInclusive<u64> = 0..=604_800;
const MEMORY_BYTES: RangeInclusive<u64> = 1..=(16 << 40);
const SMS: RangeInclusive<i32> = 1..=4096;
const CC_MAJOR: RangeInclusive<i32> = 1..=99;
const CC_MINOR: RangeInclusive<i32> = 0..=9;
const HANDLE_TYPE_BITS: u32 = 0xF;
const RANKS: RangeInclusive<i32> = 0..=1000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TopologyFile {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    stands_for: String,
    #[serde(default = "newest_driver")]
    driver_version: i32,
    #[serde(default = "default_kernel_timeout")]
    kernel_timeout_s: u64,
    devices: Vec<DeviceGroup>,
    #[serde(default)]
    links: LinksFile,
    #[serde(default)]
    faults: Vec<FaultFile>,
}

fn default_kernel_timeout() -> u64 {
    crate::topology::KERNEL_TIMEOUT_S
}

fn newest_driver() -> i32 {
    crate::topology::DRIVER_VERSION
}

/// `count` identical devices, numbered after the groups before.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DeviceGroup {
    #[serde(default = "one")]
    count: usize,
    name: String,
    /// Total memory in MiB, or exactly in bytes with `memory_bytes` (one of the two).
    #[serde(default)]
    memory_mib: Option<u64>,
    #[serde(default)]
    memory_bytes: Option<u64>,
    sms: i32,
    /// Major and minor: read as a list, so that a third number is refused rather than dropped
    /// (serde reads an array's first two and ignores the rest).
    compute_capability: Vec<i32>,
    #[serde(default = "yes")]
    pools: bool,
    #[serde(default)]
    pool_handle_types: u32,
}

fn one() -> usize {
    1
}

fn yes() -> bool {
    true
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LinksFile {
    /// Every ordered pair; absent means no peer path.
    default: Option<Link>,
    #[serde(default)]
    islands: Vec<IslandFile>,
    #[serde(default)]
    pairs: Vec<PairFile>,
}

/// Every ordered pair inside `devices` gets `link` (NVLink when omitted).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IslandFile {
    devices: Vec<usize>,
    #[serde(default)]
    link: Link,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PairFile {
    from: usize,
    to: usize,
    #[serde(default = "yes")]
    access: bool,
    #[serde(default = "yes")]
    atomics: bool,
    #[serde(default)]
    rank: i32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FaultFile {
    from: usize,
    to: usize,
    kind: FaultKind,
    #[serde(default = "page")]
    period: u64,
    #[serde(default = "low_bit")]
    xor: u8,
}

fn page() -> u64 {
    4096
}
fn low_bit() -> u8 {
    1
}

/// `value` if it lies in `range`, else why not.
fn within<T: PartialOrd + Display>(what: &str, value: T, range: &RangeInclusive<T>) -> Result<T, String> {
    if range.contains(&value) {
        Ok(value)
    } else {
        Err(format!("{what} = {value} is outside {}..={}", range.start(), range.end()))
    }
}

/// `text` if it is a name (1 to 256 bytes, no control characters), else why not, without
/// repeating it: the caller's message names it once.
fn name(text: &str) -> Result<String, String> {
    if !NAME_BYTES.contains(&text.len()) {
        return Err(format!("is {} bytes long, outside {}..={}", text.len(), NAME_BYTES.start(), NAME_BYTES.end()));
    }
    if text.chars().any(char::is_control) {
        return Err("holds control characters".into());
    }
    Ok(text.to_string())
}

/// A device group as messages name it: `device group "<name, escaped and cut>"`.
fn group_at(name: &str) -> String {
    format!("device group \"{}\"", echo(name))
}

fn link(what: &str, link: Link) -> Result<Link, String> {
    within(&format!("{what}: rank"), link.rank, &RANKS)?;
    Ok(link)
}

impl DeviceGroup {
    /// The group's device, checked.
    fn spec(&self) -> Result<DeviceSpec, String> {
        let at = group_at(&self.name);
        let memory = match (self.memory_bytes, self.memory_mib) {
            (Some(bytes), None) => bytes,
            (None, Some(mib)) => {
                mib.checked_mul(1 << 20).ok_or_else(|| format!("{at}: memory_mib = {mib} overflows"))?
            }
            _ => return Err(format!("{at}: give memory_mib or memory_bytes")),
        };
        let [major, minor] = self.compute_capability[..] else {
            return Err(format!(
                "{at}: compute_capability has {} numbers; give two numbers, major and minor ([9, 0])",
                self.compute_capability.len()
            ));
        };
        if self.pool_handle_types & !HANDLE_TYPE_BITS != 0 {
            return Err(format!("{at}: pool_handle_types = {:#x} has unknown bits", self.pool_handle_types));
        }
        Ok(DeviceSpec {
            name: name(&self.name).map_err(|why| format!("{at}: the name {why}"))?,
            total_memory: within(&format!("{at}: memory in bytes"), memory, &MEMORY_BYTES)?,
            sms: within(&format!("{at}: sms"), self.sms, &SMS)?,
            compute_capability: (
                within(&format!("{at}: compute capability major"), major, &CC_MAJOR)?,
                within(&format!("{at}: compute capability minor"), minor, &CC_MINOR)?,
            ),
            pools_supported: self.pools,
            pool_handle_types: HandleKinds(self.pool_handle_types),
            pci_bus_id: 0,
        })
    }
}

impl Topology {
    /// Parses the catalog's TOML form, checked as `topology_file.rs` lists (at most 1 MiB,
    /// [`MAX_DEVICES`] devices, every number in range, no duplicate pair or fault).
    pub fn from_toml_str(text: &str) -> Result<Topology, TopologyError> {
        let named = |message: String| TopologyError { source_name: "<string>".into(), message };
        if text.len() > MAX_TOPOLOGY_BYTES {
            return Err(named(format!("longer than {MAX_TOPOLOGY_BYTES} bytes")));
        }
        let file: TopologyFile = toml::from_str(text).map_err(|e| named(parse_error(text, &e)))?;
        build(&file).map_err(named)
    }

    /// Reads and parses a TOML file (at most 1 MiB read); errors name the file.
    pub fn load(path: impl AsRef<Path>) -> Result<Topology, TopologyError> {
        let path = path.as_ref();
        let named = |message: String| TopologyError { source_name: path.display().to_string(), message };
        let text = super::input::read_text(path, MAX_TOPOLOGY_BYTES).map_err(named)?;
        Topology::from_toml_str(&text).map_err(|e| named(e.message))
    }
}

/// A TOML error on one line: where, what, and the line itself, escaped and cut (the parser's own
/// rendering spans lines and echoes the line whole, control characters and all).
fn parse_error(text: &str, error: &toml::de::Error) -> String {
    let what = clipped(error.message().trim(), 300);
    let Some(span) = error.span() else { return format!("TOML parse error: {what}") };
    let mut start = span.start.min(text.len());
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line = text[line_start..].split('\n').next().unwrap_or_default();
    let (row, column) = (text[..start].matches('\n').count() + 1, text[line_start..start].chars().count() + 1);
    format!("TOML parse error at line {row}, column {column}: {what} (the line: {})", echo(line))
}

impl<'de> Deserialize<'de> for Topology {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Topology, D::Error> {
        let file = TopologyFile::deserialize(deserializer)?;
        build(&file).map_err(serde::de::Error::custom)
    }
}

fn build(file: &TopologyFile) -> Result<Topology, String> {
    let name = name(&file.name).map_err(|why| format!("name \"{}\" {why}", echo(&file.name)))?;
    if file.description.len() > DESCRIPTION_BYTES {
        return Err(format!("description longer than {DESCRIPTION_BYTES} bytes"));
    }
    if file.stands_for.len() > DESCRIPTION_BYTES {
        return Err(format!("stands_for longer than {DESCRIPTION_BYTES} bytes"));
    }
    let driver_version = within("driver_version", file.driver_version, &DRIVER_VERSIONS)?;
    // Counted and checked before any device or link table is allocated.
    let mut n = 0usize;
    let mut groups = Vec::new();
    for g in &file.devices {
        within(&format!("{}: count", group_at(&g.name)), g.count, &(1..=MAX_DEVICES))?;
        n = n.saturating_add(g.count);
        if n > MAX_DEVICES {
            return Err(format!("more than {MAX_DEVICES} devices"));
        }
        groups.push((g.count, g.spec()?));
    }
    let devices: Vec<DeviceSpec> = groups
        .into_iter()
        .flat_map(|(count, spec)| std::iter::repeat_n(spec, count))
        .enumerate()
        .map(|(i, spec)| DeviceSpec { pci_bus_id: bus_id(i), ..spec })
        .collect();
    let device = |what: &str, d: usize| {
        if d < n { Ok(d) } else { Err(format!("{what}: device {d} does not exist ({n} devices)")) }
    };
    let default = link("links.default", file.links.default.unwrap_or(Link::NONE))?;
    let mut t = Topology::with_links(name, file.description.trim().to_string(), driver_version, devices, default);
    t.stands_for = file.stands_for.trim().to_string();
    t.kernel_timeout_s = within("kernel_timeout_s", file.kernel_timeout_s, &KERNEL_TIMEOUTS)?;
    let mut in_island = BTreeSet::new();
    for island in &file.links.islands {
        let island_link = link("island", island.link)?;
        for &d in &island.devices {
            if !in_island.insert(device("island", d)?) {
                return Err(format!("island: device {d} is listed twice (islands are disjoint)"));
            }
        }
        for &from in &island.devices {
            for &to in &island.devices {
                t.set_link(from, to, island_link);
            }
        }
    }
    let mut seen = BTreeSet::new();
    for p in &file.links.pairs {
        let (from, to) = (device("pair", p.from)?, device("pair", p.to)?);
        if from == to {
            return Err(format!("pair {from} -> {to}: a device is not its own peer"));
        }
        if !seen.insert((from, to)) {
            return Err(format!("pair {from} -> {to} is given twice"));
        }
        t.set_link(from, to, link("pair", Link { access: p.access, atomics: p.atomics, rank: p.rank })?);
    }
    let mut faults = BTreeMap::new();
    for f in &file.faults {
        let (from, to) = (device("fault", f.from)?, device("fault", f.to)?);
        if from == to || f.period == 0 || (f.kind == FaultKind::Corrupt && f.xor == 0) {
            return Err(format!("fault {from} -> {to}: needs two devices, period > 0 and xor != 0"));
        }
        if faults.insert((from, to), LinkFault { kind: f.kind, period: f.period, xor: f.xor }).is_some() {
            return Err(format!("fault {from} -> {to} is given twice"));
        }
    }
    for ((from, to), fault) in faults {
        t.set_fault(from, to, Some(fault));
    }
    Ok(t)
}
