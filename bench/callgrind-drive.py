#!/usr/bin/env python3
"""Sends N chat requests as gatebench's rows do, over one keep-alive connection (c=1).

callgrind-drive.py <host:port> <N> <whole|stream> <model>
"""
import http.client
import json
import sys

addr, n, mode, model = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
host, port = addr.split(":")
body = {"model": model, "messages": [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "lorem ipsum dolor sit amet " * 33}]}
if mode == "stream":
    body["stream"] = True
    body["stream_options"] = {"include_usage": True}
data = json.dumps(body, separators=(",", ":"))
headers = {"content-type": "application/json", "authorization": "Bearer sk-bench"}
connection = http.client.HTTPConnection(host, int(port))
for _ in range(n):
    connection.request("POST", "/v1/chat/completions", data, headers)
    response = connection.getresponse()
    answer = response.read()
    if response.status != 200:
        sys.exit(f"status {response.status}: {answer[:300]!r}")
