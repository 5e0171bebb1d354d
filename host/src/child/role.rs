//! Roles: what a binary does when it is run again as a child of itself.
//!
//! A role child is this binary with [`ROLE_ENV`] set to the role's name and the role's
//! arguments as its command line:
//!
//! ```text
//! PEERPOOL_CHILD_ROLE=<role> <binary> [<name>=<value>...] [-- <rest>...]
//! ```
//!
//! Each role declares the names of its arguments ([`Role::new`]); a child gets each exactly
//! once, plus [`PAIR_ARG`] when it sees only one pair of GPUs ([`see_only_pair`]). A role that
//! runs a command line of its own (a test harness's) takes the words after `--` as they are
//! ([`Role::with_rest`]). Both sides check this: [`RoleCommand::build`] refuses a call the role
//! does not declare, and [`Roles::dispatch`] refuses, with exit status [`BAD_CALL`] and one line
//! on stderr, an unknown role, a missing, unknown or repeated argument, and a word that is not
//! UTF-8.
//!
//! A binary that can be a role child lists its roles in one [`Roles`] table and dispatches it
//! first thing in `main`, before any test harness reads the command line; a suite on
//! `peerpool-fixtures` has its table in `PairSuite::main`. The runner removes [`ROLE_ENV`] from
//! every command that does not set it, so nothing it starts inherits its parent's role (a
//! command a role child starts by other means still does).
//!
//! [`see_only_pair`]: super::see_only_pair

use super::outcome::{ChildError, ChildResult};
use std::ffi::{OsStr, OsString};
use std::fmt::Display;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

/// The one variable that makes a process a role child: the role's name.
pub const ROLE_ENV: &str = "PEERPOOL_CHILD_ROLE";
/// The argument any role child may get: the owner's and the accessor's UUIDs
/// (`GPU-...,GPU-...`) of the one pair it sees.
pub const PAIR_ARG: &str = "pair";
/// The exit status of a role child whose call is malformed.
pub const BAD_CALL: u8 = 2;

/// This binary, the one a role child runs again.
///
/// The one `current_exe` of the role facility: a test in a nextest archive runs from another
/// path than the build's, and finds itself (and what was built beside it) only at run time.
pub fn this_binary() -> std::io::Result<PathBuf> {
    std::env::current_exe()
}

/// The build directory of this binary when it is a test, a bench or an example
/// (`target/<profile>`, above the `deps/` or `examples/` directory that holds it): where the
/// programs and libraries built beside it lie, for the children it runs.
pub fn build_dir() -> std::io::Result<PathBuf> {
    let exe = this_binary()?;
    exe.parent()
        .and_then(std::path::Path::parent)
        .map(PathBuf::from)
        .ok_or_else(|| std::io::Error::other(format!("{} is not in target/<profile>/deps or examples", exe.display())))
}

/// A role: its name and the names of its arguments, what parent and child agree on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Role {
    name: &'static str,
    args: &'static [&'static str],
    rest: bool,
}

impl Role {
    /// A role named `name` (unique in its binary) that takes the arguments `args`.
    pub const fn new(name: &'static str, args: &'static [&'static str]) -> Role {
        Role { name, args, rest: false }
    }

    /// The same role, also taking the words after `--` as they are.
    pub const fn with_rest(self) -> Role {
        Role { rest: true, ..self }
    }

    /// Its name, the value of [`ROLE_ENV`] in its children.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The names of its arguments.
    pub fn args(&self) -> &'static [&'static str] {
        self.args
    }

    /// The command that runs this binary in this role, once its arguments are given.
    pub fn command(&self) -> RoleCommand {
        RoleCommand { role: *self, launcher: None, args: Vec::new(), rest: Vec::new(), env: Vec::new() }
    }

    fn usage(&self) -> String {
        let mut usage = format!("{ROLE_ENV}={} <binary>", self.name);
        for name in self.args {
            usage.push_str(&format!(" {name}=<{name}>"));
        }
        usage.push_str(&format!(" [{PAIR_ARG}=<owner-uuid>,<accessor-uuid>]"));
        if self.rest {
            usage.push_str(" [-- <arguments>...]");
        }
        usage
    }
}

/// This binary in a role, with its arguments: [`RoleCommand::build`] makes the
/// [`Command`] for [`spawn`](super::spawn) or [`run`](super::run).
#[derive(Clone, Debug)]
pub struct RoleCommand {
    role: Role,
    launcher: Option<(OsString, Vec<OsString>)>,
    args: Vec<(String, String)>,
    rest: Vec<OsString>,
    env: Vec<(OsString, Option<OsString>)>,
}

impl RoleCommand {
    /// Sets argument `name` to `value` (a value given before is replaced).
    pub fn arg(&mut self, name: &str, value: impl Display) -> &mut RoleCommand {
        self.args.retain(|(n, _)| n != name);
        self.args.push((name.to_string(), value.to_string()));
        self
    }

