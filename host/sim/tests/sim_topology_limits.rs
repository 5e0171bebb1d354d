//! Topology input is checked before anything is built (`topology_file.rs`): every number in
//! range, at most `MAX_DEVICES` devices, no duplicate pair or fault; and every allowed device
//! count gets disjoint address ranges.

use peerpool::driver::{HandleKinds, PointerAttribute};
use peerpool::{PoolOptions, System};
use peerpool_sim::{DeviceSpec, Link, MAX_DEVICES, MAX_TOPOLOGY_BYTES, SimDriver, Topology};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A topology of one device group with `fields` in it, and `rest` after it.
fn group(fields: &str, rest: &str) -> String {
    format!("name = \"t\"\n[[devices]]\nname = \"X\"\n{fields}\n{rest}")
}

const GOOD: &str = "count = 2\nmemory_mib = 64\nsms = 1\ncompute_capability = [9, 0]";

#[test]
fn every_numeric_field_out_of_range_is_refused_naming_it() {
    let cases = [
        ("count = 1\nmemory_mib = 64\nsms = 536870912\ncompute_capability = [9, 0]", "sms"),
        ("count = 1\nmemory_mib = 64\nsms = 0\ncompute_capability = [9, 0]", "sms"),
        ("count = 1\nmemory_mib = 64\nsms = -3\ncompute_capability = [9, 0]", "sms"),
        ("count = 1\nmemory_mib = 0\nsms = 1\ncompute_capability = [9, 0]", "memory"),
        ("count = 1\nmemory_bytes = 18446744073709551615\nsms = 1\ncompute_capability = [9, 0]", "memory"),
        ("count = 1\nmemory_mib = 18446744073709551615\nsms = 1\ncompute_capability = [9, 0]", "memory_mib"),
        ("count = 1\nmemory_mib = 64\nsms = 1\ncompute_capability = [0, 0]", "major"),
        ("count = 1\nmemory_mib = 64\nsms = 1\ncompute_capability = [9, 10]", "minor"),
        (
            "count = 1\nmemory_mib = 64\nsms = 1\ncompute_capability = [9, 0]\npool_handle_types = 0x10",
            "pool_handle_types",
        ),
        ("count = 0\nmemory_mib = 64\nsms = 1\ncompute_capability = [9, 0]", "count"),
        ("count = 100000\nmemory_mib = 64\nsms = 1\ncompute_capability = [9, 0]", "count"),
    ];
    for (fields, needle) in cases {
        let error = Topology::from_toml_str(&group(fields, "")).expect_err(fields);
        assert!(error.message.contains(needle), "{fields}: {error}");
    }
    for (rest, needle) in [
        ("", "driver_version"), // placed before the group below
        ("[links]\ndefault = { rank = -1 }\n", "rank"),
        ("[[links.pairs]]\nfrom = 0\nto = 1\nrank = 5000\n", "rank"),
        ("[[links.islands]]\ndevices = [0, 1]\nlink = { rank = 1001 }\n", "rank"),
    ] {
        let text = if needle == "driver_version" {
            format!("driver_version = 0\n{}", group(GOOD, rest))
        } else {
            group(GOOD, rest)
        };
        let error = Topology::from_toml_str(&text).expect_err(rest);
        assert!(error.message.contains(needle), "{rest}: {error}");
    }
}

#[test]
fn names_must_be_short_printable_text() {
    for bad in ["", "two\nlines", &"x".repeat(257)] {
        let text = format!("name = {bad:?}\n[[devices]]\nname = \"X\"\n{GOOD}\n");
        assert!(Topology::from_toml_str(&text).is_err(), "{bad:?}");
        let text = format!("name = \"t\"\n[[devices]]\nname = {bad:?}\n{GOOD}\n");
        assert!(Topology::from_toml_str(&text).is_err(), "{bad:?}");
    }
}

