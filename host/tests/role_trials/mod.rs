//! The `main` of a test binary that runs again as its own child in roles: the role in a role
//! child, else the binary's tests (shared by `host/tests` and, through `#[path]`,
//! `host/sim/tests`).

use libtest_mimic::{Arguments, Trial};
use peerpool::child::Roles;
use std::process::ExitCode;

/// In a role child, what `roles` answers; else each of `tests`, by name, as a trial that passes
/// unless its body panics.
pub fn roles_or_tests(roles: Roles, tests: &[(&'static str, fn())]) -> ExitCode {
    if let Some(code) = roles.dispatch() {
        return code;
    }
    let trial = |&(name, body): &(&'static str, fn())| {
        Trial::test(name, move || {
            body();
            Ok(())
        })
    };
    libtest_mimic::run(&Arguments::from_args(), tests.iter().map(trial).collect()).exit_code()
}
