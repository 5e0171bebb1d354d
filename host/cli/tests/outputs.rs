//! Files the command writes, named on its command line or by default: each is created or
//! replaced only where nothing is, or a regular file we may replace is (a link to one, or to
//! nothing, is replaced, never followed). A FIFO, a device, a socket, a directory, a link to one
//! of those, or a name ending in `/` is refused with exit status 2 and one line, before any work.

mod support;

use peerpool::report::{BuildRecord, HardwareRecord, Plan, Status, TrialRecord};
use rustix::fs::{CWD, FileType, Mode};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

fn run(args: &[&str]) -> Output {
    support::command().args(args).output().expect("the command runs")
}

fn code(output: &Output) -> i32 {
    output.status.code().unwrap_or(-1)
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn mkfifo(path: &Path) {
    rustix::fs::mknodat(CWD, path, FileType::Fifo, Mode::RUSR | Mode::WUSR, 0).unwrap();
}

fn is_fifo(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_fifo())
}

/// A report directory with one passed trial: `report` has something to merge.
fn report_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let trial =
        TrialRecord { name: "a".into(), binary: "suite".into(), status: Status::Passed, detail: None, millis: None };
    let plan = Plan {
        hardware: HardwareRecord::missing("no CUDA driver"),
        build: BuildRecord::current(),
        trials: vec![trial.clone()],
    };
    plan.write(dir.path(), "suite").unwrap();
    trial.write(dir.path()).unwrap();
    dir
}

/// `report DIR FLAG TARGET`: refused with status 2, one line naming the target and `says`,
/// and no output written.
fn refused(dir: &Path, flag: &str, target: &Path, says: &str) {
    let output = run(&["report", dir.to_str().unwrap(), flag, target.to_str().unwrap()]);
    let err = stderr(&output);
    assert_eq!(code(&output), 2, "{flag} {}: {err}", target.display());
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains(says), "{flag} {}: {err}", target.display());
    for default in ["report.json", "report.md", "junit.xml"] {
        assert!(!dir.join(default).exists(), "{default} written before the refusal: {err}");
    }
}

#[test]
fn report_replaces_only_regular_files_and_refuses_the_rest_before_any_work() {
    let dir = report_dir();
    let place = tempfile::tempdir().unwrap();
    let fifo = place.path().join("fifo");
    mkfifo(&fifo);
    let socket = place.path().join("socket");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let to_fifo = place.path().join("to-fifo");
    std::os::unix::fs::symlink(&fifo, &to_fifo).unwrap();
    let to_dir = place.path().join("to-dir");
    std::os::unix::fs::symlink(place.path(), &to_dir).unwrap();
    let looped = place.path().join("loop");
    std::os::unix::fs::symlink(&looped, &looped).unwrap();
    for flag in ["--json", "--markdown", "--junit"] {
        refused(dir.path(), flag, &fifo, "a FIFO");
        refused(dir.path(), flag, &socket, "a socket");
        refused(dir.path(), flag, &to_fifo, "a symbolic link to a FIFO");
        refused(dir.path(), flag, &to_dir, "a symbolic link to a directory");
        refused(dir.path(), flag, &looped, "a symbolic link loop");
        refused(dir.path(), flag, place.path(), "a directory");
    }
    assert!(is_fifo(&fifo), "the FIFO is still one");
    assert!(std::fs::symlink_metadata(&socket).unwrap().file_type().is_socket(), "the socket is still one");
    assert!(std::fs::symlink_metadata(&to_fifo).unwrap().is_symlink());

    // What may be replaced is: a regular file, a link to one (the link, not its target), and a
    // dangling link.
    let file = place.path().join("old.json");
    std::fs::write(&file, "old").unwrap();
    let victim = place.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let to_file = place.path().join("to-file.md");
    std::os::unix::fs::symlink(&victim, &to_file).unwrap();
    let dangling = place.path().join("dangling.xml");
    std::os::unix::fs::symlink(place.path().join("nowhere"), &dangling).unwrap();
    let args = ["--json", file.to_str().unwrap(), "--markdown", to_file.to_str().unwrap()];
    let output =
        run(&[&["report", dir.path().to_str().unwrap()][..], &args, &["--junit", dangling.to_str().unwrap()]].concat());
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(std::fs::read_to_string(&file).unwrap().contains("\"trials\""));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious", "a link is replaced, not written through");
    for replaced in [&to_file, &dangling] {
        assert!(std::fs::symlink_metadata(replaced).unwrap().is_file(), "{}", replaced.display());
    }
}

#[test]
fn a_default_output_that_is_not_a_regular_file_is_refused_too() {
    let dir = report_dir();
    let fifo = dir.path().join("report.md");
    mkfifo(&fifo);
    let output = run(&["report", dir.path().to_str().unwrap()]);
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    assert!(stderr(&output).contains("report.md") && stderr(&output).contains("a FIFO"), "{}", stderr(&output));
    assert!(is_fifo(&fifo));
    assert!(!dir.path().join("report.json").exists(), "nothing written");
}

#[test]
fn a_name_ending_in_a_slash_is_a_directory_not_a_file() {
    let dir = report_dir();
    let place = tempfile::tempdir().unwrap();
    for spelling in ["newdir/", "newdir/."] {
        let target = format!("{}/{spelling}", place.path().display());
        refused(dir.path(), "--markdown", Path::new(&target), "a directory");
        assert!(!place.path().join("newdir").exists(), "{spelling}: nothing made at newdir");
    }
}

/// /dev/null stays the character device it is, root or not (root could rename over it).
#[test]
fn dev_null_is_never_replaced() {
    let dir = report_dir();
    let null = Path::new("/dev/null");
    assert!(std::fs::metadata(null).unwrap().file_type().is_char_device(), "the test's premise");
    for flag in ["--json", "--markdown", "--junit"] {
        let output = run(&["report", dir.path().to_str().unwrap(), flag, "/dev/null"]);
        let kept = std::fs::symlink_metadata(null).unwrap().file_type().is_char_device();
        if !kept {
            // Put the machine's /dev/null back (only root could have replaced it) before failing.
            let _ = std::fs::remove_file(null);
            let device = rustix::fs::makedev(1, 3);
            let _ = rustix::fs::mknodat(CWD, null, FileType::CharacterDevice, Mode::from_raw_mode(0o666), device);
        }
        assert!(kept, "{flag}: /dev/null was replaced: {}", stderr(&output));
        assert_eq!(code(&output), 2, "{flag}: {}", stderr(&output));
        assert!(stderr(&output).contains("a character device"), "{flag}: {}", stderr(&output));
    }
}

#[test]
fn check_refuses_a_fifo_in_its_out_directory_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let fifo = out.join("check.json");
    mkfifo(&fifo);
    // 128 GPUs (16,256 pairs) would take minutes: a quick refusal shows nothing ran first.
    let big: PathBuf = dir.path().join("big.toml");
    std::fs::write(
        &big,
        "name = \"big\"\n[[devices]]\ncount = 128\nname = \"X\"\nmemory_mib = 1024\nsms = 1\ncompute_capability = [9, 0]\n[links]\ndefault = {}\n",
    )
    .unwrap();
    let started = Instant::now();
    let output = run(&["check", "--quiet", "--out", out.to_str().unwrap(), "--topology", big.to_str().unwrap()]);
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    assert!(stderr(&output).contains("check.json") && stderr(&output).contains("a FIFO"), "{}", stderr(&output));
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    assert!(is_fifo(&fifo));
}
