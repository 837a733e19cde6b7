#!/usr/bin/env bash
# Runs every test of the project: the host (unit and end-to-end tests, which build the plugins),
# the plugin SDK, the plugins' and routers' own unit tests (natively), and the Python and
# JavaScript examples (scripts/polyglot.sh), and the console in headless Chromium (tests/console.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2
# Servers the tests start themselves, each on a free port of 127.0.0.1: redis-server (two
# gateway replicas sharing one limit), a throwaway PostgreSQL cluster (the ledger's second store),
# promtool (checks the /metrics text), openssl (a throwaway CA for PostgreSQL over TLS) and strace
# (tests/counts.rs).
need=()
command -v redis-server >/dev/null || need+=(redis-server)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || need+=(postgresql)
command -v promtool >/dev/null || need+=(prometheus)
command -v openssl >/dev/null || need+=(openssl)
# tests/counts.rs counts the gateway's socket reads and writes with strace.
command -v strace >/dev/null || need+=(strace)
# tests/console.rs: the console in Debian's headless Chromium (driven by playwright-core, which
# scripts/console-browser.sh installs into target/).
[ -x /usr/bin/chromium ] || need+=(chromium)
# scripts/polyglot.sh: a Python virtual environment for componentize-py (Node.js 20+ and npm must
# be there already: Debian's nodejs is older).
python3 -c 'import ensurepip, venv' 2>/dev/null || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  else
    echo "scripts/test.sh: the tests need ${need[*]}: install them (Debian: apt-get install ${need[*]})" >&2
    exit 1
  fi
fi
host=$(rustc -vV | sed -n 's/^host: //p')
native=$PWD/target/guests-native

# Python and JavaScript plugins: pinned toolchains installed into target/polyglot/ (once), the
# examples' unit tests, and the components tests/polyglot.rs loads.
scripts/polyglot.sh
# The official Anthropic and OpenAI SDKs that tests/sdk_clients.rs drives: pinned, installed into
# target/sdk-clients/ (once).
scripts/sdk-clients.sh
scripts/console-browser.sh
# Four tests at a time on two cores: most of the end-to-end tests wait on sockets, child
# processes (the SDKs, Codex, Chromium) and timers, not on the CPU. Measured on main: the e2e
# binary's 439 tests in 347 s against 602 s at the default of one per core.
cargo test --workspace --no-fail-fast -- --test-threads=4
(cd plugin-sdk && CARGO_TARGET_DIR=../target/sdk cargo test --all-features)
# The guest workspaces default to wasm32-wasip2; their unit tests run natively.
for ws in plugins policies tests/policies; do
  (cd "$ws" && CARGO_TARGET_DIR="$native" cargo test --target "$host")
done
