//! The end-to-end tests: the real server and binary driven by real clients, one module a file,
//! sharing their setup through `common/`. One test binary rather than one a file, so that
//! wasmtime is linked once; `cargo test --test e2e chat::` runs one file's tests.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod accounting;
mod alerts;
mod api_endpoints;
mod audit;
mod auth;
mod auth_matrix;
mod batches;
mod batches_anthropic;
mod batches_memory;
mod bedrock;
mod cache;
mod cache_key;
mod cache_semantic;
mod chat;
mod claude_code;
mod cli;
mod cli_help;
mod commands;
mod config_cli;
mod console;
mod count_translated;
mod dialect_names;
mod endpoints;
mod errors;
mod fault_isolation;
mod fuzz;
mod gemini;
mod guards;
mod guards_native;
mod guards_outside;
mod guards_routes;
mod hostile_input;
mod journal;
mod jwt;
mod key_echo;
mod key_guards;
mod keys;
mod limits;
mod mcp_calls;
mod mcp_claude_code;
mod mcp_gateway;
mod mcp_reload;
mod mcp_sse;
mod messages;
mod module_graph;
mod observability;
mod passthrough;
mod polyglot;
mod polyglot_consult;
mod polyglot_passthrough;
mod providers;
mod reload;
mod resources;
mod responses;
mod routing;
mod sdk_clients;
mod shutdown;
mod streaming;
mod url_injection;
mod usage;
