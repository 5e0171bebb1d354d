//! Child processes: the one way peerpool, its command, its fixtures and its tests run work in
//! another process. A check that may kill its CUDA context (a kernel touching memory it may not
//! access) is shown only there, and sharing memory between processes needs a second one.
//!
//! - The runner ([`run`], [`spawn`], [`spawn_with_channel`]): the child in its own process
//!   group, a timeout on the whole call, output captured as bytes up to [`OUTPUT_LIMIT`], the
//!   group killed when the child exits or its time is up.
//! - The result ([`ChildResult`]): the one line a child prints on how its work ended, found in
//!   its raw output ([`run_reporting`], [`Running::wait_reporting`]), and the line with its
//!   projected wall time on a simulated machine ([`wall_line`]).
//! - Roles ([`Role`], [`Roles`]): what a binary does when it runs again as its own child,
//!   chosen by the one variable [`ROLE_ENV`], with arguments declared by each role and checked
//!   on both sides.
//! - A pair ([`see_only_pair`], [`pair_here`]): a child that sees only its two GPUs, by UUID,
//!   and finds them again.
//!
//! ```no_run
//! use peerpool::child::{Role, Roles};
//! use std::time::Duration;
//!
//! const ECHO: Role = Role::new("echo", &["word"]);
//!
//! fn main() -> std::process::ExitCode {
//!     // First thing: in a child, serve its role and end.
//!     let echo = |call: &peerpool::child::Call| {
//!         println!("{}", call.arg("word")?);
//!         Ok(())
//!     };
//!     if let Some(code) = Roles::new().reporting(ECHO, echo).dispatch() {
//!         return code;
//!     }
//!     let command = ECHO.command().arg("word", "hello").build().expect("this binary");
//!     let (outcome, _) = peerpool::child::spawn(command, Duration::from_secs(10)).expect("spawn").wait_reporting();
//!     assert_eq!(outcome.expect_ok(), Ok(()));
//!     std::process::ExitCode::SUCCESS
//! }
//! ```

mod outcome;
mod pair;
mod role;
mod run;

pub use outcome::{ChildError, ChildOutcome, ChildResult, ELAPSED_PREFIX, RESULT_PREFIX, find_wall, wall_line};
pub use pair::{pair_here, pair_uuids, see_only_pair};
pub use role::{BAD_CALL, Call, PAIR_ARG, ROLE_ENV, Role, RoleCommand, Roles, build_dir, this_binary};
pub use run::{
    Finished, OUTPUT_LIMIT, Running, inherited_channel, run, run_reporting, run_reporting_timed, spawn,
    spawn_with_channel,
};
