//! Random and mutated input to every reader of outside data: the topology parser, the timing
//! model's reader, fault rules, `CUDA_VISIBLE_DEVICES`, the report reader and the IPC wire
//! decoder (through `Channel::recv`, then `Offer::decode`). Each must answer with a value or an
//! error, never panic, and stay within a memory bound (a counting allocator measures each
//! case's peak above where it started); what is refused is said in one line a terminal shows
//! as it is. Every property runs a fixed number of cases, so that `cargo test` (and CI) runs
//! them all in bounded time.

use peerpool::driver::{DOCUMENTED_CALLS, FabricHandle, HandleKind};
use peerpool::fault::FaultPlan;
use peerpool::ipc::{Channel, Limits, Offer, OfferPath};
use peerpool::report::{BuildRecord, HardwareRecord, Plan, Report, Status, TrialRecord};
use peerpool_sim::{Latencies, MAX_DEVICES, SimDriver, Topology, catalog, catalog_topology};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use rustix::fd::{AsFd, AsRawFd};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Live and peak heap bytes of the whole process.
struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator and only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: allocated above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The most one case may allocate above where it started: a 1,024-GPU topology's link table
/// is 12 MiB, a report file at most 4 MiB.
const MEMORY_BOUND: usize = 64 << 20;
/// The properties run one at a time, so that the peak is one case's.
static SERIAL: Mutex<()> = Mutex::new(());

/// Runs `case` and fails it if it allocated more than [`MEMORY_BOUND`] at its peak.
fn bounded<T>(case: impl FnOnce() -> T) -> Result<T, TestCaseError> {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let value = case();
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(base);
    prop_assert!(peak <= MEMORY_BOUND, "a case allocated {} MiB", peak >> 20);
    Ok(value)
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() })
}

// ---- topologies ----

/// Numbers at and around every limit `topology_file.rs` checks, and past every integer type.
const EDGES: &[&str] = &[
    "0",
    "1",
    "-1",
    "9",
    "10",
    "1000",
    "1023",
    "1024",
    "1025",
    "4096",
    "4097",
    "99999",
    "100000",
    "536870912",
    "2147483647",
    "2147483648",
    "-2147483649",
    "9223372036854775807",
    "18446744073709551615",
    "18446744073709551616",
    "1e300",
    "nan",
];

/// A catalog file with numbers replaced by edge values, bytes flipped, lines cut or repeated.
fn mutated_topology() -> impl Strategy<Value = String> {
    mutated(any::<Index>().prop_map(|entry| entry.get(catalog()).toml.to_string()), 1..6)
}

/// A text of `base` with `count` mutations applied to it in turn.
fn mutated(base: impl Strategy<Value = String>, count: std::ops::Range<usize>) -> impl Strategy<Value = String> {
    let mutation = prop_oneof![
        (any::<Index>(), any::<Index>()).prop_map(|(which, edge)| Mutation::Number(which, edge)),
        (any::<Index>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Byte(at, byte)),
        any::<Index>().prop_map(Mutation::CutLine),
        any::<Index>().prop_map(Mutation::RepeatLine),
    ];
    (base, prop::collection::vec(mutation, count))
        .prop_map(|(text, mutations)| mutations.iter().fold(text, |text, m| m.apply(&text)))
}

#[derive(Clone, Debug)]
enum Mutation {
    Number(Index, Index),
    Byte(Index, u8),
    CutLine(Index),
    RepeatLine(Index),
}

