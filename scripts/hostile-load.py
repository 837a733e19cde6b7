#!/usr/bin/env python3
"""Hostile request bodies against a running wasmgate, and the peak RSS it reached.

Starts the binary given (default: target/debug/wasmgate) on 127.0.0.1 with a port it picks,
sends a bounded mix of hostile bodies from CONCURRENCY threads (large bodies near
server.max_body_bytes, dense arrays that build big JSON trees, deep nesting, huge strings and
field names, on /v1 and /usage), and prints the status counts, the largest error body, and the
process's RSS before and at its peak (VmHWM). Only 127.0.0.1; every loop is bounded.

    python3 scripts/hostile-load.py [--binary PATH] [--rounds N] [--concurrency N]
"""

import argparse
import collections
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

MIB = 1024 * 1024
MAX_BODY = 32 * MIB  # the default server.max_body_bytes

CONFIG = """
server: {{ host: 127.0.0.1, port: 0 }}
ledger: {{ url: "sqlite://{ledger}" }}
auth: {{ required: false }}
providers:
  echo:
    plugin: echo
    models: [echo-1]
{extra}
"""


def bodies(size):
    """(name, path, body) of each hostile request, each at most `size` bytes."""
    n = size // 2 - 64
    head = b'{"model":"echo-1","messages":'
    yield "dense-array", "/v1/chat/completions", head + b"[" + b"0," * (n - 1) + b"0]}"
    yield "empty-objects", "/v1/chat/completions", head + b"[" + b"{}," * (size // 3 - 64) + b"{}]}"
    yield "number-content", "/v1/chat/completions", (
        head + b'[{"role":"user","content":[' + b"1," * (n - 64) + b"1]}]}"
    )
    yield "huge-string", "/v1/chat/completions", (
        head + b'[{"role":"user","content":"' + b"a" * (size - 128) + b'"}]}'
    )
    yield "deep-nesting", "/v1/chat/completions", b'{"model":"echo-1","x":' + b"[" * (size // 4) + b"]" * (size // 4) + b"}"
    yield "huge-field-name", "/usage/total", b'{"' + b"f" * (size - 16) + b'":1}'
    yield "huge-model", "/v1/chat/completions", (
        b'{"model":"' + b"m" * (size - 128) + b'","messages":[{"role":"user","content":"x"}]}'
    )
    yield "dense-embeddings", "/v1/embeddings", b'{"model":"echo-1","input":[' + b"[1]," * (size // 4 - 64) + b"[1]]}"


def send(port, path, body, key, timeout=120):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        try:
            conn.request("POST", path, body=body, headers={
                "content-type": "application/json", "authorization": f"Bearer {key}"})
        except (BrokenPipeError, ConnectionResetError):
            pass  # answered (413, 503) before the whole body was read: the answer may be there
        response = conn.getresponse()
        data = response.read()
        return response.status, len(data)
    except (OSError, http.client.HTTPException) as e:
        return f"error:{type(e).__name__}", 0
    finally:
        conn.close()


def status_of(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(value.split()[0]) // 1024  # MiB
    return fields


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default="target/debug/wasmgate")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--size", type=int, default=MAX_BODY - 1024)
    parser.add_argument("--config-extra", default="", help="YAML appended to the config")
    parser.add_argument("--only", default="", help="comma-separated case names")
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="wasmgate-hostile-")
    config = os.path.join(work, "config.yaml")
    with open(config, "w") as f:
        f.write(CONFIG.format(extra=args.config_extra, ledger=os.path.join(work, "ledger.db")))
    # A key, so that /usage/* reads the hostile bodies instead of refusing them unread.
    key = subprocess.run(
        [os.path.abspath(args.binary), "keys", "create", "--project", "load", "--config", config],
        cwd=work, capture_output=True, text=True, check=True,
    ).stdout.strip()
    log = open(os.path.join(work, "stderr.log"), "w+")
    child = subprocess.Popen(
        [os.path.abspath(args.binary), "serve", "--config", config, "--log-level", "warn,wasmgate=info"],
        cwd=work, stdout=subprocess.DEVNULL, stderr=log,
    )
    try:
        port = None
        for _ in range(600):  # up to 60 s to start
            log.seek(0)
            found = re.search(r"listening on http://[0-9.]+:(\d+)", log.read())
            if found:
                port = int(found.group(1))
                break
            if child.poll() is not None:
                sys.exit(f"wasmgate exited: {child.returncode}")
            time.sleep(0.1)
        if port is None:
            sys.exit("wasmgate did not start")
        # One ordinary request, so the plugin is instantiated before the baseline.
        ok = send(port, "/v1/chat/completions",
                  json.dumps({"model": "echo-1", "messages": [{"role": "user", "content": "hi"}]}).encode(), key)
        time.sleep(0.5)
        before = status_of(child.pid)["VmRSS"]

        only = set(filter(None, args.only.split(",")))
        cases = [c for c in bodies(args.size) if not only or c[0] in only]
        results = collections.Counter()
        largest = collections.defaultdict(int)
        lock = threading.Lock()
        work_items = [(name, path, body) for _ in range(args.rounds) for (name, path, body) in cases]
        next_item = iter(range(len(work_items)))

        def worker():
            while True:
                with lock:
                    i = next(next_item, None)
                if i is None:
                    return
                name, path, body = work_items[i]
                status, size = send(port, path, body, key)
                with lock:
                    results[(name, status)] += 1
                    largest[name] = max(largest[name], size)

        started = time.time()
        threads = [threading.Thread(target=worker) for _ in range(args.concurrency)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=600)
        elapsed = time.time() - started
        time.sleep(0.5)
        after = status_of(child.pid)
        log.seek(0, os.SEEK_END)
        longest_line = 0
        log.seek(0)
        for line in log:
            longest_line = max(longest_line, len(line))
        print(f"baseline request: {ok}")
        print(f"{len(work_items)} hostile requests, {args.concurrency} at a time, {elapsed:.1f} s")
        for (name, status), count in sorted(results.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
            print(f"  {name:18} {status}: {count}  (largest response {largest[name]} bytes)")
        print(f"longest log line: {longest_line} bytes")
        print(f"RSS before: {before} MiB, after: {after['VmRSS']} MiB, peak (VmHWM): {after['VmHWM']} MiB")
    finally:
        child.terminate()
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        log.close()


if __name__ == "__main__":
    main()
