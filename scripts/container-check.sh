#!/usr/bin/env bash
# Builds the Dockerfile's image with podman and checks it as a user would: `serve` answers on
# 8080 (the default config and a config in the volume), `login` stores a provider key in the
# volume that `serve` then sends upstream, the process runs as uid 10001, SIGTERM (`podman stop`)
# exits 0 and leaves the requests in the ledger in the volume, and the key appears in no output.
#
# Run as root on Debian: `scripts/container-check.sh`. It installs podman, runc and debootstrap
# when missing. No image registry is needed: the Dockerfile's two base images are made here once
# and kept in podman's storage (remove them to remake them):
#   debian:bookworm-slim  a debootstrap'd bookworm (minbase);
#   rust:1.95-bookworm    that, plus gcc, libc6-dev, ca-certificates (and the CA certificates
#                         this machine adds in /usr/local/share/ca-certificates) and this
#                         machine's rustup toolchain 1.95.0 with its wasm32-wasip2 target.
# Podman resolves the Dockerfile's short names to these `localhost/` images; the build never
# pulls (`--pull=never`). It fetches crates from crates.io, so it needs that network.
# The release build (nice -n 10) is the long part: ~30 min on 2 cores the first time; later runs
# reuse podman's layer cache while the sources are unchanged.
#
# Each check prints PASS or FAIL and its time; the script exits 1 if any failed. It removes the
# containers, the volume and the network namespace it made; the images stay.
# Environment: IMAGE (default localhost/wasmgate:check), NO_BUILD=1 checks IMAGE as it is
# (built before, or elsewhere) instead of building it, STORAGE_DRIVER (overlay; vfs where
# overlay is not available), KEEP_LOGS=1 keeps the work directory with the logs.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

image=${IMAGE:-localhost/wasmgate:check}
slim=localhost/debian:bookworm-slim
rust_image=localhost/rust:1.95-bookworm
rust_version=1.95.0
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
name=wasmgate-check-$$
volume=$name-data
netns=$name
key="sk-check-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"

if [ "$(id -u)" != 0 ]; then
  echo "container-check: run as root (podman rootful, debootstrap and a network namespace)" >&2
  exit 1
fi
need=()
for tool in podman runc debootstrap curl; do
  command -v "$tool" >/dev/null || need+=("$tool")
done
command -v ip >/dev/null || need+=(iproute2)
command -v python3 >/dev/null || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

work=$(mktemp -d /var/tmp/wasmgate-check.XXXXXX)
# crun, cgroups v2 and the default ulimits fail on these machines; runc with cgroupfs works.
printf '[containers]\ndefault_ulimits = []\n' >"$work/containers.conf"
export CONTAINERS_CONF=$work/containers.conf
podman_flags=(--storage-driver "${STORAGE_DRIVER:-overlay}" --runtime runc
  --cgroup-manager cgroupfs)
podman() { command podman "${podman_flags[@]}" "$@"; }

