//! `peerpool sim` puts the library the program loads, and the links to it, only where no other
//! user can change the path between its check and the loader's open: a shim in a directory
//! open to others is copied to the first place that passes (`$XDG_CACHE_HOME/peerpool`,
//! `$HOME/.cache/peerpool`, then a directory made for the run), never used where it lies.

mod support;

use libtest_mimic::{Arguments, Trial};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Output};

const SHIM: &[u8] = b"the shim named on the command line";

/// A tree for one test: `shared/` open to every user (mode 0777, not sticky) holding the
/// shim, `tmp/` for the temporary directory.
struct Tree {
    _dir: tempfile::TempDir,
    base: PathBuf,
}

impl Tree {
    fn new() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().to_path_buf();
        std::fs::create_dir(base.join("shared")).unwrap();
        std::fs::set_permissions(base.join("shared"), std::fs::Permissions::from_mode(0o777)).unwrap();
        std::fs::write(base.join("shared/libpeerpool_shim.so"), SHIM).unwrap();
        std::fs::create_dir(base.join("tmp")).unwrap();
        Tree { _dir: dir, base }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.base.join(relative)
    }

    /// `peerpool sim --shim shared/libpeerpool_shim.so`, the places' variables cleared and then
    /// `env` set.
    fn sim(&self, env: &[(&str, PathBuf)]) -> Command {
        self.sim_with(&self.path("shared/libpeerpool_shim.so"), env)
    }

    /// The same with another shim.
    fn sim_with(&self, shim: &Path, env: &[(&str, PathBuf)]) -> Command {
        let mut command = support::command();
        command.arg("sim").arg("--shim").arg(shim);
        for name in peerpool_sim::env::VARIABLES.iter().chain(&["CUDA_VISIBLE_DEVICES", "PEERPOOL_SHIM"]) {
            command.env_remove(name);
        }
        for name in ["XDG_CACHE_HOME", "HOME", "XDG_RUNTIME_DIR", "LD_LIBRARY_PATH"] {
            command.env_remove(name);
        }
        command.env("TMPDIR", self.path("tmp"));
        command.envs(env.iter().map(|(n, v)| (n, v)));
        command
    }
}

/// The directories `--print-env` puts first on the library path.
fn library_path(output: &Output) -> Vec<PathBuf> {
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout.clone()).unwrap();
    let line = text.lines().find_map(|l| l.strip_prefix("export LD_LIBRARY_PATH=")).expect("the library path");
    line.trim_matches('\'').split(':').map(PathBuf::from).collect()
}

/// The library each driver link leads to, checked to be the named shim's bytes, in `within`.
fn loaded_library(dirs: &[PathBuf], within: &Path) -> PathBuf {
    let mut libraries = Vec::new();
    for name in peerpool_sim::env::DRIVER_NAMES {
        let link = dirs[0].join(name);
        let library = std::fs::canonicalize(&link).unwrap();
        assert_eq!(std::fs::read(&library).unwrap(), SHIM, "{}", link.display());
        libraries.push(library);
    }
    for dir in dirs.iter().chain(&libraries) {
        assert!(dir.starts_with(within), "{} is not in {}", dir.display(), within.display());
    }
    libraries.pop().unwrap()
}

fn a_cache_below_a_directory_open_to_all_is_not_used() {
    let tree = Tree::new();
    let env = [("XDG_CACHE_HOME", tree.path("shared/cache")), ("HOME", tree.path("home"))];
    let dirs = library_path(&tree.sim(&env).arg("--print-env").output().unwrap());
    assert_eq!(dirs.len(), 2, "{dirs:?}");
    loaded_library(&dirs, &tree.path("home/.cache/peerpool"));
    assert!(!tree.path("shared/cache").exists(), "nothing was made below the shared directory");
    // Once there, it is used again.
    assert_eq!(library_path(&tree.sim(&env).arg("--print-env").output().unwrap()), dirs);
}

