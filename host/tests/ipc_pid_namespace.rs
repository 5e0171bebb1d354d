//! A peer in a pid namespace we cannot see: the kernel reports its pid as 0, in
//! `SO_PEERCRED` and in each message's `SCM_CREDENTIALS`. Such a peer still passes a same-uid
//! check, its message arrives whole, and it never passes a check that names a pid (0 included).
//!
//! The test runs itself again, as the child role [`IN_THE_NAMESPACE`], inside a new pid
//! namespace, so that its parent, which made the socketpair and sends, is invisible to it:
//! `unshare --pid --fork` as root, and elsewhere inside a user namespace of its own where the
//! machine allows one (`unshare --user --map-root-user`, which maps our uid to the namespace's
//! root: the parent's uid is then still ours). Where neither works the trial is skipped, with
//! the reason, and never passes.

use libtest_mimic::{Arguments, Trial};
use peerpool::child::{ChildError, Role, Roles, spawn_with_channel};
use peerpool::ipc::{Channel, IpcError, PeerCheck};
use rustix::fd::AsFd;
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

/// This binary in the new pid namespace: the checks on the parent's channel.
const IN_THE_NAMESPACE: Role = Role::new("in-pid-namespace", &[]);
const TEST: &str = "a_peer_outside_our_pid_namespace_has_pid_0";
const TIMEOUT: Duration = Duration::from_secs(30);

fn main() -> ExitCode {
    if let Some(code) = Roles::new().reporting(IN_THE_NAMESPACE, |_| in_the_namespace()).dispatch() {
        return code;
    }
    let trial = match unshare_flags() {
        Ok(flags) => Trial::test(TEST, move || {
            a_peer_outside_our_pid_namespace_has_pid_0(flags);
            Ok(())
        }),
        Err(reason) => {
            eprintln!("skipped: {TEST}: {reason}");
            Trial::test(TEST, move || Err(reason.into())).with_ignored_flag(true)
        }
    };
    libtest_mimic::run(&Arguments::from_args(), vec![trial]).exit_code()
}

/// The flags of `unshare` that make a pid namespace here, or why none does.
fn unshare_flags() -> Result<&'static [&'static str], String> {
    const AS_ROOT: &[&str] = &["--pid", "--fork"];
    const IN_A_USER_NAMESPACE: &[&str] = &["--user", "--map-root-user", "--pid", "--fork"];
    let root = rustix::process::geteuid().is_root();
    let tries: &[&'static [&'static str]] = if root { &[AS_ROOT, IN_A_USER_NAMESPACE] } else { &[IN_A_USER_NAMESPACE] };
    let mut failures = Vec::new();
    for &flags in tries {
        match Command::new("unshare").args(flags).arg("true").stdout(Stdio::null()).output() {
            Ok(out) if out.status.success() => return Ok(flags),
            Ok(out) => failures.push(format!(
                "`unshare {}` fails ({}: {})",
                flags.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            Err(e) => failures.push(format!("`unshare` cannot run ({e})")),
        }
    }
    let without = if root { "" } else { "not root, and " };
    Err(format!("no pid namespace can be made here: {without}{}", failures.join("; ")))
}

fn a_peer_outside_our_pid_namespace_has_pid_0(flags: &[&str]) {
    let mut command = IN_THE_NAMESPACE.command();
    command.under("unshare", flags.iter().copied().chain(["--"]));
    let (ours, child) = spawn_with_channel(command.build().expect("this test binary"), TIMEOUT).unwrap();
    let (_reader, writer) = rustix::pipe::pipe().unwrap();
    ours.send(b"from outside", &[writer.as_fd()]).unwrap();
    if let Err(e) = child.wait_reporting().0.expect_ok() {
        panic!("in the namespace: {e}");
    }
}

/// The child's side: its parent made the socketpair and sends from outside the namespace.
fn in_the_namespace() -> Result<(), ChildError> {
    let stdin = std::io::stdin().as_fd().try_clone_to_owned()?;
    // Not `inherited_channel`, which trusts only the parent's pid: here the parent has none.
    let channel = Channel::from_fd(stdin)?;
    channel.set_timeout(Some(TIMEOUT))?;
    let seen = channel.peer_credentials()?.pid;
    if seen != 0 {
        return Err(format!("SO_PEERCRED of an invisible process names pid {seen}").into());
    }
    let message = channel.recv().map_err(|e| format!("a same-uid peer passes whatever its pid: {e}"))?;
    let got = (message.sender.pid, message.bytes.as_slice(), message.fds.len());
    if got != (0, &b"from outside"[..], 1) {
        return Err(format!("received {got:?}").into());
    }
    for pid in [0, 1] {
        let picky = Channel::from_fd(channel.as_fd().try_clone_to_owned()?)?.with_peer(PeerCheck::pid(pid));
        match picky.send(b"to whom?", &[]) {
            Err(refused @ IpcError::CredentialMismatch { found_pid: 0, .. })
                if refused.to_string().contains("outside our pid namespace") => {}
            other => return Err(format!("a check for pid {pid} gave {other:?}").into()),
        }
    }
    Ok(())
}
