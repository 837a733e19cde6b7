"""Figures of the Responses API's WebSocket mode (docs/src/responses-websocket.md): the time a
turn takes on one socket against the same turn as a streamed `POST /v1/responses` (keep-alive
connection), and the gateway's resident memory per open idle socket.

Starts `wasmgate serve` (the binary given, on its embedded default config: the local `echo`
provider, so the figures are the gateway's own work, no upstream) on 127.0.0.1 in a temporary
directory, measures, and stops it. Bounded: TURNS turns each way, SESSIONS sockets, 120 s.

    target/sdk-clients/py/bin/python scripts/ws-figures.py target/debug/wasmgate [TURNS] [SESSIONS]
"""

import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import http.client
import urllib.request
from websockets.sync.client import connect

BODY = {"model": "echo/echo-1", "input": "Say hello to the socket, word by word."}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def socket_turns(url, turns):
    times = []
    with connect(url, open_timeout=10, close_timeout=5) as ws:
        for _ in range(turns + 1):
            start = time.perf_counter()
            ws.send(json.dumps({"type": "response.create", **BODY}))
            while True:
                event = json.loads(ws.recv(timeout=10))
                if event["type"] in ("response.completed", "error"):
                    break
            if event["type"] != "response.completed":
                raise RuntimeError(f"turn failed: {event}")
            times.append(time.perf_counter() - start)
    return times[1:]  # the first pays for warming up


def http_turns(port, turns):
    times = []
    client = http.client.HTTPConnection("127.0.0.1", port, timeout=10)  # kept alive
    body = json.dumps({**BODY, "stream": True})
    for _ in range(turns + 1):
        start = time.perf_counter()
        client.request("POST", "/v1/responses", body, {"content-type": "application/json"})
        response = client.getresponse()
        text = response.read().decode()
        if response.status != 200 or "response.completed" not in text:
            raise RuntimeError(f"no completed event: {response.status} {text[-300:]}")
        times.append(time.perf_counter() - start)
    client.close()
    return times[1:]


def health(base):
    with urllib.request.urlopen(f"{base}/health", timeout=2) as response:
        return json.loads(response.read())


def ms(values):
    return f"median {statistics.median(values) * 1000:.2f} ms, p90 {sorted(values)[int(len(values) * 0.9)] * 1000:.2f} ms"


def main():
    binary = os.path.abspath(sys.argv[1])
    turns = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    sessions = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    port = free_port()
    cwd = tempfile.mkdtemp(prefix="ws-figures-")
    gateway = subprocess.Popen([binary, "serve", "--host", "127.0.0.1", "--port", str(port)], cwd=cwd,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    signal.alarm(120)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                health(base)
                break
            except OSError:
                pass
            time.sleep(0.1)
        url = f"ws://127.0.0.1:{port}/v1/responses"
        # Alternate, so that the machine's other load falls on both alike.
        on_socket, over_http = [], []
        for _ in range(5):
            on_socket += socket_turns(url, turns // 5)
            over_http += http_turns(port, turns // 5)
        print(f"turn on the socket:      {ms(on_socket)} ({len(on_socket)} turns)")
        print(f"turn as a streamed POST: {ms(over_http)} ({len(over_http)} turns)")
        difference = statistics.median(on_socket) - statistics.median(over_http)
        print(f"socket minus HTTP:       {difference * 1000:+.2f} ms a turn (median)")
        time.sleep(0.5)
        before = rss_kib(gateway.pid)
        # One project each: the per-key bound (32) counts an open gateway's sockets per project.
        opened = [connect(url, open_timeout=10, additional_headers={"x-project-id": f"p{i}"})
                  for i in range(sessions)]
        time.sleep(1.0)
        counted = health(base)["websocket_sessions"]
        after = rss_kib(gateway.pid)
        print(f"open sockets per /health: {counted}")
        print(f"RSS {before} KiB -> {after} KiB with {sessions} idle sockets: "
              f"{(after - before) / sessions:.1f} KiB a socket")
        for ws in opened:
            ws.close()
    finally:
        gateway.send_signal(signal.SIGTERM)
        try:
            gateway.wait(timeout=15)
        except subprocess.TimeoutExpired:
            gateway.kill()


if __name__ == "__main__":
    main()