    /// Adds words after `--`, for a role that takes them ([`Role::with_rest`]).
    pub fn rest<I, S>(&mut self, words: I) -> &mut RoleCommand
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.rest.extend(words.into_iter().map(|w| w.as_ref().to_os_string()));
        self
    }

    /// Runs the child through `program` with `args` first (`unshare ... --`, `peerpool sim
    /// --`), which must end by running the program it is given with the arguments after it
    /// (`env`, which sets [`ROLE_ENV`] for this binary alone).
    pub fn under<I, S>(&mut self, program: impl AsRef<OsStr>, args: I) -> &mut RoleCommand
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args = args.into_iter().map(|a| a.as_ref().to_os_string()).collect();
        self.launcher = Some((program.as_ref().to_os_string(), args));
        self
    }

    /// Sets a variable in the child's environment (after [`ROLE_ENV`], so it may replace it
    /// when there is no launcher).
    pub fn env(&mut self, name: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut RoleCommand {
        self.env.push((name.as_ref().to_os_string(), Some(value.as_ref().to_os_string())));
        self
    }

    /// Removes a variable from the child's environment.
    pub fn env_remove(&mut self, name: impl AsRef<OsStr>) -> &mut RoleCommand {
        self.env.push((name.as_ref().to_os_string(), None));
        self
    }

    /// The role it runs.
    pub fn role(&self) -> Role {
        self.role
    }

    /// The command: an error when an argument the role declares is missing or one it does not
    /// declare is given, or when this binary cannot be found.
    pub fn build(&self) -> std::io::Result<Command> {
        let invalid = |what: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, what);
        let role = &self.role;
        if let Some(missing) = role.args.iter().find(|name| !self.args.iter().any(|(n, _)| n == *name)) {
            return Err(invalid(format!("role {}: argument {missing} is missing ({})", role.name, role.usage())));
        }
        if let Some((unknown, _)) = self.args.iter().find(|(n, _)| n != PAIR_ARG && !role.args.contains(&n.as_str())) {
            return Err(invalid(format!("role {} takes no argument {unknown} ({})", role.name, role.usage())));
        }
        if !self.rest.is_empty() && !role.rest {
            return Err(invalid(format!("role {} takes nothing after -- ({})", role.name, role.usage())));
        }
        let exe = this_binary()?;
        let mut command = match &self.launcher {
            // The role is set for this binary alone, through `env`: a launcher that is itself a
            // binary with roles (`peerpool sim`) must not take it for its own.
            Some((program, args)) => {
                let mut command = Command::new(program);
                command.args(args).arg("env").arg(format!("{ROLE_ENV}={}", role.name)).arg(exe);
                command
            }
            None => {
                let mut command = Command::new(exe);
                command.env(ROLE_ENV, role.name);
                command
            }
        };
        command.args(self.args.iter().map(|(n, v)| format!("{n}={v}")));
        if !self.rest.is_empty() {
            command.arg("--").args(&self.rest);
        }
        for (name, value) in &self.env {
            match value {
                Some(value) => command.env(name, value),
                None => command.env_remove(name),
            };
        }
        Ok(command)
    }
}

/// How this process was called as a role child: the role's name and its arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    role: String,
    args: Vec<(String, String)>,
    rest: Vec<String>,
}

impl Call {
    /// This process's call: `None` when [`ROLE_ENV`] is unset (the command line is then not
    /// read), an error naming what is wrong when the variable or a word of the command line is
    /// not UTF-8, or a word before `--` is not `name=value` or repeats a name.
    pub fn current() -> Result<Option<Call>, String> {
        let role = crate::env::var(ROLE_ENV).map_err(|e| e.to_string())?;
        role.map(|role| Call::parse(role, std::env::args_os().skip(1))).transpose()
    }

    /// The call of role `role` with the command line `words` (the binary's name left out).
    pub fn parse(role: String, words: impl IntoIterator<Item = OsString>) -> Result<Call, String> {
        use crate::text::echo;
        let wrong = |what: String| format!("{ROLE_ENV}={}: {what}", echo(&role));
        let text = |word: OsString| {
            word.into_string().map_err(|w| wrong(format!("argument {} is not UTF-8", echo(&w.to_string_lossy()))))
        };
        let (mut args, mut rest) = (Vec::<(String, String)>::new(), Vec::new());
        let mut words = words.into_iter();
        for word in words.by_ref() {
            let word = text(word)?;
            if word == "--" {
                break;
            }
            let Some((name, value)) = word.split_once('=') else {
                return Err(wrong(format!("argument {} is not name=value", echo(&word))));
            };
            if args.iter().any(|(n, _)| n == name) {
                return Err(wrong(format!("argument {} is given twice", echo(name))));
            }
            args.push((name.to_string(), value.to_string()));
        }
        for word in words {
            rest.push(text(word)?);
        }
        Ok(Call { role, args, rest })
    }

    /// The role's name.
    pub fn role(&self) -> &str {
        &self.role
    }

    /// The value of argument `name`; an error naming it when it was not given.
    pub fn arg(&self, name: &str) -> Result<&str, ChildError> {
        self.optional(name).ok_or_else(|| format!("role {}: argument {name} is missing", self.role).into())
    }

