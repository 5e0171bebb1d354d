//! Report directories and files: what another local user could plant is refused or replaced,
//! never followed or believed; what is read is a regular file of bounded size, named in every
//! error; Markdown from trial and device names stays literal text.

use libtest_mimic::{Arguments, Trial};
use peerpool::owned_dir::{self, DirError, OwnedDir};
use peerpool::report::{
    BuildRecord, DeviceRecord, HardwareRecord, MAX_FILE_BYTES, Plan, Report, ReportError, Status, TrialRecord,
};
use rustix::fs::{FileType, Mode};
use std::os::unix::fs::{FileTypeExt, PermissionsExt, symlink};
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

fn trial(name: &str, status: Status, detail: Option<&str>) -> TrialRecord {
    TrialRecord { name: name.into(), binary: "suite".into(), status, detail: detail.map(str::to_string), millis: None }
}

fn plan(trials: Vec<TrialRecord>) -> Plan {
    Plan { hardware: HardwareRecord::missing("no CUDA driver"), build: BuildRecord::current(), trials }
}

/// A report directory holding one plan with one runnable trial.
fn report_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    plan(vec![trial("a", Status::NotRun, None)]).write(dir.path(), "suite").unwrap();
    dir
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
}

/// A directory of another uid, and that uid: as root, a fresh one given away (chown); as any
/// other user, `/` when root owns it. `Err` with the reason when there is neither.
fn another_uids_directory() -> Result<(Option<tempfile::TempDir>, std::path::PathBuf, u32), String> {
    if rustix::process::geteuid().is_root() {
        let base = tempfile::tempdir().map_err(|e| e.to_string())?;
        let planted = base.path().join("peerpool-report");
        std::fs::create_dir(&planted).map_err(|e| e.to_string())?;
        std::os::unix::fs::chown(&planted, Some(65534), Some(65534)).map_err(|e| format!("chown: {e}"))?;
        return Ok((Some(base), planted, 65534));
    }
    let root = Path::new("/");
    match std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(root).map_err(|e| e.to_string())?) {
        uid if uid != rustix::process::geteuid().as_raw() => Ok((None, root.to_path_buf(), uid)),
        _ => Err("no directory of another uid: this user owns / and, not being root, cannot give one away".into()),
    }
}

fn a_directory_planted_by_another_uid_is_refused() {
    let (_base, planted, owner) = another_uids_directory().expect("main finds one before the trial runs");
    let euid = rustix::process::geteuid().as_raw();
    let refused = |e: ReportError| matches!(e, ReportError::Dir(DirError::NotOwned { owner: o, euid: e, .. }) if o == owner && e == euid);
    let before = std::fs::read_dir(&planted).unwrap().count();
    let error = plan(vec![]).write(&planted, "suite").unwrap_err();
    assert!(refused(error.clone()), "{error}");
    assert!(error.to_string().contains(&format!("owned by uid {owner}")), "{error}");
    assert!(refused(Report::collect(&planted).unwrap_err()));
    assert!(refused(trial("a", Status::Passed, None).write(&planted).unwrap_err()));
    assert_eq!(std::fs::read_dir(&planted).unwrap().count(), before, "nothing was written there");
}

fn directories_are_created_private_and_never_through_a_link() {
    let base = tempfile::tempdir().unwrap();
    let fresh = base.path().join("a/b/report");
    OwnedDir::create(&fresh).unwrap();
    assert_eq!(mode(&fresh), 0o700);
    assert_eq!(mode(&base.path().join("a")), 0o700, "missing parents too");

    let link = base.path().join("link");
    symlink(&fresh, &link).unwrap();
    assert!(matches!(OwnedDir::create(&link), Err(DirError::Link { .. })));
    assert!(matches!(Report::collect(&link), Err(ReportError::Dir(DirError::Link { .. }))));
    let dangling = base.path().join("dangling");
    symlink(base.path().join("nowhere"), &dangling).unwrap();
    assert!(OwnedDir::create(&dangling).is_err());
    assert!(!base.path().join("nowhere").exists(), "a dangling link is not followed to create its target");

    let open = base.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    assert!(matches!(OwnedDir::open(&open), Err(DirError::OpenToOthers { mode: 0o777, .. })));
}

