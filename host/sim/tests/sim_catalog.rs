//! The topology catalog (`host/sim/topologies/*.toml`): every file is embedded, loads, and has the
//! shape its comments document; the TOML form's defaults, islands, overrides and errors.

mod sim_support;

use peerpool::driver::{HandleKinds, P2pAttribute};
use peerpool::{PoolOptions, System};
use peerpool_sim::{FaultKind, Link, LinkFault, SimDriver, Topology, catalog, catalog_topology};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

/// The catalog directory of the checkout the tests run from, found at run time (nextest remaps
/// `CARGO_MANIFEST_DIR` when an archive runs elsewhere).
fn catalog_dir() -> PathBuf {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo and nextest set CARGO_MANIFEST_DIR");
    PathBuf::from(manifest).join("topologies")
}

fn load(stem: &str) -> Topology {
    catalog_topology(stem).unwrap_or_else(|e| panic!("{e}"))
}

/// Every ordered pair `(from, to)` with a peer path.
fn paths(t: &Topology) -> BTreeSet<(usize, usize)> {
    let n = t.device_count();
    (0..n).flat_map(|a| (0..n).map(move |b| (a, b))).filter(|&(a, b)| t.link(a, b).access).collect()
}

fn all_pairs(n: usize) -> BTreeSet<(usize, usize)> {
    (0..n).flat_map(|a| (0..n).filter(move |&b| b != a).map(move |b| (a, b))).collect()
}

#[test]
fn the_embedded_catalog_is_the_directory() {
    let embedded: BTreeSet<&str> = catalog().iter().map(|e| e.file).collect();
    let on_disk: BTreeSet<String> = std::fs::read_dir(catalog_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|f| f.ends_with(".toml"))
        .collect();
    assert_eq!(embedded.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>(), on_disk);
    for entry in catalog() {
        let text = std::fs::read_to_string(catalog_dir().join(entry.file)).unwrap();
        assert_eq!(text, entry.toml, "{} is stale in this build", entry.file);
        let from_disk = Topology::load(catalog_dir().join(entry.file)).unwrap();
        assert_eq!(from_disk, entry.topology().unwrap(), "{}", entry.file);
    }
}

#[test]
fn every_catalog_topology_opens_as_a_system() {
    for entry in catalog() {
        let topology = entry.topology().unwrap_or_else(|e| panic!("{e}"));
        assert!(!topology.description.is_empty(), "{} has no description", entry.file);
        assert!(!topology.stands_for.is_empty(), "{} does not say what machine it stands for", entry.file);
        let n = topology.device_count();
        let system = System::with_driver(Arc::new(SimDriver::new(topology.clone()))).unwrap();
        let facts = system.facts().unwrap();
        assert_eq!(facts.devices.len(), n, "{}", entry.file);
        assert_eq!(facts.driver, format!("simulated: {}", topology.name));
        assert!(facts.devices.iter().all(|d| d.current_pool_is_default && d.pools_supported));
        let last = system.create_pool(n - 1, PoolOptions::default()).unwrap();
        assert_eq!(system.pool_access_table(last.as_ref()).unwrap().len(), n);
    }
}

#[test]
fn one_gpu_has_no_pairs() {
    let t = load("one_gpu");
    assert_eq!(t.device_count(), 1);
    assert!(paths(&t).is_empty());
    assert_eq!(t.devices[0].pool_handle_types, HandleKinds(0x9));
}

#[test]
fn two_h200_nvlink_is_the_lent_machine() {
    let t = load("two_h200_nvlink");
    assert_eq!(t, Topology::two_h200(), "the file and the built-in must agree");
    assert_eq!(t.devices[0].name, "NVIDIA H200");
    assert_eq!(t.devices[0].total_memory >> 20, 143_155);
    assert_eq!((t.devices[1].sms, t.devices[1].compute_capability), (132, (9, 0)));
    assert_eq!(t.link(0, 1), Link::NVLINK);
    assert_eq!(t.link(1, 0), Link::NVLINK);
    // The newest driver the simulator reads, not the machine's own 13.0 (`--driver-version`).
    assert_eq!(t.driver_version, peerpool_sim::DRIVER_VERSION);
}

#[test]
fn four_gpu_islands_are_two_pairs() {
    let t = load("four_gpu_islands");
    assert_eq!(t.device_count(), 4);
    assert_eq!(paths(&t), [(0, 1), (1, 0), (2, 3), (3, 2)].into_iter().collect());
    assert_eq!(t.devices[3].pool_handle_types, HandleKinds::POSIX_FD);
}

#[test]
fn eight_gpu_nvswitch_is_all_to_all() {
    let t = load("eight_gpu_nvswitch");
    assert_eq!(paths(&t), all_pairs(8));
    assert!(all_pairs(8).iter().all(|&(a, b)| t.link(a, b).atomics));
}