    /// The value of argument `name` read as a `T` (an ordinal, a count).
    pub fn value<T>(&self, name: &str) -> Result<T, ChildError>
    where
        T: std::str::FromStr,
        T::Err: Display,
    {
        let text = self.arg(name)?;
        text.parse().map_err(|e| format!("role {}: argument {name}={}: {e}", self.role, crate::text::echo(text)).into())
    }

    /// The value of argument `name`, if it was given.
    pub fn optional(&self, name: &str) -> Option<&str> {
        self.args.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The words after `--`.
    pub fn rest(&self) -> &[String] {
        &self.rest
    }

    /// Whether the call is one `role` takes: every argument it declares, once, and no other
    /// but [`PAIR_ARG`]; words after `--` only for a role that takes them.
    fn check(&self, role: &Role) -> Result<(), String> {
        let wrong = |what: String| Err(format!("{ROLE_ENV}={}: {what} (usage: {})", role.name, role.usage()));
        if let Some(missing) = role.args.iter().find(|name| self.optional(name).is_none()) {
            return wrong(format!("argument {missing} is missing"));
        }
        if let Some((unknown, _)) = self.args.iter().find(|(n, _)| n != PAIR_ARG && !role.args.contains(&n.as_str())) {
            return wrong(format!("argument {} is not one of this role's", crate::text::echo(unknown)));
        }
        if !self.rest.is_empty() && !role.rest {
            return wrong("it takes nothing after --".into());
        }
        Ok(())
    }
}

type Work<'a> = Box<dyn FnOnce(&Call) -> Result<(), ChildError> + 'a>;
type Main<'a> = Box<dyn FnOnce(&Call) -> ExitCode + 'a>;

enum Body<'a> {
    /// Prints the [`ChildResult`] line of its result and exits with status 0.
    Reporting(Work<'a>),
    /// Exits with the status it returns.
    Exiting(Main<'a>),
}

/// The roles a binary can be run as, each with what it does there: one table per binary,
/// dispatched first thing in its `main`.
#[derive(Default)]
pub struct Roles<'a> {
    roles: Vec<(Role, Body<'a>)>,
}

impl std::fmt::Debug for Roles<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.roles.iter().map(|(role, _)| role.name)).finish()
    }
}

impl<'a> Roles<'a> {
    /// No roles yet.
    pub fn new() -> Roles<'a> {
        Roles::default()
    }

    /// `role` does `work` and prints its [`ChildResult`] line (the parent reads it with
    /// [`run_reporting`](super::run_reporting) or [`wait_reporting`](super::Running::wait_reporting)),
    /// then exits with status 0: the parent judges the report. A panic in `work` ends the
    /// child without a report.
    pub fn reporting(mut self, role: Role, work: impl FnOnce(&Call) -> Result<(), ChildError> + 'a) -> Roles<'a> {
        self.roles.push((role, Body::Reporting(Box::new(work))));
        self
    }

    /// `role` runs `main`, and exits with the status it returns.
    pub fn exiting(mut self, role: Role, main: impl FnOnce(&Call) -> ExitCode + 'a) -> Roles<'a> {
        self.roles.push((role, Body::Exiting(Box::new(main))));
        self
    }

    /// In a role child: runs its role and returns the exit code for `main` to return; a call
    /// this table cannot serve (an unknown role, wrong arguments) is one line on stderr and
    /// [`BAD_CALL`]. `None` when this process is not a role child.
    pub fn dispatch(self) -> Option<ExitCode> {
        self.serve(true)
    }

    /// [`Roles::dispatch`] for a binary whose roles are served in two tables (a test's own,
    /// before the suite it runs is built, and then the suite's): `None` also when the role
    /// named is not in this table, for the next one to serve.
    pub fn dispatch_listed(self) -> Option<ExitCode> {
        self.serve(false)
    }

    fn serve(self, last: bool) -> Option<ExitCode> {
        let refuse = |message: String| {
            eprintln!("peerpool child: {}", crate::text::escaped(&message));
            Some(ExitCode::from(BAD_CALL))
        };
        let call = match Call::current() {
            Ok(call) => call?,
            Err(e) => return refuse(e),
        };
        let names: Vec<&str> = self.roles.iter().map(|(role, _)| role.name).collect();
        let names = names.join(", ");
        let Some((role, body)) = self.roles.into_iter().find(|(role, _)| role.name == call.role) else {
            let unknown = crate::text::echo(&call.role);
            return match last {
                true => refuse(format!("{ROLE_ENV}={unknown}: this binary has no such role (its roles: {names})")),
                false => None,
            };
        };
        if let Err(e) = call.check(&role) {
            return refuse(e);
        }
        match body {
            Body::Reporting(work) => {
                println!("{}", ChildResult::from_result(work(&call)).line());
                Some(ExitCode::SUCCESS)
            }
            Body::Exiting(main) => Some(main(&call)),
        }
    }
}
