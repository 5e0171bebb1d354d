//! Fd passing over `ipc::Channel` and `ipc::Listener`, CPU only.
//!
//! Every test runs leak-checked: no fd it opened may stay open (`ipc_support::fd_leaks`).

use peerpool::ipc::{
    Channel, DEFAULT_TIMEOUT, FdKind, IpcError, Limits, Listener, MAX_FDS, MAX_PAYLOAD, PeerCheck, PrivateDir,
};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::io::FdFlags;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

mod ipc_support;
use ipc_support::leak_checked;

/// [`leak_checked`] with a new connected pair of channels given to `scenario`.
fn leak_checked_pair(scenario: impl FnOnce(Channel, Channel)) {
    leak_checked(|| {
        let (a, b) = Channel::pair().unwrap();
        scenario(a, b);
    });
}

fn our_pid() -> u32 {
    std::process::id()
}

/// A pid that is certainly not ours.
fn other_pid() -> u32 {
    if our_pid() == 1 { 2 } else { 1 }
}

/// A close-on-exec pipe: (read end, write end).
fn pipe() -> (OwnedFd, OwnedFd) {
    rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).expect("pipe")
}

/// Everything written to the pipe until every write end is closed.
fn drain(reader: OwnedFd) -> String {
    let mut text = String::new();
    File::from(reader).read_to_string(&mut text).expect("read pipe");
    text
}

fn is_cloexec(fd: impl AsFd) -> bool {
    rustix::io::fcntl_getfd(fd).expect("F_GETFD").contains(FdFlags::CLOEXEC)
}

fn base() -> PathBuf {
    std::env::temp_dir()
}

#[test]
fn socketpair_carries_bytes_and_a_pipe_write_end() {
    leak_checked_pair(|a, b| {
        let (reader, writer) = pipe();
        a.send(b"export data", &[writer.as_fd()]).unwrap();
        drop(writer);

        let message = b.recv().unwrap();
        assert_eq!(message.bytes, b"export data");
        assert_eq!(message.sender.pid, our_pid());
        let [fd]: [OwnedFd; 1] = message.fds.try_into().expect("one fd");
        assert!(is_cloexec(&fd), "received fd must be close-on-exec");
        let mut received = File::from(fd);
        received.write_all(b"through the received fd").unwrap();
        drop(received);
        assert_eq!(drain(reader), "through the received fd");
    });
}

#[test]
fn both_directions_and_empty_messages() {
    leak_checked_pair(|a, b| {
        b.send(b"", &[]).unwrap();
        let message = a.recv().unwrap();
        assert!(message.bytes.is_empty() && message.fds.is_empty());
        let (reader, writer) = pipe();
        b.send(b"", &[writer.as_fd(), writer.as_fd()]).unwrap();
        drop(writer);
        assert_eq!(a.recv().unwrap().fds.len(), 2);
        drop(reader);
    });
}

#[test]
fn listener_connection_carries_fds_both_ways() {
    leak_checked(|| {
        let listener = Listener::bind_in(&base()).unwrap();
        let client = Channel::connect(listener.path()).unwrap();
        let server = listener.accept().unwrap();
        assert_eq!(server.peer_credentials().unwrap().pid, our_pid());

        let (reader, writer) = pipe();
        client.send(b"to server", &[writer.as_fd()]).unwrap();
        let message = server.recv().unwrap();
        assert_eq!(message.bytes, b"to server");
        server.send(b"to client", &[message.fds[0].as_fd()]).unwrap();
        drop(message);
        let message = client.recv().unwrap();
        assert_eq!(message.bytes, b"to client");
        assert!(is_cloexec(&message.fds[0]));
        File::from(message.fds.into_iter().next().unwrap()).write_all(b"round trip").unwrap();
        drop(writer);
        assert_eq!(drain(reader), "round trip");
    });
}

#[test]
fn private_directory_is_0700_and_gone_after_drop() {
    leak_checked(|| {
        let listener = Listener::bind_in(&base()).unwrap();
        let dir = listener.dir().to_path_buf();
        let socket = listener.path().to_path_buf();
        let meta = std::fs::metadata(&dir).unwrap();
        assert!(meta.is_dir());
        assert_eq!(meta.permissions().mode() & 0o7777, 0o700);
        assert!(socket.starts_with(&dir) && socket.exists());
        drop(listener);
        assert!(!socket.exists() && !dir.exists(), "{} left behind", dir.display());

        let first = PrivateDir::create_in(&base()).unwrap();
        let second = PrivateDir::create_in(&base()).unwrap();
        assert_ne!(first.path(), second.path(), "names are random");
        let path = first.path().to_path_buf();
        drop(first);
        assert!(!path.exists());
    });
}

