//! Running a child process with a timeout, its output drained: how checks that kill their CUDA
//! context (a kernel touching memory it may not access) are isolated.

use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How a child ended.
#[derive(Debug)]
pub enum Finished {
    /// It exited (or was killed by a signal) with this status and output.
    Exited {
        /// Its exit status.
        status: ExitStatus,
        /// What it wrote to stdout.
        stdout: String,
        /// What it wrote to stderr.
        stderr: String,
    },
    /// It ran past the timeout and was killed.
    TimedOut,
}

/// Runs `command` (stdin closed, stdout and stderr captured) for at most `timeout`.
pub fn run(mut command: Command, timeout: Duration) -> std::io::Result<Finished> {
    let mut child = command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    // Drain both pipes on threads so a chatty child cannot block on a full pipe.
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if start.elapsed() >= timeout {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(Finished::TimedOut);
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    Ok(Finished::Exited { status, stdout, stderr })
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_string(&mut text);
        }
        text
    })
}