mock_pid=
cleanup() {
  local rc=$?
  for c in "$name-default" "$name-login"; do
    podman rm -f --time 1 "$c" >/dev/null 2>&1 || true
  done
  podman volume rm -f "$volume" >/dev/null 2>&1 || true
  if [ -n "$mock_pid" ]; then kill "$mock_pid" 2>/dev/null || true; fi
  ip netns del "$netns" 2>/dev/null || true
  if [ "${KEEP_LOGS:-}" = 1 ]; then echo "logs kept in $work"; else rm -rf "$work"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- reporting -------------------------------------------------------------------------------
failed=0
summary=()
current=
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
# check NAME: starts a check (and ends the one before).
check() {
  end_check
  current=$1
  current_failed=0
  started=$(now)
  echo "== $current"
}
end_check() {
  [ -n "$current" ] || return 0
  local verdict=PASS
  [ "$current_failed" = 0 ] || verdict=FAIL
  summary+=("$verdict $(printf '%6ss' "$(since "$started")")  $current")
  echo "  $verdict ($(since "$started") s)"
  current=
}
fail() {
  echo "  FAIL: $1" >&2
  current_failed=1
  failed=1
}
finish() {
  end_check
  echo
  echo "== summary (seconds each)"
  printf '%s\n' "${summary[@]}"
  if [ "$failed" = 0 ]; then
    echo "container-check: all checks passed"
  else
    echo "container-check: FAILED" >&2
  fi
  exit "$failed"
}
# After a check that the later ones cannot do without.
must() { [ "$current_failed" = 0 ] || finish; }

if [ "${NO_BUILD:-}" = 1 ]; then
  check "the image $image, as built before (NO_BUILD=1)"
  podman image exists "$image" || fail "no image $image"
  must
else
  # --- base images -----------------------------------------------------------------------------
  check "base image $slim (debootstrap bookworm minbase; kept once made)"
  if podman image exists "$slim"; then
    echo "  present"
  else
    rootfs=$work/rootfs
    if debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1; then
      # As in Debian's image: no package lists or downloaded packages, the three suites.
      rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/archives/*.deb \
        "$rootfs"/etc/apt/sources.list "$rootfs"/etc/hostname
      cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
      if ! (cd "$rootfs" && tar -c .) | podman import --change 'CMD ["bash"]' - "$slim" >/dev/null; then
        fail "podman import failed"
      fi
      rm -rf "$rootfs"
    else
      tail -5 "$work/debootstrap.log" >&2
      fail "debootstrap failed"
    fi
  fi
  must

  check "base image $rust_image (gcc, libc6-dev, rustup toolchain $rust_version; kept once made)"
  if podman image exists "$rust_image"; then
    echo "  present"
  else
    sysroot=$(rustc "+$rust_version" --print sysroot 2>/dev/null || true)
    rustup_bin=$(command -v rustup || true)
    if [ -z "$sysroot" ] || [ -z "$rustup_bin" ] || [ ! -d "$sysroot/lib/rustlib/wasm32-wasip2" ]; then
      fail "needs rustup with toolchain $rust_version and its wasm32-wasip2 target on this machine"
    else
      ctx=$work/rust-context
      mkdir -p "$ctx"
      cp "$(readlink -f "$rustup_bin")" "$ctx/rustup"
      # Hard links where the file system allows: the toolchain is 0.7 GB without its docs.
      cp -a --link "$sysroot/." "$ctx/toolchain/" 2>/dev/null || cp -a "$sysroot/." "$ctx/toolchain/"
      rm -rf "$ctx/toolchain/share/doc"
      # The certificates this machine trusts beyond Debian's (e.g. those of an egress proxy), so
      # that cargo in the builder reaches crates.io as cargo on the machine does.
      mkdir -p "$ctx/local-ca"
      cp /usr/local/share/ca-certificates/*.crt "$ctx/local-ca/" 2>/dev/null || true
      cat >"$ctx/settings.toml" <<EOF
version = "12"
default_toolchain = "$rust_version-x86_64-unknown-linux-gnu"
profile = "minimal"
auto_self_update = "disable"
EOF
      # Laid out as the official rust image is: RUSTUP_HOME, CARGO_HOME and PATH alike.
      cat >"$ctx/Containerfile" <<EOF
FROM $slim
RUN apt-get update \\
    && apt-get install -y --no-install-recommends gcc libc6-dev ca-certificates \\
    && rm -rf /var/lib/apt/lists/*
COPY local-ca/ /usr/local/share/ca-certificates/
RUN update-ca-certificates
ENV RUSTUP_HOME=/usr/local/rustup CARGO_HOME=/usr/local/cargo RUST_VERSION=$rust_version \\
    PATH=/usr/local/cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
COPY rustup /usr/local/cargo/bin/rustup
COPY settings.toml /usr/local/rustup/settings.toml
COPY toolchain /usr/local/rustup/toolchains/$rust_version-x86_64-unknown-linux-gnu
RUN for p in cargo cargo-clippy cargo-fmt clippy-driver rustc rustdoc rustfmt; do \\
        ln -s rustup /usr/local/cargo/bin/\$p; done \\
    && chmod -R a+w /usr/local/rustup /usr/local/cargo \\
    && rustc --version && cargo --version
EOF
      if ! podman build --pull=never --isolation chroot --network host -t "$rust_image" "$ctx" \
        >"$work/rust-image.log" 2>&1; then
        tail -20 "$work/rust-image.log" >&2
        fail "building $rust_image failed"
      fi
      rm -rf "$ctx"
    fi
  fi
  must

  # --- the image -----------------------------------------------------------------------------
  mkdir -p "$repo/target/container-check"
  build_log=$repo/target/container-check/build.log
  check "podman build of the Dockerfile (nice -n 10; log: target/container-check/build.log)"
  if ! nice -n 10 podman "${podman_flags[@]}" build --pull=never --isolation chroot --network host \
    -t "$image" -f Dockerfile . >"$build_log" 2>&1; then
    tail -30 "$build_log" >&2
    fail "the build failed"
  fi
  must

fi

check "the image: entrypoint wasmgate, user 10001:10001, /data a volume, plugins and example config"
meta=$(podman image inspect "$image" -f \
  '{{json .Config.Entrypoint}} {{.Config.User}} {{json .Config.Volumes}} {{.Config.WorkingDir}}')
echo "  $meta"
files=$(podman run --rm --network none --entrypoint /bin/sh "$image" -c \
  'ls /usr/local/lib/wasmgate/plugins; ls /usr/local/share/wasmgate; id -u' 2>&1) || true
case "$meta" in
  '["wasmgate"] 10001:10001 {"/data":{}} /data') ;;
  *) fail "unexpected image config: $meta" ;;
esac
for want in echo.wasm openai.wasm fallback.wasm config.example.yaml 10001; do
  grep -qx "$want" <<<"$files" || fail "$want missing from the image: $files"
done
must

# --- running it ------------------------------------------------------------------------------
# A network namespace of our own: the container's 8080 and the mock upstream's 127.0.0.1 are
# private to it, so nothing else on the machine can clash with them.
ip netns add "$netns"
ip -n "$netns" link set lo up
inns() { ip netns exec "$netns" "$@"; }
net=(--network "ns:/run/netns/$netns")
podman volume create "$volume" >/dev/null

# Logs of everything the image printed, searched at the end for the key.
all_output=$work/all-output.log
: >"$all_output"

# Waits (bounded) until /health answers 200; fails early if the container has exited.
wait_healthy() {
  local ctr=$1
  for _ in $(seq 1 240); do
    if inns curl -fsS -o /dev/null --max-time 2 http://127.0.0.1:8080/health 2>/dev/null; then
      return 0
    fi
    if [ "$(podman inspect -f '{{.State.Running}}' "$ctr" 2>/dev/null)" != true ]; then
      return 1
    fi
    sleep 0.5
  done
  return 1
}

# chat MODEL: the reply's body on stdout; fails unless the status is 200.
chat() {
  inns curl -sS --max-time 30 -o "$work/reply.json" -w '%{http_code}' \
    http://127.0.0.1:8080/v1/chat/completions -H 'content-type: application/json' \
    -d "{\"model\": \"$1\", \"messages\": [{\"role\": \"user\", \"content\": \"Hello, container\"}]}" \
    >"$work/status" || true
  cat "$work/reply.json" 2>/dev/null || true
  [ "$(cat "$work/status")" = 200 ]
}

# check_uid CONTAINER: its main process, read from the host's /proc, is wasmgate as 10001.
check_uid() {
  local pid uid gid comm
  pid=$(podman inspect -f '{{.State.Pid}}' "$1")
  uid=$(awk '/^Uid:/ { print $2, $3, $4, $5 }' "/proc/$pid/status")
  gid=$(awk '/^Gid:/ { print $2, $3, $4, $5 }' "/proc/$pid/status")
  comm=$(cat "/proc/$pid/comm")
  echo "  pid $pid ($comm): uid $uid, gid $gid"
  [ "$comm" = wasmgate ] || fail "the container's process is $comm, not wasmgate"
  [ "$uid" = "10001 10001 10001 10001" ] || fail "uid is $uid, not 10001"
  [ "$gid" = "10001 10001 10001 10001" ] || fail "gid is $gid, not 10001"
}

# stop_exits_0 CONTAINER: podman stop (SIGTERM) ends it with exit code 0, well before the kill.
stop_exits_0() {
  local t0 took code
  t0=$(now)
  podman stop -t 35 "$1" >/dev/null
  took=$(since "$t0")
  code=$(podman inspect -f '{{.State.ExitCode}}' "$1")
  podman logs "$1" >>"$all_output" 2>&1 || true
  echo "  stopped in ${took}s, exit code $code"
  [ "$code" = 0 ] || fail "exit code $code after SIGTERM (137: it had to be killed)"
}

check "serve, embedded default config, empty volume: /health and an echo chat on 8080"
podman run -d --name "$name-default" "${net[@]}" -v "$volume:/data" "$image" serve >/dev/null
if wait_healthy "$name-default"; then
  echo "  /health: $(inns curl -sS --max-time 5 http://127.0.0.1:8080/health)"
  if reply=$(chat echo/echo-1); then
    grep -q '"content"' <<<"$reply" || fail "no message content in the echo reply: $reply"
    echo "  echo reply: ${reply:0:160}"
  else
    fail "echo chat answered $(cat "$work/status"): $reply"
  fi
else
  podman logs "$name-default" 2>&1 | tail -20 >&2
  fail "/health did not answer 200"
fi
must

check "serve runs as uid 10001 (not root)"
check_uid "$name-default"

check "podman stop (SIGTERM) of the default-config gateway exits 0"
stop_exits_0 "$name-default"

check "echo \$KEY | podman run -i ... login openai stores the key in the volume"
out=$(printf '%s\n' "$key" |
  podman run --rm -i --network none -v "$volume:/data" "$image" login openai 2>&1) ||
  fail "login exited non-zero: $out"
echo "$out" >>"$all_output"
list=$(podman run --rm --network none -v "$volume:/data" "$image" login --list 2>&1) || true
echo "$list" >>"$all_output"
echo "  login --list: $list"
grep -qx openai <<<"$list" || fail "login --list does not show openai: $list"
perms=$(podman run --rm --network none -v "$volume:/data" --entrypoint /bin/sh "$image" -c \
  'stat -c "%a %u %n" /data /data/.config/wasmgate /data/.config/wasmgate/credentials.yaml' 2>&1) || true
echo "$perms" | sed 's/^/  /'
grep -q '^600 10001 /data/.config/wasmgate/credentials.yaml$' <<<"$perms" ||
  fail "the credentials file is not 0600 and owned by 10001"
grep -q '^700 10001 /data/.config/wasmgate$' <<<"$perms" ||
  fail "the credentials directory is not 0700 and owned by 10001"
must

check "serve with /data/config.yaml: an openai entry at a mock upstream gets the stored key"
cat >"$work/mock.py" <<'EOF'
# An OpenAI upstream on 127.0.0.1 that records each request's Authorization header.
import http.server, json, os, sys, time

port_file, record_file = sys.argv[1], sys.argv[2]

class Handler(http.server.BaseHTTPRequestHandler):
    def record(self, body):
        with open(record_file, "a") as f:
            f.write(json.dumps({"method": self.command, "path": self.path,
                                "authorization": self.headers.get("authorization"),
                                "model": body.get("model")}) + "\n")

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        self.record(body)
        if body.get("stream"):
            return self.stream(body.get("model"))
        reply = json.dumps({
            "id": "chatcmpl-mock", "object": "chat.completion", "created": 0,
            "model": body.get("model"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "from the mock upstream"}}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
        }).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    # Five words, 0.4 s apart, then the usage: long enough to be stopped in the middle of.
    def stream(self, model):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        def send(choices, usage=None):
            chunk = {"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0,
                     "model": model, "choices": choices}
            if usage:
                chunk["usage"] = usage
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            self.wfile.flush()
        for word in ["one ", "two ", "three ", "four ", "five"]:
            send([{"index": 0, "delta": {"content": word}, "finish_reason": None}])
            time.sleep(0.4)
        send([{"index": 0, "delta": {}, "finish_reason": "stop"}])
        send([], {"prompt_tokens": 13, "completion_tokens": 5, "total_tokens": 18})
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def do_GET(self):
        self.record({})
        self.send_response(404)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
EOF
: >"$work/upstream-requests.jsonl"
inns python3 "$work/mock.py" "$work/mock-port" "$work/upstream-requests.jsonl" &
mock_pid=$!
for _ in $(seq 1 50); do [ -s "$work/mock-port" ] && break; sleep 0.1; done
mock_port=$(cat "$work/mock-port" 2>/dev/null || true)
[ -n "$mock_port" ] || fail "the mock upstream did not start"
must
echo "  mock upstream on 127.0.0.1:$mock_port"
# No api_key: serve must take it from the file `login` wrote. The plugins the image carries.
cat >"$work/config.yaml" <<EOF
server: { host: 0.0.0.0, port: 8080 }
plugins: { dir: /usr/local/lib/wasmgate/plugins }
providers:
  echo: { plugin: echo, models: [echo-1] }
  openai:
    plugin: openai
    base_url: http://127.0.0.1:$mock_port/v1
    models: [gpt-4o-mini]
EOF
podman run --rm -i --network none -v "$volume:/data" --entrypoint /bin/sh "$image" \
  -c 'cat > /data/config.yaml' <"$work/config.yaml"
podman run -d --name "$name-login" "${net[@]}" -v "$volume:/data" "$image" serve >/dev/null
if wait_healthy "$name-login"; then
  if reply=$(chat openai/gpt-4o-mini); then
    echo "  openai reply: ${reply:0:160}"
    grep -q 'from the mock upstream' <<<"$reply" || fail "the reply did not come from the mock: $reply"
  else
    fail "openai chat answered $(cat "$work/status"): $reply"
  fi
  chat echo-1 >/dev/null || fail "echo chat answered $(cat "$work/status")"
  seen=$(python3 -c 'import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["method"] == "POST" and r["path"].endswith("/chat/completions"):
        print(r["authorization"])' "$work/upstream-requests.jsonl" | sort -u)
  if [ "$seen" = "Bearer $key" ]; then
    echo "  the upstream received Authorization: Bearer <the key given to login>"
  else
    fail "the upstream received Authorization '${seen//$key/<key>}', not the stored key"
  fi
else
  podman logs "$name-login" 2>&1 | tail -20 >&2
  fail "/health did not answer 200"
fi
must

check "serve with the config runs as uid 10001 (not root)"
check_uid "$name-login"

check "podman stop (SIGTERM) in the middle of a stream: the stream finishes, then exit 0"
inns curl -sS -N --max-time 30 http://127.0.0.1:8080/v1/chat/completions \
  -H 'content-type: application/json' -o "$work/stream.txt" \
  -d '{"model": "openai/gpt-4o-mini", "stream": true,
       "messages": [{"role": "user", "content": "Count"}]}' &
curl_pid=$!
for _ in $(seq 1 100); do grep -q '^data:' "$work/stream.txt" 2>/dev/null && break; sleep 0.1; done
if grep -q '^data:' "$work/stream.txt" 2>/dev/null; then
  stop_exits_0 "$name-login"
  wait "$curl_pid" || fail "the client's stream failed (curl exit $?)"
  words=$(python3 -c 'import json, sys
text = ""
for line in open(sys.argv[1]):
    if line.startswith("data: {"):
        for c in json.loads(line[6:]).get("choices", []):
            text += c.get("delta", {}).get("content") or ""
print(text)' "$work/stream.txt")
  echo "  the client received: '$words', then $(grep -c '^data: \[DONE\]' "$work/stream.txt") [DONE]"
  [ "$words" = "one two three four five" ] || fail "the stream was cut: '$words'"
  grep -q '^data: \[DONE\]' "$work/stream.txt" || fail "the stream did not end with [DONE]"
else
  kill "$curl_pid" 2>/dev/null || true
  fail "the stream did not start"
fi

check "the ledger in the volume has every request: echo, openai and the stream stopped mid-way"
usage=$(podman run --rm --network none -v "$volume:/data" "$image" usage --project default \
  --since 1d --by day 2>&1) || true
echo "$usage" >>"$all_output"
echo "$usage" | sed 's/^/  /'
# 11 + 13 input and 7 + 5 output tokens: the plain answer's usage and the stream's.
grep -Eq 'openai +gpt-4o-mini +24 +12 ' <<<"$usage" ||
  fail "the ledger has not both openai/gpt-4o-mini requests (24 input, 12 output tokens)"
grep -Eq 'echo +echo-1 ' <<<"$usage" || fail "the ledger has no echo/echo-1 record"

check "the provider key appears in nothing the image printed (login, serve logs, usage)"
if grep -qF "$key" "$all_output"; then
  fail "the key is in the output"
else
  echo "  $(wc -l <"$all_output") lines searched"
fi

finish
