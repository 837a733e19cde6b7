#!/usr/bin/env bash
# What the usage journal costs a request (BENCHMARKS.md, "The usage journal"): the gateway's
# binary as built (target/debug unless BIN says otherwise) serving the echo plugin with a SQLite
# ledger, the journal off, on, and on with fsync; wrk at one connection (p50) and at 64
# (requests/s), and the gateway's CPU time per request over the 64-connection run. Each setup is
# run ROUNDS times, interleaved, so that a busy machine's drift falls on all of them alike.
# Needs `wrk` (apt-get install wrk). Usage: scripts/journal-cost.sh [seconds per run] [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-$PWD/target/debug/wasmgate}
SECS=${1:-10}
ROUNDS=${2:-2}
work=$(mktemp -d /var/tmp/wasmgate-journal-cost.XXXXXX)
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
cat > "$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.body = '{"model":"echo-1","messages":[{"role":"user","content":"hello there"}]}'
LUA
port=$((20000 + RANDOM % 20000))
pid=
run() { # name journal-yaml
  local name=$1 journal=$2 dir="$work/$1"
  rm -rf "$dir"; mkdir -p "$dir"
  printf 'server: { host: 127.0.0.1, port: %s }\nobservability: { log_level: warn }\nproviders:\n  echo: { plugin: echo, models: [echo-1] }\nledger: { url: "sqlite://%s/ledger.db", journal: %s }\n' \
    "$port" "$dir" "$journal" > "$dir/config.yaml"
  (cd "$dir" && exec "$BIN" serve --config config.yaml 2> "$dir/log") & pid=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
  wrk -t1 -c1 -d2s -s "$work/post.lua" "http://127.0.0.1:$port/v1/chat/completions" >/dev/null
  local p50 rps cpu0 cpu1 n
  p50=$(wrk -t1 -c1 -d"${SECS}s" --latency -s "$work/post.lua" "http://127.0.0.1:$port/v1/chat/completions" \
    | awk '$1 == "50%" { print $2 }')
  cpu0=$(awk '{ print $14 + $15 }' /proc/$pid/stat)
  out=$(wrk -t2 -c64 -d"${SECS}s" -s "$work/post.lua" "http://127.0.0.1:$port/v1/chat/completions")
  cpu1=$(awk '{ print $14 + $15 }' /proc/$pid/stat)
  local metrics group=""
  metrics=$(curl -s "http://127.0.0.1:$port/metrics")
  if grep -q '^wasmgate_ledger_journal_writes_total' <<< "$metrics"; then
    group=$(awk '$1 == "wasmgate_ledger_journal_appended_records_total" { r = $2 }
                 $1 == "wasmgate_ledger_journal_writes_total" { w = $2 }
                 END { if (w > 0) printf " records/write %.1f", r / w }' <<< "$metrics")
  fi
  rps=$(awk '$1 == "Requests/sec:" { print $2 }' <<< "$out")
  n=$(awk '/requests in/ { print $1 }' <<< "$out")
  non2xx=$(awk '/Non-2xx/ { print $NF }' <<< "$out")
  # Clock ticks (1/100 s) per request, as µs.
  printf '%-14s p50 c=1 %-9s req/s c=64 %-9s CPU/request %s µs%s%s\n' "$name" "$p50" "$rps" \
    "$(( (cpu1 - cpu0) * 10000 / n ))" "$group" "${non2xx:+ (non-2xx: $non2xx)}"
  kill -TERM $pid; wait $pid || true
}
echo "binary $BIN, $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
for round in $(seq "$ROUNDS"); do
  run journal-off '{ enabled: false }'
  run journal-on '{ enabled: true }'
  run journal-fsync '{ enabled: true, fsync: true }'
done