fn a_planted_link_is_replaced_not_followed() {
    let dir = report_dir();
    let victim = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(victim.path(), "precious").unwrap();
    symlink(victim.path(), dir.path().join("report.md")).unwrap();
    let owned = OwnedDir::open(dir.path()).unwrap();
    owned.write("report.md", b"# report").unwrap();
    assert_eq!(std::fs::read_to_string(victim.path()).unwrap(), "precious");
    assert!(std::fs::symlink_metadata(dir.path().join("report.md")).unwrap().is_file());
    let names = owned.names().unwrap();
    assert!(names.iter().all(|n| !n.ends_with(".tmp")), "no temporary file left: {names:?}");
}

fn other_entries_are_not_opened() {
    let dir = report_dir();
    std::fs::create_dir(dir.path().join("subdir")).unwrap();
    std::fs::write(dir.path().join("notes.bin"), [0xFF, 0x00, 0xFE]).unwrap();
    mkfifo(&dir.path().join("pipe"));
    symlink("/dev/zero", dir.path().join("zero")).unwrap();
    std::fs::write(dir.path().join("report.md"), "old").unwrap();
    let started = Instant::now();
    let report = Report::collect(dir.path()).unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(report.trials.len(), 1);
}

/// Each hostile entry under a name the reader opens: refused quickly, naming the file.
fn hostile_report_files_are_refused_naming_them() {
    type Plant = fn(&Path);
    let cases: [(&str, Plant, &str); 6] = [
        ("subdir.result.json", |p| std::fs::create_dir(p).unwrap(), "a directory"),
        ("binary.result.json", |p| std::fs::write(p, [0xFF, 0xFE, 0x00, 0x9C]).unwrap(), "not a peerpool report file"),
        ("fifo.plan.json", |p| mkfifo(p), "a FIFO"),
        ("zero.result.json", |p| symlink("/dev/zero", p).unwrap(), "symbolic link"),
        ("wrong.plan.json", |p| std::fs::write(p, "{\"trials\": 3}").unwrap(), "not a peerpool report file"),
        ("huge.result.json", |p| std::fs::File::create(p).unwrap().set_len(MAX_FILE_BYTES + 1).unwrap(), "larger than"),
    ];
    for (name, plant, needle) in cases {
        let dir = report_dir();
        plant(&dir.path().join(name));
        let started = Instant::now();
        let error = Report::collect(dir.path()).expect_err(name).to_string();
        assert!(started.elapsed() < Duration::from_secs(5), "{name}: took {:?}", started.elapsed());
        assert!(error.contains(name), "{name}: the error names the file: {error}");
        assert!(error.contains(needle), "{name}: {error}");
    }
}

fn markdown_in_names_and_messages_stays_literal() {
    let dir = report_dir();
    let hostile = "x | y `z` **bold** [link](http://evil) <img src=x onerror=alert(1)>\n# heading\r\n| --- |";
    let mut plan = plan(vec![trial(hostile, Status::Failed, Some(hostile))]);
    plan.hardware = HardwareRecord {
        driver: hostile.into(),
        devices: vec![DeviceRecord {
            ordinal: 0,
            name: hostile.into(),
            compute_capability: "9.0".into(),
            memory_mib: 1,
            pool_handle_types: hostile.into(),
        }],
        ..HardwareRecord::default()
    };
    plan.write(dir.path(), "evil|binary").unwrap();
    let md = Report::collect(dir.path()).unwrap().to_markdown();
    for line in md.lines().filter(|l| l.starts_with('|')) {
        let cells = unescaped_pipes(line);
        assert!(cells == 4 || cells == 6, "a row with {cells} cell borders: {line}");
    }
    assert!(!md.contains("<img") && !md.contains("**bold**") && !md.contains("[link]"), "{md}");
    assert!(md.lines().all(|l| !l.starts_with("# heading")), "{md}");
}

/// `|` not preceded by a backslash.
fn unescaped_pipes(line: &str) -> usize {
    let bytes = line.as_bytes();
    (0..bytes.len()).filter(|&i| bytes[i] == b'|' && (i == 0 || bytes[i - 1] != b'\\')).count()
}

fn mkfifo(path: &Path) {
    rustix::fs::mknodat(rustix::fs::CWD, path, FileType::Fifo, Mode::RUSR | Mode::WUSR, 0).unwrap();
}