/// A compute capability is two numbers, major and minor: `[9, 0, 1]` was taken as 9.0.
#[test]
fn a_compute_capability_is_two_numbers() {
    for cc in ["[9, 0, 1]", "[9]", "[]", "[9, 0, 0, 0]"] {
        let text = group(&format!("count = 1\nmemory_mib = 64\nsms = 1\ncompute_capability = {cc}"), "");
        let error = Topology::from_toml_str(&text).expect_err(cc).to_string();
        assert!(error.contains("compute_capability") && error.contains("two numbers"), "{cc}: {error}");
    }
    let text = group("count = 1\nmemory_mib = 64\nsms = 1\ncompute_capability = [8, 6]", "");
    assert_eq!(Topology::from_toml_str(&text).unwrap().devices[0].compute_capability, (8, 6));
}

/// No message about a topology passes a terminal a control sequence from it (a clear screen, a
/// window title), prints more than a line, or echoes a huge input whole.
fn fit_for_a_terminal(message: &str) -> bool {
    !message.chars().any(|c| c.is_control()) && message.len() < 2048
}

#[test]
fn names_and_parse_errors_reach_a_terminal_escaped_and_cut() {
    let escape = "\\u001b[2J\\u001b]0;pwned\\u0007";
    let line = format!("name = \"{}", "A".repeat(1 << 20));
    for (text, says) in [
        // A name given with TOML escapes: parsed, then refused for its control characters.
        (format!("name = \"x{escape}\"\n[[devices]]\nname = \"X\"\n{GOOD}\n"), "control characters"),
        (format!("name = \"t\"\n[[devices]]\nname = \"A{escape}\"\n{GOOD}\n"), "control characters"),
        // Raw control characters: the parser refuses them and echoes the line.
        ("name = \"x\u{1b}[2J\u{1b}]0;pwned\u{7}\"\n".to_string(), "line 1"),
        ("name = \"t\"\n[[devices]]\nname = \"A\u{1b}[2J\n".to_string(), "line 3"),
        // A line of a mebibyte, never closed.
        (line[..MAX_TOPOLOGY_BYTES - 10].to_string(), "line 1"),
        (format!("name = \"t\"\n[[devices]]\nname = \"{}\"\n{GOOD}\n", "B".repeat(300)), "300 bytes long"),
    ] {
        let error = Topology::from_toml_str(&text).expect_err(&text[..40.min(text.len())]).to_string();
        assert!(fit_for_a_terminal(&error), "{:?}", &error[..error.len().min(400)]);
        assert!(error.contains(says), "{says}: {error}");
    }
    // A device group's name is said once.
    let text = format!("name = \"t\"\n[[devices]]\nname = \"Gpu{escape}\"\n{GOOD}\n");
    let error = Topology::from_toml_str(&text).unwrap_err().to_string();
    assert_eq!(error.matches("Gpu").count(), 1, "{error}");
}

#[test]
fn duplicate_links_faults_and_island_members_are_refused() {
    let pair = "[[links.pairs]]\nfrom = 0\nto = 1\n";
    let fault = "[[faults]]\nfrom = 0\nto = 1\nkind = \"drop\"\n";
    let cases = [
        (format!("{pair}{pair}"), "twice"),
        (format!("{fault}{fault}"), "twice"),
        ("[[links.islands]]\ndevices = [0, 0]\n".to_string(), "twice"),
        ("[[links.islands]]\ndevices = [0, 1]\n[[links.islands]]\ndevices = [1]\n".to_string(), "twice"),
    ];
    for (rest, needle) in cases {
        let error = Topology::from_toml_str(&group(GOOD, &rest)).expect_err(&rest);
        assert!(error.message.contains(needle), "{rest}: {error}");
    }
    Topology::from_toml_str(&group(GOOD, pair)).expect("one pair entry is fine");
}

