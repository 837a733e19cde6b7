#!/usr/bin/env bash
# Runs every test of the project: the host (unit and end-to-end tests, which build the plugins),
# the plugin SDK, and the plugins' and routers' own unit tests (natively).
set -euo pipefail
cd "$(dirname "$0")/.."
rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2
host=$(rustc -vV | sed -n 's/^host: //p')
native=$PWD/target/guests-native

cargo test --workspace
(cd plugin-sdk && CARGO_TARGET_DIR=../target/sdk cargo test --all-features)
# The guest workspaces default to wasm32-wasip2; their unit tests run natively.
for ws in plugins policies tests/policies; do
  (cd "$ws" && CARGO_TARGET_DIR="$native" cargo test --target "$host")
done