/// Only a missing file or a regular one is written over: a rename would put a regular file in
/// the place of a FIFO, a socket or a device (as root, even /dev/null's).
fn what_is_not_a_regular_file_is_never_replaced() {
    let dir = report_dir();
    let owned = OwnedDir::open(dir.path()).unwrap();
    let fifo = dir.path().join("report.md");
    mkfifo(&fifo);
    let socket = dir.path().join("report.json");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    symlink(&fifo, dir.path().join("junit.xml")).unwrap();
    for (name, kind) in
        [("report.md", "a FIFO"), ("report.json", "a socket"), ("junit.xml", "a symbolic link to a FIFO")]
    {
        let refused = owned.write(name, b"x").unwrap_err();
        assert_eq!(refused, DirError::NotRegular { path: dir.path().join(name), kind }, "{name}");
        let by_path = owned_dir::write_file(&dir.path().join(name), b"x").unwrap_err();
        assert!(matches!(by_path, DirError::NotRegular { kind: k, .. } if k == kind), "{name}: {by_path}");
    }
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    assert!(std::fs::symlink_metadata(&socket).unwrap().file_type().is_socket());
    let names = owned.names().unwrap();
    assert!(names.iter().all(|n| !n.ends_with(".tmp")), "no temporary file left: {names:?}");
    let trailing = dir.path().join("new").display().to_string() + "/";
    let refused = owned_dir::write_file(Path::new(&trailing), b"x").unwrap_err();
    assert!(matches!(refused, DirError::DirectoryName { .. }), "{refused}");
    assert!(!dir.path().join("new").exists(), "no file named after the directory");
}

/// A report file's name and what the JSON parser says of its content reach the terminal
/// escaped and cut: an unknown status of a mebibyte with a clear-screen in it, in a file whose
/// name holds a window-title sequence.
fn a_refused_report_file_is_named_escaped_and_cut() {
    let dir = report_dir();
    let name = "\u{1b}]0;pwned\u{7}.result.json";
    let status = format!("\u{1b}[2J{}", "s".repeat(1 << 20));
    let record = format!(r#"{{"name": "a", "binary": "b", "status": "{status}", "detail": null, "millis": null}}"#);
    std::fs::write(dir.path().join(name), record.replace('\u{1b}', "\\u001b")).unwrap();
    let error = Report::collect(dir.path()).unwrap_err().to_string();
    assert!(!error.chars().any(char::is_control), "{:?}", &error[..error.len().min(300)]);
    assert!(error.len() < 2048, "{} bytes", error.len());
    assert!(error.contains("pwned") && error.contains("not a peerpool report file"), "{error}");
}

fn main() -> ExitCode {
    let test = |name: &'static str, body: fn()| {
        Trial::test(name, move || {
            body();
            Ok(())
        })
    };
    // Refusing another uid's directory needs one: made by root, or root's own seen by anyone
    // else. Without one the trial is skipped, with the reason, and never passes.
    let planted = match another_uids_directory() {
        Ok(_) => test("a_directory_planted_by_another_uid_is_refused", a_directory_planted_by_another_uid_is_refused),
        Err(reason) => {
            eprintln!("skipped: a_directory_planted_by_another_uid_is_refused: {reason}");
            Trial::test("a_directory_planted_by_another_uid_is_refused", move || Err(reason.into()))
                .with_ignored_flag(true)
        }
    };
    let trials = vec![
        planted,
        test(
            "directories_are_created_private_and_never_through_a_link",
            directories_are_created_private_and_never_through_a_link,
        ),
        test("a_planted_link_is_replaced_not_followed", a_planted_link_is_replaced_not_followed),
        test("other_entries_are_not_opened", other_entries_are_not_opened),
        test("hostile_report_files_are_refused_naming_them", hostile_report_files_are_refused_naming_them),
        test("markdown_in_names_and_messages_stays_literal", markdown_in_names_and_messages_stays_literal),
        test("what_is_not_a_regular_file_is_never_replaced", what_is_not_a_regular_file_is_never_replaced),
        test("a_refused_report_file_is_named_escaped_and_cut", a_refused_report_file_is_named_escaped_and_cut),
    ];
    libtest_mimic::run(&Arguments::from_args(), trials).exit_code()
}