/// Run by root with another user's HOME and runtime directory and a shim in their home (`sudo
/// -E`): that user could swap a directory of theirs between the check and the load, so nothing
/// under it is used, not even a library planted where the command would have written its own.
/// Root only: skipped with the reason otherwise.
fn a_path_through_another_users_directory_is_refused() {
    const OTHER: u32 = 65534;
    let tree = Tree::new();
    // The other user's home, with the shim and a runtime directory.
    let victim = tree.path("victim");
    let shim = victim.join("lib/libpeerpool_shim.so");
    std::fs::create_dir_all(shim.parent().unwrap()).unwrap();
    std::fs::write(&shim, SHIM).unwrap();
    std::fs::create_dir_all(victim.join("run")).unwrap();
    let give_away = || {
        for entry in walk(&victim) {
            std::os::unix::fs::lchown(&entry, Some(OTHER), Some(OTHER)).unwrap();
        }
    };
    give_away();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Where the command writes the shim, from a home of our own; a library planted at that
    // very place in the other user's home.
    let probe =
        library_path(&tree.sim_with(&shim, &[("HOME", tree.path("probe"))]).arg("--print-env").output().unwrap());
    let written = std::fs::canonicalize(probe[0].join("libcuda.so.1")).unwrap();
    let planted = victim.join(".cache/peerpool").join(written.parent().unwrap().file_name().unwrap());
    std::fs::create_dir_all(&planted).unwrap();
    std::fs::write(planted.join("libpeerpool_shim.so"), b"planted").unwrap();
    std::fs::create_dir(victim.join(".cache-swapped")).unwrap();
    give_away();
    let env = [("HOME", victim.clone()), ("XDG_RUNTIME_DIR", victim.join("run"))];
    // Meanwhile the other user swaps their cache with another tree, back and forth.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (stop, victim) = (stop.clone(), victim.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    victim.join(".cache"),
                    rustix::fs::CWD,
                    victim.join(".cache-swapped"),
                    rustix::fs::RenameFlags::EXCHANGE,
                );
            }
        })
    };
    for _ in 0..5 {
        let dirs = library_path(&tree.sim_with(&shim, &env).arg("--print-env").output().unwrap());
        let library = loaded_library(&dirs, &tree.path("tmp"));
        assert!(!library.starts_with(&victim));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapper.join().unwrap();
    // Nothing of ours was written there.
    for entry in walk(&victim) {
        assert_eq!(std::fs::symlink_metadata(&entry).unwrap().uid(), OTHER, "{}", entry.display());
    }
}

/// `path` and everything below it.
fn walk(path: &Path) -> Vec<PathBuf> {
    let mut all = vec![path.to_path_buf()];
    if std::fs::symlink_metadata(path).unwrap().is_dir() {
        for entry in std::fs::read_dir(path).unwrap() {
            all.extend(walk(&entry.unwrap().path()));
        }
    }
    all
}

fn without_home_or_cache_a_directory_is_made_for_the_run() {
    let tree = Tree::new();
    let made = || -> Vec<PathBuf> {
        let mut made: Vec<PathBuf> = std::fs::read_dir(tree.path("tmp")).unwrap().map(|e| e.unwrap().path()).collect();
        made.sort();
        made
    };
    // --print-env: the directory stays for the program started later, and says so.
    let output = tree.sim(&[]).arg("--print-env").output().unwrap();
    let dirs = library_path(&output);
    assert_eq!(made().len(), 1);
    let run_dir = &made()[0];
    loaded_library(&dirs, run_dir);
    let meta = std::fs::metadata(run_dir).unwrap();
    assert_eq!((meta.uid(), meta.mode() & 0o777), (rustix::process::geteuid().as_raw(), 0o700));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("made for this run") && stderr.contains(&*run_dir.to_string_lossy()), "{stderr}");
    std::fs::remove_dir_all(run_dir).unwrap();
    // A program run: the directory is there while it runs and gone after.
    let script = r#"first="${LD_LIBRARY_PATH%%:*}"; test -e "$first/libcuda.so.1" && printf %s "$first""#;
    let output = tree.sim(&[]).args(["--", "/bin/sh", "-c", script]).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let first = PathBuf::from(String::from_utf8(output.stdout).unwrap());
    assert!(first.starts_with(tree.path("tmp")), "{}", first.display());
    assert_eq!(made(), Vec::<PathBuf>::new(), "removed after the program exited");
}

fn test(name: &'static str, body: fn()) -> Trial {
    Trial::test(name, move || {
        body();
        Ok(())
    })
}

/// A trial that needs root (to give a directory to another user), skipped with the reason
/// elsewhere.
fn as_root(name: &'static str, body: fn()) -> Trial {
    if rustix::process::geteuid().is_root() {
        return test(name, body);
    }
    let why = "only root can give a directory to another user";
    eprintln!("skipped: {name}: {why}");
    Trial::test(name, move || Err(why.into())).with_ignored_flag(true)
}

fn main() -> ExitCode {
    let trials = vec![
        test("a_cache_below_a_directory_open_to_all_is_not_used", a_cache_below_a_directory_open_to_all_is_not_used),
        as_root("a_path_through_another_users_directory_is_refused", a_path_through_another_users_directory_is_refused),
        test(
            "without_home_or_cache_a_directory_is_made_for_the_run",
            without_home_or_cache_a_directory_is_made_for_the_run,
        ),
    ];
    libtest_mimic::run(&Arguments::from_args(), trials).exit_code()
}