impl Mutation {
    fn apply(&self, text: &str) -> String {
        let lines: Vec<&str> = text.lines().collect();
        match self {
            Mutation::Number(which, edge) => {
                let numbers: Vec<(usize, usize)> = number_spans(text);
                if numbers.is_empty() {
                    return text.to_string();
                }
                let (start, end) = *which.get(&numbers);
                format!("{}{}{}", &text[..start], edge.get(EDGES), &text[end..])
            }
            Mutation::Byte(at, byte) => {
                let mut bytes = text.as_bytes().to_vec();
                if !bytes.is_empty() {
                    let i = at.index(bytes.len());
                    bytes[i] = *byte;
                }
                String::from_utf8_lossy(&bytes).into_owned()
            }
            Mutation::CutLine(at) if !lines.is_empty() => {
                let i = at.index(lines.len());
                lines.iter().enumerate().filter(|&(j, _)| j != i).map(|(_, l)| *l).collect::<Vec<_>>().join("\n")
            }
            Mutation::RepeatLine(at) if !lines.is_empty() => {
                let i = at.index(lines.len());
                let mut out = lines.clone();
                out.insert(i, lines[i]);
                out.join("\n")
            }
            _ => text.to_string(),
        }
    }
}

/// Byte ranges of the decimal numbers in `text`.
fn number_spans(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            spans.push((start, i));
        } else {
            i += 1;
        }
    }
    spans
}

/// What every topology the parser accepts must satisfy.
fn check_topology(result: Result<Topology, peerpool_sim::TopologyError>) -> Result<(), TestCaseError> {
    let Ok(t) = result else { return Ok(()) };
    prop_assert!(t.device_count() <= MAX_DEVICES);
    for d in &t.devices {
        prop_assert!((1..=4096).contains(&d.sms), "sms {}", d.sms);
        prop_assert!(d.total_memory >= 1 && d.total_memory <= 16 << 40);
        prop_assert!((1..=99).contains(&d.compute_capability.0) && (0..=9).contains(&d.compute_capability.1));
    }
    Ok(())
}

#[test]
fn the_topology_parser_answers_any_input_with_a_typed_error() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    runner(1000).run(&mutated_topology(), |text| check_topology(bounded(|| Topology::from_toml_str(&text))?)).unwrap();
    let noise = prop::collection::vec(any::<u8>(), 0..2048).prop_map(|b| String::from_utf8_lossy(&b).into_owned());
    runner(500).run(&noise, |text| check_topology(bounded(|| Topology::from_toml_str(&text))?)).unwrap();
}

/// One device group whose numbers are drawn from the edges: accepted exactly when each lies
/// in its documented range.
#[test]
fn topology_numbers_are_accepted_exactly_within_their_ranges() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Mostly values inside (and on the ends of) each field's range, so that whole valid
    // topologies come up often; otherwise any edge.
    let field = |valid: &'static [&'static str]| prop_oneof![4 => prop::sample::select(valid), 1 => prop::sample::select(EDGES)];
    let fields = (
        field(&["1", "2", "1024"]),
        field(&["1", "81051", "16777216"]),
        field(&["1", "132", "4096"]),
        field(&["1", "9", "99"]),
        field(&["0", "9"]),
        field(&["1000", "13000", "99999"]),
    );
    runner(1000)
        .run(&fields, |(count, memory, sms, major, minor, version)| {
            let text = format!(
                "name = \"t\"\ndriver_version = {version}\n[[devices]]\nname = \"X\"\ncount = {count}\n\
                 memory_mib = {memory}\nsms = {sms}\ncompute_capability = [{major}, {minor}]\n"
            );
            let within = |v: &str, lo: i128, hi: i128| v.parse::<i128>().is_ok_and(|n| (lo..=hi).contains(&n));
            let expected = within(count, 1, MAX_DEVICES as i128)
                && within(memory, 1, 16 << 20)
                && within(sms, 1, 4096)
                && within(major, 1, 99)
                && within(minor, 0, 9)
                && within(version, 1000, 99_999);
            let result = bounded(|| Topology::from_toml_str(&text))?;
            prop_assert_eq!(result.is_ok(), expected, "{}: {:?}", text, result.err());
            check_topology(result)
        })
        .unwrap();
}

/// A refusal as a terminal shows it: one line, no control character, not an echo of a
/// mebibyte.
fn one_short_line(message: &str) -> Result<(), TestCaseError> {
    prop_assert!(!message.chars().any(char::is_control), "{:?}", &message[..message.len().min(300)]);
    prop_assert!(message.len() < 4096, "{} bytes", message.len());
    Ok(())
}

// ---- timing models ----

