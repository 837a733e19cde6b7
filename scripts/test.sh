#!/usr/bin/env bash
# Runs every test of the project: the host (unit and end-to-end tests, which build the plugins),
# the plugin SDK, and the plugins' own unit tests (natively).
set -euo pipefail
cd "$(dirname "$0")/.."
rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2
host=$(rustc -vV | sed -n 's/^host: //p')

cargo test --workspace
(cd plugin-sdk && cargo test)
# The plugin workspaces default to wasm32-wasip2; their unit tests run natively.
(cd plugins && CARGO_TARGET_DIR=../target/guests-native cargo test --target "$host")