#[test]
fn one_way_pair_reaches_0_from_1_only() {
    let t = load("one_way_pair");
    assert_eq!(paths(&t), [(1, 0)].into_iter().collect());
    let sim = SimDriver::new(t);
    assert_eq!(sim.device_get_p2p_attribute(P2pAttribute::AccessSupported, 1, 0).unwrap(), 1);
    assert_eq!(sim.device_get_p2p_attribute(P2pAttribute::AccessSupported, 0, 1).unwrap(), 0);
    assert_eq!(sim.device_get_p2p_attribute(P2pAttribute::NativeAtomicSupported, 1, 0).unwrap(), 0);
    assert_eq!(sim.device_get_p2p_attribute(P2pAttribute::PerformanceRank, 1, 0).unwrap(), 1);
}

#[test]
fn corrupt_link_pair_corrupts_0_to_1_only() {
    let t = load("corrupt_link_pair");
    assert_eq!(paths(&t), all_pairs(2));
    let faults: Vec<_> = t.faults().collect();
    assert_eq!(faults, [((0, 1), LinkFault { kind: FaultKind::Corrupt, period: 4096, xor: 1 })]);
}

#[test]
fn sixteen_gpu_nvswitch_is_a_dgx2_all_to_all() {
    let t = load("sixteen_gpu_nvswitch");
    assert_eq!(t.device_count(), 16);
    assert_eq!(paths(&t), all_pairs(16));
    assert!(t.devices.iter().all(|d| d.name == "Tesla V100-SXM3-32GB" && d.compute_capability == (7, 0)));
    let buses: BTreeSet<i32> = t.devices.iter().map(|d| d.pci_bus_id).collect();
    assert_eq!(buses.len(), 16, "distinct bus ids");
}

#[test]
fn an_nvl72_tray_is_the_four_gpus_one_operating_system_sees() {
    // No NVL72 rack shows its 72 GPUs to one process: a tray's operating system sees its own 4,
    // and the rest are reached through fabric handles.
    let t = load("gb200_nvl72_tray");
    assert_eq!(t.device_count(), 4);
    assert_eq!(paths(&t), all_pairs(4));
    assert!(t.devices.iter().all(|d| d.name == "NVIDIA GB200" && d.pool_handle_types.contains(HandleKinds::FABRIC)));
    assert!(catalog().iter().all(|e| e.topology().unwrap().device_count() <= 16), "no rack-sized single process");
}

#[test]
fn links_apply_default_then_islands_then_pairs() {
    let t = Topology::from_toml_str(
        r#"
        name = "layers"
        [[devices]]
        count = 3
        name = "X"
        memory_mib = 1
        sms = 1
        compute_capability = [9, 0]
        [links]
        default = { access = false }
        [[links.islands]]
        devices = [0, 1, 2]
        link = { rank = 2 }
        [[links.pairs]]
        from = 2
        to = 0
        access = false
        "#,
    )
    .unwrap();
    assert_eq!(t.link(0, 1), Link { access: true, atomics: true, rank: 2 });
    assert_eq!(t.link(2, 0), Link { access: false, atomics: true, rank: 0 });
    assert_eq!(t.link(0, 2).rank, 2);
    assert_eq!(t.devices[0].pool_handle_types, HandleKinds::NONE, "handle types default to none");
    assert_eq!(t.driver_version, 13050, "the driver defaults to CUDA 13.5's");
}

#[test]
fn bad_topologies_are_refused_with_a_reason() {
    let device = "[[devices]]\nname = \"X\"\nmemory_mib = 1\nsms = 1\ncompute_capability = [9, 0]\n";
    let cases = [
        ("unknown field", format!("name = \"t\"\ncolour = 1\n{device}"), "colour"),
        ("pair out of range", format!("name = \"t\"\n{device}[[links.pairs]]\nfrom = 0\nto = 5\n"), "device 5"),
        ("self pair", format!("name = \"t\"\n{device}{device}[[links.pairs]]\nfrom = 1\nto = 1\n"), "own peer"),
        (
            "zero period",
            format!("name = \"t\"\n{device}{device}[[faults]]\nfrom = 0\nto = 1\nkind = \"drop\"\nperiod = 0\n"),
            "period",
        ),
        ("bad kind", format!("name = \"t\"\n{device}{device}[[faults]]\nfrom = 0\nto = 1\nkind = \"melt\"\n"), "melt"),
        ("no name", device.to_string(), "name"),
    ];
    for (what, text, needle) in cases {
        let error = Topology::from_toml_str(&text).expect_err(what);
        assert!(error.to_string().contains(needle), "{what}: {error}");
    }
    let missing = Topology::load("/nonexistent/topology.toml").unwrap_err();
    assert!(missing.to_string().contains("/nonexistent/topology.toml"), "{missing}");
    assert!(catalog_topology("no_such_machine").is_err());
}

#[test]
fn topologies_built_in_code() {
    let mut t = Topology::uniform("ring", 4, peerpool_sim::DeviceSpec::h200(), Link::NONE);
    for i in 0..4 {
        t.set_link(i, (i + 1) % 4, Link::NVLINK);
    }
    t.set_fault(3, 0, Some(LinkFault::corrupt()));
    assert_eq!(paths(&t), [(0, 1), (1, 2), (2, 3), (3, 0)].into_iter().collect());
    assert_eq!(t.fault(3, 0), Some(LinkFault::corrupt()));
    t.set_fault(3, 0, None);
    assert_eq!(t.faults().count(), 0);
    assert_eq!(t.link(2, 2), Link::NONE, "the diagonal is never a peer path");
}
