#!/usr/bin/env bash
# Instructions per request, counted by callgrind: deterministic where times are not (a shared
# or busy machine, a VM without hardware counters). Starts the mock upstream and
# `wasmgate serve` under callgrind with gatebench's chat config, sends warm-up requests, then
# counts N requests at concurrency 1 (and, for comparison, an idle stretch as long) and prints
# the instructions per request, bucketed (bench/callgrind-buckets.py).
#
#   bench/callgrind.sh <wasmgate binary> <plain|policies> <whole|stream> [N]
#
# PLAIN_PATH=false sends every request through the provider plugin (issue 38's host path off).
#
# Use a production build (`scripts/bench.sh` makes one in target/production). The instance pool is kept small
# (valgrind cannot map the default pool's address space), with its warm share large enough
# for the three policy plugins to stay warm as they do in a real deployment.
set -euo pipefail
bin=$(realpath "$1") setup=$2 mode=$3 n=${4:-200}
root=$(cd "$(dirname "$0")/.." && pwd)
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/callgrind-XXXX")
exec 3< <(taskset -c 1 "$(dirname "$bin")/mock-upstream" 0 0)
mock_pid=$!
trap 'kill $mock_pid 2>/dev/null || true' EXIT
read -r line <&3
mock=${line#listening }
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
model=openai/gpt-4o-mini
cat > "$dir/config.yaml" <<YAML
server: { host: 127.0.0.1, port: $port }
ledger: { url: 'sqlite://$dir/ledger.db' }
observability: { log_level: warn }
plugins: { max_instances: 6, stream_share_percent: 10 }
providers:
  openai: { plugin: openai, base_url: 'http://$mock/v1', api_key: sk-bench, models: [gpt-4o-mini], plain_path: ${PLAIN_PATH:-true} }
YAML
if [ "$setup" = policies ]; then
  model=v-openai
  cat >> "$dir/config.yaml" <<YAML
routing:
  v-openai: { policy: cheapest, targets: [openai/gpt-4o-mini] }
limits:
  store: memory
  rules:
    - { policy: rate-limit, scope: user, options: { requests_per_minute: 1000000000, tokens_per_minute: 1000000000000 } }
    - { policy: budget, scope: project, options: { daily_usd: 1000000000 } }
YAML
fi
cd "$dir"
taskset -c 0 valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$dir/cg.%p" \
  "$bin" serve --config "$dir/config.yaml" > "$dir/log" 2>&1 &
valgrind_pid=$!
for _ in $(seq 1 600); do
  curl -sf "http://127.0.0.1:$port/health" > /dev/null && break
  sleep 0.5
done
drive() { python3 "$root/bench/callgrind-drive.py" "127.0.0.1:$port" "$1" "$mode" "$model"; }
drive 30
callgrind_control -i on "$valgrind_pid" > /dev/null
start=$(date +%s.%N)
drive "$n"
seconds=$(python3 -c "print(round($(date +%s.%N) - $start, 2))")
callgrind_control -d load "$valgrind_pid" > /dev/null
sleep "$seconds"
callgrind_control -d idle "$valgrind_pid" > /dev/null
callgrind_control -k "$valgrind_pid" > /dev/null || true
wait "$valgrind_pid" || true
load=$(grep -l '^desc: Trigger: dump load' "$dir"/cg.* || ls "$dir"/cg.*.1)
idle=$(grep -l '^desc: Trigger: dump idle' "$dir"/cg.* || ls "$dir"/cg.*.2)
echo "$n ${mode} requests ($setup) in ${seconds}s under callgrind; files in $dir"
echo "idle stretch as long: $(grep -m1 '^summary:' "$idle" | cut -d' ' -f2) instructions in all"
python3 "$root/bench/callgrind-buckets.py" "$load" "$n"