#[test]
fn sender_checks_credentials_before_sending() {
    leak_checked_pair(|a, b| {
        // A socketpair's SO_PEERCRED is the process that made it: this one.
        a.send(b"ours", &[]).unwrap();
        let a = a.with_peer(PeerCheck::pid(our_pid()));
        a.send(b"still ours", &[]).unwrap();
        assert_eq!(b.recv().unwrap().bytes, b"ours");
        assert_eq!(b.recv().unwrap().bytes, b"still ours");

        let (reader, writer) = pipe();
        let a = a.with_peer(PeerCheck::pid(other_pid()));
        let refused = a.send(b"secret", &[writer.as_fd()]).unwrap_err();
        assert_eq!(
            refused,
            IpcError::CredentialMismatch {
                expected_uid: rustix::process::geteuid().as_raw(),
                expected_pid: Some(other_pid()),
                found_uid: rustix::process::geteuid().as_raw(),
                found_pid: our_pid(),
            }
        );
        // Nothing was sent: the peer waits in vain.
        b.set_timeout(Some(Duration::from_millis(50))).unwrap();
        assert_eq!(b.recv().unwrap_err(), IpcError::TimedOut { op: "recvmsg" });
        drop(writer);
        assert_eq!(drain(reader), "");
    });
}

#[test]
fn receiver_checks_the_senders_credentials_and_closes_its_fds() {
    leak_checked_pair(|a, b| {
        let b = b.with_peer(PeerCheck::pid(other_pid()));
        let (reader, writer) = pipe();
        a.send(b"from us", &[writer.as_fd()]).unwrap();
        drop(writer);
        assert!(matches!(
            b.recv().unwrap_err(),
            IpcError::CredentialMismatch { expected_pid: Some(pid), found_pid, .. } if pid == other_pid() && found_pid == our_pid()
        ));
        // The fd that arrived was closed: no write end is left.
        assert_eq!(drain(reader), "");

        let b = b.with_peer(PeerCheck::pid(our_pid()));
        a.send(b"from us", &[]).unwrap();
        assert_eq!(b.recv().unwrap().sender.pid, our_pid());
    });
}

#[test]
fn closed_peer_is_reported_both_ways() {
    leak_checked_pair(|a, b| {
        drop(a);
        assert_eq!(b.recv().unwrap_err(), IpcError::PeerClosed);
        assert_eq!(b.send(b"anyone?", &[]).unwrap_err(), IpcError::PeerClosed);

        let listener = Listener::bind_in(&base()).unwrap();
        let client = Channel::connect(listener.path()).unwrap();
        drop(listener.accept().unwrap());
        assert_eq!(client.recv().unwrap_err(), IpcError::PeerClosed);
    });
}

#[test]
fn too_long_a_message_is_truncated_and_its_fds_closed() {
    leak_checked_pair(|a, b| {
        let b = b.with_limits(Limits { max_bytes: 16, max_fds: 4 });
        let (reader, writer) = pipe();
        a.send(&[7u8; 100], &[writer.as_fd()]).unwrap();
        drop(writer);
        assert_eq!(b.recv().unwrap_err(), IpcError::Truncated { len: 108, limit: 24 });
        assert_eq!(drain(reader), "", "the truncated message's fd must be closed");
        // The rest of that message is gone, not left to corrupt the next one.
        a.send(&[1u8; 16], &[]).unwrap();
        assert_eq!(b.recv().unwrap().bytes, [1u8; 16]);
    });
}

#[test]
fn more_fds_than_allowed_are_refused_and_closed() {
    leak_checked_pair(|a, b| {
        let b = b.with_limits(Limits { max_bytes: 64, max_fds: 1 });
        let (reader, writer) = pipe();
        let two = [writer.as_fd(), writer.as_fd()];
        let many = [writer.as_fd(); 16];
        a.send(b"two", &two).unwrap();
        a.send(b"many", &many).unwrap();
        drop(writer);
        assert_eq!(b.recv().unwrap_err(), IpcError::TooManyFds { count: 2, limit: 1 });
        // 16 fds cannot all fit the receiver's control buffer: the kernel truncates, the header
        // still tells how many were sent.
        assert_eq!(b.recv().unwrap_err(), IpcError::TooManyFds { count: 16, limit: 1 });
        assert_eq!(drain(reader), "", "every fd that arrived must be closed");

        let b = b.with_limits(Limits { max_bytes: 64, max_fds: 0 });
        let (reader, writer) = pipe();
        a.send(b"one", &[writer.as_fd()]).unwrap();
        drop(writer);
        assert_eq!(b.recv().unwrap_err(), IpcError::TooManyFds { count: 1, limit: 0 });
        assert_eq!(drain(reader), "");
    });
}