#[test]
fn device_counts_are_capped_before_anything_is_allocated() {
    let started = Instant::now();
    let many = format!("count = {MAX_DEVICES}\nmemory_mib = 64\nsms = 1\ncompute_capability = [9, 0]");
    let t = Topology::from_toml_str(&group(&many, "")).expect("the cap itself is allowed");
    assert_eq!(t.device_count(), MAX_DEVICES);
    let over = group(&many, "[[devices]]\nname = \"Y\"\nmemory_mib = 64\nsms = 1\ncompute_capability = [9, 0]\n");
    assert!(Topology::from_toml_str(&over).unwrap_err().message.contains("more than 1024 devices"));
    let huge = group("count = 18446744073709551615\nmemory_mib = 64\nsms = 1\ncompute_capability = [9, 0]", "");
    assert!(Topology::from_toml_str(&huge).is_err());
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    let long = format!("{}\n# {}", group(GOOD, ""), "x".repeat(MAX_TOPOLOGY_BYTES));
    assert!(Topology::from_toml_str(&long).unwrap_err().message.contains("longer than"));
}

/// gpu256's pool memory and gpu1023's land on no other device's range and not on gpu0's
/// virtual-memory mapping (they did above 256 GPUs).
#[test]
fn device_ranges_are_disjoint_for_every_allowed_count() {
    let device = DeviceSpec { total_memory: 64 << 20, sms: 1, ..DeviceSpec::h200() };
    let system =
        System::with_driver(Arc::new(SimDriver::new(Topology::uniform("many", MAX_DEVICES, device, Link::NONE))))
            .unwrap();
    let mapped = system.alloc_virtual(0, 2 << 20, HandleKinds::POSIX_FD).unwrap();
    let mut held = Vec::new();
    for ordinal in [0, 1, 255, 256, 257, 511, 512, MAX_DEVICES - 1] {
        let pool = system.create_pool(ordinal, PoolOptions::default()).unwrap();
        let memory = system.alloc(pool.as_ref(), 4096).unwrap();
        memory.write(&[ordinal as u8 ^ 0x5A; 4096]).unwrap();
        let d = system.driver();
        assert_eq!(d.pointer_get_attribute(memory.ptr(), PointerAttribute::DeviceOrdinal).unwrap(), ordinal as u64);
        held.push((ordinal, memory, pool));
    }
    let d = system.driver();
    assert_eq!(d.pointer_get_attribute(mapped.ptr(), PointerAttribute::DeviceOrdinal).unwrap(), 0);
    for (ordinal, memory, _) in &held {
        let mut back = vec![0u8; 4096];
        memory.read(&mut back).unwrap();
        assert!(back.iter().all(|&b| b == *ordinal as u8 ^ 0x5A), "gpu{ordinal}'s bytes changed");
        let start = memory.ptr().0;
        assert!(!(mapped.ptr().0..mapped.ptr().0 + mapped.len() as u64).contains(&start), "gpu{ordinal}");
    }
}

/// A device reporting a huge SM count must not overflow the kernels' grid size.
#[test]
fn a_huge_sm_count_gives_a_capped_grid() {
    let mut topology = Topology::two_h200();
    topology.devices[0].sms = 536_870_912;
    let system = System::with_driver(Arc::new(SimDriver::new(topology))).unwrap();
    let kernels = system.kernels(0).unwrap();
    assert!(kernels.shape_for(u64::MAX).grid <= i32::MAX as u32);
    let pool = system.create_pool(0, PoolOptions::default()).unwrap();
    let memory = system.alloc(pool.as_ref(), 4096).unwrap();
    kernels.fill(memory.words(1024).unwrap(), 7).unwrap();
    assert_eq!(kernels.compare_pattern(memory.words(1024).unwrap(), 7).unwrap().first_mismatch, None);
}

/// A topology built in code holds at most as many devices as a file may: past it, the
/// constructor says so instead of making devices without an address range.
#[test]
#[should_panic(expected = "at most 1024 devices")]
fn a_uniform_topology_past_the_cap_is_refused() {
    Topology::uniform("too many", MAX_DEVICES + 1, DeviceSpec::h200(), Link::NONE);
}