/// The committed calibration with numbers replaced by edges, bytes flipped, lines cut or
/// repeated (a repeated line gives a key twice).
fn mutated_timing() -> impl Strategy<Value = String> {
    mutated(Just(include_str!("../sim/timing/h200.json").to_string()), 1..5)
}

/// What every model the reader accepts must satisfy: each number in its unit's range, and a
/// simulated machine timed by it starts at once.
fn check_timing(result: Result<Latencies, String>) -> Result<(), TestCaseError> {
    let model = match result {
        Ok(model) => model,
        Err(message) => return one_short_line(&message),
    };
    for serial in [model.init_serial, model.context_serial, model.map_serial, model.fault_serial] {
        prop_assert!((1..=MAX_DEVICES as u32).contains(&serial.at_once), "at_once {}", serial.at_once);
    }
    prop_assert!((1..=MAX_DEVICES as u32).contains(&model.init_devices));
    let value = serde_json::to_value(&model).unwrap();
    for (name, v) in value.as_object().unwrap() {
        if let Some(n) = v.as_f64() {
            prop_assert!(n.is_finite() && (0.0..=1e15).contains(&n), "{name} = {n}");
        }
    }
    let sim = SimDriver::new(Topology::two_h200()).timed(model);
    prop_assert!(sim.init(0).is_ok());
    Ok(())
}

/// The calibration with one number, at any depth (`init_serial.at_once`), set to an edge.
fn timing_field_at_an_edge() -> impl Strategy<Value = String> {
    let model: serde_json::Value = serde_json::from_str(include_str!("../sim/timing/h200.json")).unwrap();
    let mut paths: Vec<Vec<String>> = Vec::new();
    for (name, value) in model.as_object().unwrap() {
        match value {
            serde_json::Value::Object(inner) => paths.extend(inner.keys().map(|k| vec![name.clone(), k.clone()])),
            _ => paths.push(vec![name.clone()]),
        }
    }
    (prop::sample::select(paths), prop::sample::select(EDGES)).prop_map(move |(path, edge)| {
        let mut edited = model.clone();
        let mut slot = &mut edited;
        for key in &path {
            slot = &mut slot[key.as_str()];
        }
        // An edge JSON cannot hold as a number (`nan`, `18446744073709551616`) goes in as text.
        *slot = serde_json::from_str(edge).unwrap_or_else(|_| edge.into());
        edited.to_string()
    })
}

#[test]
fn the_timing_reader_answers_any_input_with_a_model_in_range_or_one_line() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    runner(500).run(&timing_field_at_an_edge(), |text| check_timing(bounded(|| Latencies::from_json(&text))?)).unwrap();
    runner(500).run(&mutated_timing(), |text| check_timing(bounded(|| Latencies::from_json(&text))?)).unwrap();
    let noise = prop::collection::vec(any::<u8>(), 0..1024).prop_map(|b| String::from_utf8_lossy(&b).into_owned());
    runner(300).run(&noise, |text| check_timing(bounded(|| Latencies::from_json(&text))?)).unwrap();
}

// ---- fault rules ----

