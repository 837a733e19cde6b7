//! `wasmgate plugin new|build|test`: start a router, limiter, provider or guard from a template in
//! Rust, Python or JavaScript, build it into the component that `plugins.dir` loads (hot reload
//! picks a new file up), and run its unit tests.
//!
//! A project is a directory with a `wasmgate-plugin.yaml` (`name`, `kind`, `lang`). Python and
//! JavaScript builds write this gateway's WIT and SDK into the project's `.wasmgate/` first, then
//! run the language's toolchain: `componentize-py` for Python, `node` with
//! `@bytecodealliance/componentize-js` and `rolldown` for JavaScript, `cargo` for Rust.

mod embedded;
mod kind;
mod lang;
mod project;
mod templates;

pub use kind::Kind;
pub use lang::Lang;
pub use project::{Toolchain, build, default_rust_sdk, new, test};
