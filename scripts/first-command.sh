#!/usr/bin/env bash
# CI: runs the README's first command as written (less `--release`: a debug build proves the same
# thing and shares the tests' build) until `/health` answers, so that a fresh clone's first minute
# cannot break unnoticed again. `cargo run` refused to pick a binary once the benchmark crate
# joined the workspace, and nothing ran that command.
set -euo pipefail
cd "$(dirname "$0")/.."
first=$(awk '/^## The two commands/{f=1} f && /^cargo run/{print; exit}' README.md | sed 's/#.*//')
[ -n "$first" ] || { echo "first-command: no 'cargo run' line under '## The two commands' in README.md" >&2; exit 1; }
command=${first/ --release/}
echo "first-command: $command"
log=$(mktemp)
# A child of its own process group, so that stopping it stops the gateway cargo started.
setsid bash -c "exec $command" >"$log" 2>&1 &
pid=$!
stop() { kill -- -"$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
trap stop EXIT
# The build may be cold: up to 20 minutes for it, then the gateway must answer.
for _ in $(seq 1 1200); do
  if curl -fsS --max-time 2 http://127.0.0.1:8080/health >/dev/null 2>&1; then
    echo "first-command: /health answered"
    exit 0
  fi
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "first-command: '$command' exited before /health answered:" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
  sleep 1
done
echo "first-command: /health did not answer within 20 minutes:" >&2
tail -n 40 "$log" >&2
exit 1
