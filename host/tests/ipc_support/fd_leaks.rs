//! A leak check on this process's file descriptors that other threads cannot fool.
//!
//! Tests run on parallel threads of one process, and the fd table is the process's: libtest,
//! the C library and other tests may hold an fd for a moment (glibc reads
//! /proc/sys/vm/overcommit_memory the first time a thread's heap shrinks). So a scenario runs
//! alone among the tests that use this check, and a leak is an fd open afterwards that was not
//! open before (same number, same file), still there after a short wait. A real leak never
//! closes, so waiting cannot hide one; a counted total could be fooled (on CI it once failed a
//! test because an fd open before the scenario closed during it).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

static SERIAL: Mutex<()> = Mutex::new(());

/// Every open fd with what it refers to (`/proc/self/fd/N`'s link), less the listing's own
/// (whose number depends on what other threads hold at the moment).
fn open_fds() -> BTreeSet<(String, PathBuf)> {
    let listing = PathBuf::from(format!("/proc/{}/fd", std::process::id()));
    let entries = std::fs::read_dir("/proc/self/fd").expect("/proc/self/fd");
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| Some((e.file_name().to_string_lossy().into_owned(), std::fs::read_link(e.path()).ok()?)))
        .filter(|(_, target)| *target != listing)
        .collect()
}

/// Runs `scenario` alone among this binary's leak-checked tests and fails if it leaves an fd
/// open that was not open before.
pub fn leak_checked(scenario: impl FnOnce()) {
    let _serial: MutexGuard<'_, ()> = SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let before = open_fds();
    scenario();
    let mut left: Vec<_> = Vec::new();
    for _ in 0..50 {
        left = open_fds().difference(&before).cloned().collect();
        if left.is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("file descriptors leaked: {left:?}");
}