#[test]
fn oversized_sends_are_refused_before_sending() {
    leak_checked_pair(|a, b| {
        let big = vec![0u8; MAX_PAYLOAD + 1];
        assert_eq!(
            a.send(&big, &[]).unwrap_err(),
            IpcError::PayloadTooLarge { len: MAX_PAYLOAD + 1, limit: MAX_PAYLOAD }
        );
        let fds: Vec<BorrowedFd<'_>> = vec![a.as_fd(); MAX_FDS + 1];
        assert_eq!(a.send(b"", &fds).unwrap_err(), IpcError::TooManyFds { count: MAX_FDS + 1, limit: MAX_FDS });
        b.set_timeout(Some(Duration::from_millis(20))).unwrap();
        assert!(matches!(b.recv().unwrap_err(), IpcError::TimedOut { .. }));
        // The largest payload goes through.
        let b = b.with_limits(Limits { max_bytes: MAX_PAYLOAD, max_fds: 0 });
        a.send(&big[1..], &[]).unwrap();
        assert_eq!(b.recv().unwrap().bytes.len(), MAX_PAYLOAD);
    });
}

#[test]
fn foreign_bytes_are_malformed() {
    leak_checked_pair(|a, b| {
        rustix::net::send(&a, b"hello, not a header", rustix::net::SendFlags::empty()).unwrap();
        assert!(matches!(b.recv().unwrap_err(), IpcError::Malformed(_)));
    });
}

#[test]
fn regular_file_is_refused_where_a_device_handle_is_expected() {
    leak_checked_pair(|a, b| {
        let file = tempfile::tempfile().unwrap();
        a.send(b"pool handle", &[file.as_fd()]).unwrap();
        assert_eq!(
            b.recv().unwrap().expect_fds(FdKind::DEVICE_HANDLE).unwrap_err(),
            IpcError::WrongFdKind { expected: FdKind::DEVICE_HANDLE, found: FdKind::Regular }
        );
        let dir = File::open("/").unwrap();
        a.send(b"pool handle", &[dir.as_fd()]).unwrap();
        assert!(matches!(
            b.recv().unwrap().expect_fds(FdKind::DEVICE_HANDLE),
            Err(IpcError::WrongFdKind { found: FdKind::Directory, .. })
        ));
        // A character device (what CUDA's POSIX-fd handles are) passes.
        let null = File::open("/dev/null").unwrap();
        a.send(b"pool handle", &[null.as_fd()]).unwrap();
        let message = b.recv().unwrap().expect_fds(FdKind::DEVICE_HANDLE).unwrap();
        assert_eq!(peerpool::ipc::expect_device_handle(&message.fds[0]), Ok(FdKind::CharDevice));
    });
}

#[test]
fn fd_kinds_are_told_apart() {
    leak_checked(|| {
        use peerpool::ipc::fd_kind;
        let (reader, writer) = pipe();
        assert_eq!(fd_kind(&reader), Ok(FdKind::Fifo));
        assert_eq!(fd_kind(&writer), Ok(FdKind::Fifo));
        let (a, _b) = Channel::pair().unwrap();
        assert_eq!(fd_kind(&a), Ok(FdKind::Socket));
        assert_eq!(fd_kind(File::open("/").unwrap()), Ok(FdKind::Directory));
        assert_eq!(fd_kind(File::open("/dev/null").unwrap()), Ok(FdKind::CharDevice));
        // Anonymous inodes are named: an eventfd (the simulator's handles) passes as a device
        // handle, any other (here an epoll instance) does not.
        let eventfd = rustix::event::eventfd(0, rustix::event::EventfdFlags::CLOEXEC).unwrap();
        assert_eq!(peerpool::ipc::expect_device_handle(&eventfd), Ok(FdKind::EventFd));
        let epoll = rustix::event::epoll::create(rustix::event::epoll::CreateFlags::CLOEXEC).unwrap();
        assert_eq!(fd_kind(&epoll), Ok(FdKind::Anonymous));
        assert_eq!(
            peerpool::ipc::expect_device_handle(&epoll),
            Err(IpcError::WrongFdKind { expected: FdKind::DEVICE_HANDLE, found: FdKind::Anonymous })
        );
        let message = IpcError::WrongFdKind { expected: FdKind::DEVICE_HANDLE, found: FdKind::Anonymous }.to_string();
        assert_eq!(
            message,
            "file descriptor is an anonymous inode other than an eventfd, expected a character device or an eventfd"
        );
    });
}

