//! Where a run's report goes when no directory is named: the cargo target directory of the
//! binary as cargo marks it (an absolute `CARGO_TARGET_DIR`, or the `CACHEDIR.TAG` cargo writes
//! in every target directory), wherever that directory is; never one merely named `target`.

use peerpool::report::cargo_target_dir;
use std::ffi::OsStr;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const CARGO_TAG: &str = "Signature: 8a477f597d28d172789f06886806bc55\n\
    # This file is a cache directory tag created by cargo.\n";

/// A binary at `root/path`, its directories made.
fn binary(root: &Path, path: &str) -> PathBuf {
    let exe = root.join(path);
    std::fs::create_dir_all(exe.parent().unwrap()).unwrap();
    std::fs::write(&exe, b"").unwrap();
    exe
}

/// What a binary directly in `root` finds: nothing, unless the temporary directory itself lies
/// in a cargo target directory (`TMPDIR` pointed into one). What is not a mark falls through
/// to it.
fn outside(root: &Path) -> Option<PathBuf> {
    cargo_target_dir(&root.join("suite"), None)
}

fn tag(dir: &Path, text: &str) {
    std::fs::write(dir.join("CACHEDIR.TAG"), text).unwrap();
}

#[test]
fn the_nearest_directory_cargo_tagged_is_the_target() {
    let root = tempfile::tempdir().unwrap();
    let exe = binary(root.path(), "build/debug/deps/suite-0123");
    assert_eq!(cargo_target_dir(&exe, None), outside(root.path()), "no tag, no target directory");
    tag(&root.path().join("build"), CARGO_TAG);
    assert_eq!(cargo_target_dir(&exe, None), Some(root.path().join("build")));
    tag(&root.path().join("build/debug"), CARGO_TAG);
    assert_eq!(cargo_target_dir(&exe, None), Some(root.path().join("build/debug")), "the nearest");
}

#[test]
fn a_directory_named_target_or_tagged_by_another_tool_is_not_one() {
    let root = tempfile::tempdir().unwrap();
    let exe = binary(root.path(), "target/debug/suite");
    assert_eq!(cargo_target_dir(&exe, None), outside(root.path()), "a name is not a mark");
    tag(&root.path().join("target"), "Signature: 8a477f597d28d172789f06886806bc55\n# made by a backup tool\n");
    assert_eq!(cargo_target_dir(&exe, None), outside(root.path()), "the signature alone");
    tag(&root.path().join("target"), "# created by cargo, but no signature\n");
    assert_eq!(cargo_target_dir(&exe, None), outside(root.path()));
}

#[test]
fn a_planted_tag_is_not_followed_or_waited_on() {
    let root = tempfile::tempdir().unwrap();
    let exe = binary(root.path(), "shared/bin/suite");
    let real = root.path().join("real");
    std::fs::create_dir(&real).unwrap();
    tag(&real, CARGO_TAG);
    symlink(real.join("CACHEDIR.TAG"), root.path().join("shared/CACHEDIR.TAG")).unwrap();
    assert_eq!(cargo_target_dir(&exe, None), outside(root.path()), "a link to cargo's tag");
    std::fs::remove_file(root.path().join("shared/CACHEDIR.TAG")).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        root.path().join("shared/CACHEDIR.TAG"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let started = Instant::now();
    assert_eq!(cargo_target_dir(&exe, None), outside(root.path()), "a FIFO");
    assert!(started.elapsed() < Duration::from_secs(5), "a FIFO with no writer is not waited on");
}

#[test]
fn a_tagged_directory_every_user_may_write_is_not_taken() {
    let root = tempfile::tempdir().unwrap();
    let exe = binary(root.path(), "shared/bin/suite");
    let shared = root.path().join("shared");
    tag(&shared, CARGO_TAG);
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    assert_eq!(cargo_target_dir(&exe, None), outside(root.path()), "as /tmp is");
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(cargo_target_dir(&exe, None), Some(shared));
}

#[test]
fn an_absolute_cargo_target_dir_is_taken_and_a_relative_one_left_to_the_tag() {
    let root = tempfile::tempdir().unwrap();
    let exe = binary(root.path(), "build/debug/deps/suite");
    tag(&root.path().join("build"), CARGO_TAG);
    let elsewhere = root.path().join("elsewhere");
    assert_eq!(cargo_target_dir(&exe, Some(elsewhere.as_os_str())), Some(elsewhere.clone()));
    let untagged = binary(root.path(), "plain/suite");
    assert_eq!(cargo_target_dir(&untagged, Some(elsewhere.as_os_str())), Some(elsewhere), "wherever the binary is");
    // Cargo resolved `build` against the directory it was started in, which a test cannot know.
    assert_eq!(cargo_target_dir(&exe, Some(OsStr::new("build"))), Some(root.path().join("build")));
    assert_eq!(cargo_target_dir(&untagged, Some(OsStr::new("build"))), outside(root.path()));
}
