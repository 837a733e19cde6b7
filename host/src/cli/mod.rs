//! The commands besides `serve`, as library functions that write to any `Write` (so tests can
//! read what they print): `config`, `keys`, `login`, `plugin`, `usage`.
//!
//! - [`alerts`]: a test alert to every sink.
//! - [`audit`]: the audit log listed and its chain verified; what the other commands record.
//! - [`config`]: the config's JSON Schema and reference page, and `config check`.
//! - [`keys`]: create, list and revoke API keys in the ledger's database.
//! - [`login`]: keep a provider's key in the credentials file.
//! - [`plugin`]: start, build and test a plugin in Rust, Python or JavaScript.
//! - [`usage`]: the `/usage/*` questions as tables, from a local ledger or a remote gateway.
//! - [`table`]: aligned text columns.

pub mod alerts;
pub mod audit;
pub mod config;
pub mod keys;
pub mod login;
pub mod plugin;
pub mod table;
pub mod usage;