#[test]
fn only_seqpacket_unix_sockets_become_channels() {
    leak_checked(|| {
        let (stream, _other) = std::os::unix::net::UnixStream::pair().unwrap();
        assert!(matches!(Channel::from_fd(stream.into()), Err(IpcError::Malformed(_))));
        let file = File::open("/dev/null").unwrap();
        assert!(matches!(Channel::from_fd(file.into()), Err(IpcError::Io { .. })));
        let (a, b) = Channel::pair().unwrap();
        let a = Channel::from_fd(a.into_fd()).unwrap();
        a.send(b"rewrapped", &[]).unwrap();
        assert_eq!(b.recv().unwrap().bytes, b"rewrapped");
    });
}

#[test]
fn listener_refusals() {
    leak_checked(|| {
        let listener = Listener::bind_in(&base()).unwrap();
        listener.set_timeout(Some(Duration::from_millis(50))).unwrap();
        assert_eq!(listener.accept().unwrap_err(), IpcError::TimedOut { op: "accept" });

        let listener = listener.with_peer(PeerCheck::pid(other_pid()));
        let client = Channel::connect(listener.path()).unwrap();
        assert!(matches!(listener.accept().unwrap_err(), IpcError::CredentialMismatch { .. }));
        assert_eq!(client.recv().unwrap_err(), IpcError::PeerClosed, "the refused connection is closed");

        let gone = listener.dir().join("no-such-socket");
        assert!(matches!(Channel::connect(&gone).unwrap_err(), IpcError::Io { op: "connect", .. }));
        let long = base().join("x".repeat(200));
        assert!(matches!(Channel::connect(&long).unwrap_err(), IpcError::Io { op: "socket path", .. }));
    });
}

#[test]
fn channels_and_listeners_start_with_the_default_timeout() {
    leak_checked(|| {
        let (a, _b) = Channel::pair().unwrap();
        assert_eq!(a.timeout(), Ok(Some(DEFAULT_TIMEOUT)));
        let listener = Listener::bind_in(&base()).unwrap();
        assert_eq!(listener.timeout(), Ok(Some(DEFAULT_TIMEOUT)));
        listener.set_timeout(Some(Duration::from_millis(300))).unwrap();
        let _client = Channel::connect(listener.path()).unwrap();
        assert_eq!(listener.accept().unwrap().timeout(), Ok(Some(Duration::from_millis(300))));
        listener.set_timeout(None).unwrap();
        assert_eq!(listener.timeout(), Ok(None));
    });
}

/// A client of our uid that connects and says nothing costs the accepting side its timeout,
/// not forever.
#[test]
fn a_silent_client_does_not_stall_the_listener() {
    leak_checked(|| {
        let listener = Listener::bind_in(&base()).unwrap();
        listener.set_timeout(Some(Duration::from_millis(100))).unwrap();
        let client = Channel::connect(listener.path()).unwrap();
        let server = listener.accept().unwrap();
        let (done, outcome) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || done.send(server.recv().map(|m| m.bytes)));
        let outcome = outcome.recv_timeout(Duration::from_secs(10)).expect("the receive returned");
        assert_eq!(outcome, Err(IpcError::TimedOut { op: "recvmsg" }));
        waiter.join().unwrap().unwrap();
        drop(client);
    });
}

/// A zero-byte datagram (no peerpool header) is a malformed message, not the peer's end.
#[test]
fn an_empty_datagram_is_not_a_closed_peer() {
    leak_checked_pair(|a, b| {
        let raw = b.into_fd();
        assert_eq!(rustix::net::send(&raw, &[], rustix::net::SendFlags::empty()), Ok(0));
        assert!(matches!(a.recv(), Err(IpcError::Malformed(why)) if why.contains("empty datagram")));
        let b = Channel::from_fd(raw).unwrap();
        b.send(b"after", &[]).unwrap();
        assert_eq!(a.recv().unwrap().bytes, b"after");
        drop(b);
        assert_eq!(a.recv().unwrap_err(), IpcError::PeerClosed);
    });
}

/// The leak check itself: an fd left open is caught and named, one closed again is not.
#[test]
fn the_leak_check_catches_a_forgotten_fd() {
    leak_checked(|| drop(File::open("/dev/null").unwrap()));
    let caught = std::panic::catch_unwind(|| leak_checked(|| std::mem::forget(File::open("/dev/null").unwrap())));
    let message = *caught.expect_err("a forgotten fd is a leak").downcast::<String>().unwrap();
    assert!(message.contains("/dev/null"), "{message}");
}