/// Rules near what the parser accepts: documented calls, versioned symbols, prefixes and
/// near misses; counts, chances and codes around their edges; flags, spaces and separators.
fn fault_rules() -> impl Strategy<Value = String> {
    let documented = prop::sample::select(DOCUMENTED_CALLS);
    let call = prop_oneof![
        3 => documented.clone().prop_map(str::to_string),
        1 => documented.clone().prop_map(|c| format!("{c}_v2")),
        1 => (documented.clone(), any::<Index>()).prop_map(|(c, at)| format!("{}*", &c[..at.index(c.len() + 1)])),
        1 => (documented, any::<Index>(), "[a-zA-Z]").prop_map(|(c, at, x)| {
            let i = at.index(c.len());
            format!("{}{x}{}", &c[..i], &c[i + 1..])
        }),
        1 => "[a-zA-Z0-9_*]{0,24}",
    ];
    let when = prop_oneof![
        Just(String::new()),
        prop::sample::select(EDGES).prop_map(|n| format!("@{n}")),
        "~[0-9.e+-]{0,8}",
        Just("@".to_string()),
    ];
    let codes: Vec<String> = peerpool::driver::codes::ALL.iter().map(|c| c.name()).collect();
    let code = prop_oneof![
        3 => prop::sample::select(codes.clone()),
        1 => prop::sample::select(codes).prop_map(|c| c.trim_start_matches("CUDA_ERROR_").to_string()),
        1 => "[A-Z_]{0,20}",
    ];
    let flags = prop::collection::vec(
        prop_oneof![
            Just("sticky".to_string()),
            Just("transient".to_string()),
            Just("before".to_string()),
            Just("after".to_string()),
            "[a-z]{0,6}",
        ],
        0..4,
    );
    let rule = (call, when, code, flags, " {0,2}").prop_map(|(call, when, code, flags, space)| {
        let flags: String = flags.iter().map(|f| format!("!{f}")).collect();
        format!("{space}{call}{when}{space}={space}{code}{flags}")
    });
    let plan = (prop::collection::vec(rule, 0..5), prop::option::of((any::<Index>(), any::<u8>())));
    plan.prop_map(|(rules, flip)| {
        let mut text = rules.join(";").into_bytes();
        if let Some((at, byte)) = flip.filter(|_| !text.is_empty()) {
            let i = at.index(text.len());
            text[i] = byte;
        }
        String::from_utf8_lossy(&text).into_owned()
    })
}

#[test]
fn the_fault_rule_parser_answers_any_input_with_rules_that_can_fire_or_one_line() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    runner(1000)
        .run(&fault_rules(), |text| {
            match bounded(|| text.parse::<FaultPlan>())? {
                Ok(plan) => {
                    for rule in &plan.rules {
                        let fires = match rule.call.strip_suffix('*') {
                            Some(prefix) => DOCUMENTED_CALLS.iter().any(|c| c.starts_with(prefix)),
                            None => DOCUMENTED_CALLS.contains(&rule.call.as_str()),
                        };
                        prop_assert!(fires, "{} can never fire", rule.call);
                        prop_assert_eq!(&rule.to_string().parse::<peerpool::fault::Rule>(), &Ok(rule.clone()));
                    }
                }
                Err(error) => one_short_line(&error.to_string())?,
            }
            Ok(())
        })
        .unwrap();
}

// ---- CUDA_VISIBLE_DEVICES ----

/// Lists of entries as people and tools write them: indices in every form `strtol` reads and
/// some it does not, UUIDs of the machine's devices whole or cut, in either case, other
/// prefixes, and noise.
fn visible_list(topology: &Topology) -> impl Strategy<Value = String> + use<> {
    let uuids: Vec<String> =
        (0..topology.device_count()).map(|d| peerpool::driver::uuid_text(&topology.uuid(d).unwrap())).collect();
    let entry = prop_oneof![
        3 => "[ ]{0,2}[+-]{0,1}(0x|0X|0){0,1}[0-9a-fA-F]{0,3}[ ]{0,2}",
        2 => (prop::sample::select(uuids), any::<Index>(), any::<bool>(), " {0,1}").prop_map(|(u, at, upper, space)| {
            let cut = &u[..4 + at.index(u.len() - 3)];
            let cut = if upper { format!("GPU-{}", cut[4..].to_ascii_uppercase()) } else { cut.to_string() };
            format!("{cut}{space}")
        }),
        1 => "(GPU-|MIG-|gpu-)[0-9a-f-]{0,12}",
        1 => "[^,]{0,8}",
    ];
    prop::collection::vec(entry, 0..10).prop_map(|entries| entries.join(","))
}

