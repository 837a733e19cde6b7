#!/usr/bin/env bash
# The gateway benchmark (BENCHMARKS.md, "The gateway as users run it"): builds the production
# binary (the container image's), the mock upstream and the runner, installs the pinned load generator, and prints the
# table. Arguments go to gatebench (`--quick`, `--only chat|messages|responses|ttft|realistic|mcp`;
# `--only ledger --ledger NAME=URL ...` compares ledgers, see scripts/seed-ledger.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
OHA_VERSION=1.16.0

command -v taskset >/dev/null || { sudo apt-get install -y util-linux 2>/dev/null || apt-get install -y util-linux; }
oha="$root/target/tools/oha-$OHA_VERSION/bin/oha"
if [ ! -x "$oha" ]; then
  cargo install oha --version "$OHA_VERSION" --locked --root "$root/target/tools/oha-$OHA_VERSION"
fi
# The `production` profile (Cargo.toml): what the container image ships, and the bare proxy built
# the same way.
cargo build --profile production --workspace --bin wasmgate --bin gatebench --bin mock-upstream --bin bare-proxy
bin="$root/target/production"
[ "$(nproc)" -ge 2 ] || echo "warning: one CPU; the gateway and the load share it" >&2
echo "commit $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (with local changes)'), $(date -u +%F), load average $(cut -d' ' -f1-3 /proc/loadavg)"
# Absolute paths: the runner starts the gateway from a directory of its own.
exec "$bin/gatebench" --gateway "$bin/wasmgate" \
  --mock "$bin/mock-upstream" --proxy "$bin/bare-proxy" \
  --oha "$oha" "$@"
