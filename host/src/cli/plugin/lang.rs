//! The language a plugin project is written in.

use serde::{Deserialize, Serialize};

/// The language a plugin is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    Rust,
    Python,
    Js,
}