#[test]
fn cuda_visible_devices_is_read_from_any_list_without_a_panic() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for name in ["two_h200_nvlink", "four_gpu_islands", "sixteen_gpu_nvswitch"] {
        let topology = catalog_topology(name).unwrap();
        runner(300)
            .run(&visible_list(&topology), |list| {
                let (ordinals, view) = bounded(|| (topology.visible_ordinals(&list), topology.visible(&list)))?;
                prop_assert_eq!(ordinals.is_some(), view.is_some());
                if let (Some(ordinals), Some(view)) = (ordinals, view) {
                    prop_assert!(ordinals.iter().all(|&d| d < topology.device_count()), "{:?}", ordinals);
                    let mut distinct = ordinals.clone();
                    distinct.sort();
                    distinct.dedup();
                    prop_assert_eq!(distinct.len(), ordinals.len(), "a device listed twice is refused");
                    prop_assert_eq!(view.device_count(), ordinals.len());
                    for (d, &physical) in ordinals.iter().enumerate() {
                        prop_assert_eq!(view.physical(d), Some(physical));
                        prop_assert_eq!(view.uuid(d), topology.uuid(physical));
                    }
                }
                Ok(())
            })
            .unwrap();
    }
}

// ---- reports ----

fn trial(name: String, status: Status) -> TrialRecord {
    TrialRecord { name, binary: "suite".into(), status, detail: Some("d | `x`\n# y".into()), millis: Some(1) }
}

/// Valid plan and result JSON, then cut, flipped or replaced by noise.
fn report_file() -> impl Strategy<Value = (String, Vec<u8>)> {
    let names = prop_oneof![
        Just("s.plan.json".to_string()),
        "[a-z|`*]{1,8}\\.result\\.json",
        Just("notes.txt".to_string()),
        Just("report.md".to_string()),
    ];
    let valid = "[a-z|`*_\\[\\]<>#\n]{0,40}".prop_map(|name| {
        let record = trial(name.clone(), Status::Failed);
        if name.len() % 2 == 0 {
            serde_json::to_vec(&record).unwrap()
        } else {
            let plan = Plan {
                hardware: HardwareRecord::missing(&name),
                build: BuildRecord::current(),
                trials: vec![trial(name, Status::NotRun)],
            };
            serde_json::to_vec(&plan).unwrap()
        }
    });
    let contents = prop_oneof![
        valid.clone(),
        (valid.clone(), any::<Index>()).prop_map(|(v, at)| v[..at.index(v.len() + 1)].to_vec()),
        (valid, any::<Index>(), any::<u8>()).prop_map(|(mut v, at, b)| {
            let i = at.index(v.len());
            v[i] = b;
            v
        }),
        prop::collection::vec(any::<u8>(), 0..512),
    ];
    (names, contents)
}

#[test]
fn the_report_reader_answers_any_directory_with_a_typed_error() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let files = prop::collection::vec(report_file(), 0..6);
    runner(128)
        .run(&files, |files| {
            let dir = tempfile::tempdir().unwrap();
            for (name, bytes) in &files {
                std::fs::write(dir.path().join(name), bytes).unwrap();
            }
            let result = bounded(|| Report::collect(dir.path()).map(|r| (r.to_markdown(), r.trials.len())))?;
            if let Ok((markdown, trials)) = result {
                prop_assert!(trials <= files.len());
                for line in markdown.lines().filter(|l| l.starts_with('|')) {
                    let bytes = line.as_bytes();
                    let borders = (0..bytes.len()).filter(|&i| bytes[i] == b'|' && (i == 0 || bytes[i - 1] != b'\\'));
                    prop_assert!(matches!(borders.count(), 4 | 6), "{}", line);
                }
            }
            Ok(())
        })
        .unwrap();
}

// ---- the wire ----

