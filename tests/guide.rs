//! The user guide's Rust examples (`docs/guide/src/`), as doctests of this crate: each chapter
//! is the documentation of one module, so `cargo test --workspace` compiles every ```rust block
//! (and runs those not marked `no_run`) against the workspace's crates. `ci/guide.py` checks
//! that every chapter is listed here.

#[doc = include_str!("../docs/guide/src/introduction.md")]
mod introduction {}
#[doc = include_str!("../docs/guide/src/install.md")]
mod install {}
#[doc = include_str!("../docs/guide/src/first-test.md")]
mod first_test {}
#[doc = include_str!("../docs/guide/src/simulator.md")]
mod simulator {}
#[doc = include_str!("../docs/guide/src/graph-memory.md")]
mod graph_memory {}
#[doc = include_str!("../docs/guide/src/runtime.md")]
mod runtime {}
#[doc = include_str!("../docs/guide/src/command.md")]
mod command {}
#[doc = include_str!("../docs/guide/src/ci.md")]
mod ci {}
#[doc = include_str!("../docs/guide/src/environment.md")]
mod environment {}
#[doc = include_str!("../docs/guide/src/exit-codes.md")]
mod exit_codes {}
#[doc = include_str!("../docs/guide/src/troubleshooting.md")]
mod troubleshooting {}
#[doc = include_str!("../docs/guide/src/security.md")]
mod security {}
#[doc = include_str!("../docs/guide/src/results.md")]
mod results {}