/// Datagrams: noise, or a peerpool frame (magic, version, fd count, length) with its fields
/// and payload drawn around what a receiver accepts, the payload sometimes an offer.
fn datagram() -> impl Strategy<Value = (Vec<u8>, usize)> {
    let noise = prop::collection::vec(any::<u8>(), 0..600);
    // Offers as an exporter encodes them, from fields near the checks, then maybe one byte changed.
    let offer = (0..3u8, any::<bool>(), any::<bool>(), 0u32..4, 0u64..3, 0u64..3, 0u64..5);
    let offer_bytes = (offer, prop::option::of((any::<Index>(), any::<u8>()))).prop_map(
        |((path, fabric, staged, device, offset, len, span), edit)| {
            let path = [OfferPath::Pool, OfferPath::VirtualMemory, OfferPath::Legacy][path as usize];
            let handle = if fabric { HandleKind::Fabric } else { HandleKind::PosixFd };
            let with_fabric = fabric && path != OfferPath::Legacy;
            let offer = Offer {
                path,
                handle,
                staged,
                device,
                offset: offset << 12,
                len: len << 12,
                span: span << 12,
                uuid: [5; 16],
                data: [7; 64],
                fabric: with_fabric.then_some(FabricHandle([9; 64])),
            };
            let mut bytes = offer.encode();
            if let Some((at, byte)) = edit {
                let i = at.index(bytes.len());
                bytes[i] = byte;
            }
            bytes
        },
    );
    let payload = prop_oneof![noise.clone(), offer_bytes];
    // Mostly frames a sender would make (header fd count and length true), sometimes not.
    let lie = prop::option::of((any::<bool>(), any::<u8>(), any::<u32>()));
    let frame = (0usize..5, payload, lie).prop_map(|(fds, payload, lie)| {
        let (good_magic, announced, len) = match lie {
            None => (true, fds as u8, payload.len() as u32),
            Some(lie) => lie,
        };
        let mut bytes = if good_magic { b"PP\x01".to_vec() } else { b"PQ\x02".to_vec() };
        bytes.push(announced);
        bytes.extend_from_slice(&len.to_le_bytes());
        bytes.extend_from_slice(&payload);
        (bytes, fds)
    });
    prop_oneof![1 => (noise, 0usize..6), 3 => frame]
}

/// How many of this process's fds refer to what `fd` refers to (a pipe's two ends count
/// alike): unmoved by fds other threads of the test harness open or close meanwhile.
fn fds_like(fd: impl AsFd) -> usize {
    let link = |path: std::path::PathBuf| std::fs::read_link(path).ok();
    let target = link(format!("/proc/self/fd/{}", fd.as_fd().as_raw_fd()).into());
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else { return 0 };
    entries.flatten().filter(|e| target.is_some() && link(e.path()) == target).count()
}

#[test]
fn the_wire_decoder_answers_any_datagram_with_a_typed_error() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (a, b) = Channel::pair().unwrap();
    let a = a.with_limits(Limits { max_bytes: 512, max_fds: 3 });
    let raw = b.into_fd();
    let (_keep, spare) = rustix::pipe::pipe().unwrap();
    let before = fds_like(&spare);
    runner(1000)
        .run(&datagram(), |(bytes, fds)| {
            let attached: Vec<_> = (0..fds).map(|_| spare.as_fd()).collect();
            let mut space = vec![std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(6))];
            let mut control = rustix::net::SendAncillaryBuffer::new(&mut space);
            if !attached.is_empty() {
                control.push(rustix::net::SendAncillaryMessage::ScmRights(&attached));
            }
            let iov = [std::io::IoSlice::new(&bytes)];
            rustix::net::sendmsg(&raw, &iov, &mut control, rustix::net::SendFlags::empty()).unwrap();
            let outcome = bounded(|| {
                a.recv().map(|message| {
                    let decoded = Offer::decode(&message.bytes).map(|offer| (Offer::decode(&offer.encode()), offer));
                    (message.bytes.len(), message.fds.len(), decoded)
                })
            })?;
            match outcome {
                Ok((len, fds_in, decoded)) => {
                    prop_assert!(len <= 512 && fds_in <= 3);
                    if let Ok((again, offer)) = decoded {
                        prop_assert_eq!(again, Ok(offer), "an accepted offer round-trips");
                    }
                }
                // Refused messages are typed; only a live channel was used, so never PeerClosed.
                Err(error) => prop_assert!(error != peerpool::ipc::IpcError::PeerClosed, "{:?}", error),
            }
            prop_assert_eq!(fds_like(&spare), before, "received fds are all closed");
            Ok(())
        })
        .unwrap();
}
