"""Writes tests/cases/*: run `python3 tests/make_cases.py` after editing. The upstream replies
follow the shapes of AWS's Bedrock API reference (Converse, ConverseStream, InvokeModel with
Titan Text Embeddings, common errors); streamed bodies are binary
`application/vnd.amazon.eventstream` messages written by `eventstream()` below, with real CRC32s
(https://docs.aws.amazon.com/lexv2/latest/dg/event-stream-encoding.html)."""
import json, os, shutil, struct, zlib

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "cases")
MODEL = "anthropic.claude-3-5-sonnet-20240620-v1:0"
BASE = "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0"
CONFIG = {"api_key": None, "options": {"region": "us-east-1", "access_key_id": "AKIDEXAMPLE",
                                       "secret_access_key": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}}
HEADERS = {"content-type": "application/json"}
REQUEST_ID = "5d3f1b2a-8c4e-4f6a-9b7d-2e1c0a9f8e7d"
ID = "chatcmpl-" + REQUEST_ID
ANY = "<any>"

def write(name, files):
    d = os.path.join(CASES, name)
    os.makedirs(d, exist_ok=True)
    for fname, content in files.items():
        mode = "wb" if isinstance(content, bytes) else "w"
        with open(os.path.join(d, fname), mode) as f:
            if isinstance(content, (str, bytes)):
                f.write(content)
            else:
                json.dump(content, f, indent=2, ensure_ascii=False)
                f.write("\n")

def chat(body, stream=False, config=CONFIG):
    r = {"operation": "chat-completions", "stream": stream, "config": config,
         "body": dict({"model": MODEL}, **body)}
    if stream:
        r["body"]["stream"] = True
        r["body"]["stream_options"] = {"include_usage": True}
    return r

def upstream(body, action="converse", headers=HEADERS, base=BASE):
    return {"method": "POST", "url": f"{base}/{action}", "headers": headers, "body": body}

def user(text):
    return {"role": "user", "content": [{"text": text}]}

def reply(body, status=200, headers=None):
    h = {"content-type": "application/json", "x-amzn-requestid": REQUEST_ID}
    h.update(headers or {})
    return {"status": status, "headers": h, "body": body}

def converse(content, stop="end_turn", usage=None):
    u = usage or {"inputTokens": 10, "outputTokens": 12, "totalTokens": 22}
    return {"output": {"message": {"role": "assistant", "content": content}},
            "stopReason": stop, "usage": u, "metrics": {"latencyMs": 812}}

def completion(msg, finish, usage):
    prompt, out, cached = usage
    return {"id": ID, "object": "chat.completion", "created": ANY, "model": MODEL,
            "choices": [{"index": 0, "message": msg, "logprobs": None, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out,
                      "prompt_tokens_details": {"cached_tokens": cached}}}

# The testkit replays streams with a `content-type` header only: chunk ids fall back to this.
STREAM_ID = "chatcmpl-bedrock"

def chunk(delta, finish=None):
    return {"id": STREAM_ID, "object": "chat.completion.chunk", "created": ANY, "model": MODEL,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            "usage": None}

def usage_chunk(prompt, out, cached=0):
    return {"id": STREAM_ID, "object": "chat.completion.chunk", "created": ANY, "model": MODEL, "choices": [],
            "usage": {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out,
                      "prompt_tokens_details": {"cached_tokens": cached}}}

def message(headers, payload):
    """One event-stream message with string headers (value type 7)."""
    block = b""
    for name, value in headers:
        n, v = name.encode(), value.encode()
        block += struct.pack(">B", len(n)) + n + b"\x07" + struct.pack(">H", len(v)) + v
    total = 16 + len(block) + len(payload)
    prelude = struct.pack(">II", total, len(block))
    out = prelude + struct.pack(">I", zlib.crc32(prelude)) + block + payload
    return out + struct.pack(">I", zlib.crc32(out))

def event(kind, payload):
    return message([(":event-type", kind), (":content-type", "application/json"),
                    (":message-type", "event")], json.dumps(payload, separators=(",", ":")).encode())

def exception(kind, text):
    return message([(":exception-type", kind), (":content-type", "application/json"),
                    (":message-type", "exception")], json.dumps({"message": text}).encode())

def eventstream(events):
    return b"".join(event(k, p) for k, p in events)

shutil.rmtree(CASES, ignore_errors=True)

# 1. Plain chat, credentials from api_key `ACCESS_KEY_ID:SECRET_ACCESS_KEY` and a session token.
write("plain_chat", {
    "request.json": chat({"messages": [{"role": "user", "content": "Hello, Claude"}]},
                         config={"api_key": "AKIDEXAMPLE:wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                                 "options": {"region": "us-east-1", "session_token": "FQoGZXIvYXdzEXAMPLE"}}),
    "expected_upstream.json": upstream({"messages": [user("Hello, Claude")]},
                                       headers=dict(HEADERS, **{"x-amz-security-token": "FQoGZXIvYXdzEXAMPLE"})),
    "upstream_response.json": reply(converse([{"text": "Hi! My name is Claude."}])),
    "expected.json": {"body": completion({"role": "assistant", "content": "Hi! My name is Claude."}, "stop", (10, 12, 0)),
                      "usage": {"input_tokens": 10, "output_tokens": 12}},
})

# 2. System and developer prompts become `system`; sampling parameters go to `inferenceConfig`;
#    a custom base_url; stop_sequence is `stop`.
write("system_and_inference_config", {
    "request.json": chat({"messages": [
        {"role": "system", "content": "You are a seasoned data scientist."},
        {"role": "developer", "content": [{"type": "text", "text": "Answer briefly."}]},
        {"role": "user", "content": "What is a p-value?"}],
        "max_tokens": 512, "temperature": 0.5, "top_p": 0.9, "stop": ["\n\nHuman:"]},
        config={"base_url": "http://127.0.0.1:8080/bedrock/", "api_key": None,
                "options": CONFIG["options"]}),
    "expected_upstream.json": upstream({
        "messages": [user("What is a p-value?")],
        "system": [{"text": "You are a seasoned data scientist."}, {"text": "Answer briefly."}],
        "inferenceConfig": {"maxTokens": 512, "temperature": 0.5, "topP": 0.9, "stopSequences": ["\n\nHuman:"]}},
        base="http://127.0.0.1:8080/bedrock/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0"),
    "upstream_response.json": reply(converse([{"text": "The probability of data at least this extreme"}], stop="stop_sequence")),
    "expected.json": {"body": completion({"role": "assistant", "content": "The probability of data at least this extreme"}, "stop", (10, 12, 0)),
                      "usage": {"input_tokens": 10, "output_tokens": 12}},
})

WEATHER = {"type": "object", "properties": {"location": {"type": "string", "description": "The city and state"}},
           "required": ["location"]}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather",
                                            "parameters": WEATHER}}]
SPEC = [{"toolSpec": {"name": "get_weather", "description": "Get the current weather", "inputSchema": {"json": WEATHER}}}]

# 3. A tool call and its result go back as toolUse / toolResult blocks; a named tool_choice is
#    `tool`; the answer calls the tool again (stop reason tool_use → tool_calls).
write("tool_call_and_result", {
    "request.json": chat({"messages": [
        {"role": "user", "content": "What's the weather in Paris and in Rome?"},
        {"role": "assistant", "content": "Let me check.", "tool_calls": [
            {"id": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"location\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "content": "18°C, sunny"}],
        "tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "get_weather"}}}),
    "expected_upstream.json": upstream({
        "messages": [user("What's the weather in Paris and in Rome?"),
                     {"role": "assistant", "content": [
                         {"text": "Let me check."},
                         {"toolUse": {"toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "name": "get_weather",
                                      "input": {"location": "Paris"}}}]},
                     {"role": "user", "content": [
                         {"toolResult": {"toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q",
                                         "content": [{"text": "18°C, sunny"}]}}]}],
        "toolConfig": {"tools": SPEC, "toolChoice": {"tool": {"name": "get_weather"}}}}),
    "upstream_response.json": reply(converse([
        {"toolUse": {"toolUseId": "tooluse_Qm3x9EXAMPLE", "name": "get_weather", "input": {"location": "Rome", "unit": "c"}}}],
        stop="tool_use", usage={"inputTokens": 420, "outputTokens": 55, "totalTokens": 475})),
    "expected.json": {"body": completion({"role": "assistant", "content": None, "tool_calls": [
        {"id": "tooluse_Qm3x9EXAMPLE", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"location\":\"Rome\",\"unit\":\"c\"}"}}]},
        "tool_calls", (420, 55, 0)), "usage": {"input_tokens": 420, "output_tokens": 55}},
})

# 3b. Converse has no `none` tool choice: without tool blocks in the conversation, the tools are
#     left out.
write("tool_choice_none", {
    "request.json": chat({"messages": [{"role": "user", "content": "Just say hi."}], "tools": TOOLS,
                          "tool_choice": "none"}),
    "expected_upstream.json": upstream({"messages": [user("Just say hi.")]}),
    "upstream_response.json": reply(converse([{"text": "Hi!"}])),
    "expected.json": {"body": completion({"role": "assistant", "content": "Hi!"}, "stop", (10, 12, 0)),
                      "usage": {"input_tokens": 10, "output_tokens": 12}},
})

# 4. An image as a base64 data URL becomes an image block with its bytes; max_tokens hits.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
write("image_input", {
    "request.json": chat({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "What is in this image?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + PNG}}]}], "max_completion_tokens": 5}),
    "expected_upstream.json": upstream({"messages": [{"role": "user", "content": [
        {"text": "What is in this image?"}, {"image": {"format": "png", "source": {"bytes": PNG}}}]}],
        "inferenceConfig": {"maxTokens": 5}}),
    "upstream_response.json": reply(converse([{"text": "A single"}], stop="max_tokens")),
    "expected.json": {"body": completion({"role": "assistant", "content": "A single"}, "length", (10, 12, 0)),
                      "usage": {"input_tokens": 10, "output_tokens": 12}},
})

# 5. Converse takes image bytes only: an https image URL is refused before any request.
write("reject_image_url", {
    "request.json": chat({"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}]}]}),
    "expected.json": {"error": {"kind": "invalid-request",
                                "message": "Bedrock's Converse API does not accept image URLs: send the image as a base64 data: URL",
                                "param": "messages[0].content[0]"}},
})

# 6. Usage with prompt-cache reads and writes: input counts them all.
write("usage_with_cache_tokens", {
    "request.json": chat({"messages": [{"role": "user", "content": "Summarise the document."}]}),
    "expected_upstream.json": upstream({"messages": [user("Summarise the document.")]}),
    "upstream_response.json": reply(converse([{"text": "It is about caching."}], usage={
        "inputTokens": 20, "outputTokens": 7, "totalTokens": 1527,
        "cacheReadInputTokens": 1200, "cacheWriteInputTokens": 300})),
    "expected.json": {"body": completion({"role": "assistant", "content": "It is about caching."}, "stop", (1520, 7, 1200)),
                      "usage": {"input_tokens": 1520, "output_tokens": 7, "cached_input_tokens": 1200,
                                "cache_write_tokens": 300}},
})

# 7-9. Errors: Bedrock's `{"message"}` body, typed by `x-amzn-errortype`.
for name, status, etype, text, kind in [
    ("error_throttling_429", 429, "ThrottlingException", "Too many requests, please wait before trying again.", "rate-limited"),
    ("error_validation_400", 400, "ValidationException", "The provided model identifier is invalid.", "invalid-request"),
    ("error_access_denied_403", 403, "AccessDeniedException",
     "You don't have access to the model with the specified model ID.", "permission-denied"),
]:
    write(name, {
        "request.json": chat({"messages": [{"role": "user", "content": "Hello"}]}),
        "expected_upstream.json": upstream({"messages": [user("Hello")]}),
        "upstream_response.json": reply({"message": text}, status=status,
                                        headers={"x-amzn-errortype": f"{etype}:http://internal.amazon.com/coral/com.amazon.bedrock/"}),
        "expected.json": {"error": {"kind": kind, "message": text, "code": etype, "upstream_status": status}},
    })

# 10. A body that is not Bedrock's: the status decides.
write("error_not_json_502", {
    "request.json": chat({"messages": [{"role": "user", "content": "Hello"}]}),
    "expected_upstream.json": upstream({"messages": [user("Hello")]}),
    "upstream_response.json": reply("<html>Bad Gateway</html>", status=502, headers={"content-type": "text/html"}),
    "expected.json": {"error": {"kind": "upstream", "message": "upstream returned HTTP 502: <html>Bad Gateway</html>",
                                "upstream_status": 502}},
})

STREAM_TEXT = [
    ("messageStart", {"p": "abcdefghijk", "role": "assistant"}),
    ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hello"}, "p": "abcdef"}),
    ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": " there! é"}, "p": "ab"}),
    ("contentBlockStop", {"contentBlockIndex": 0, "p": "abcdefghijklmn"}),
    ("messageStop", {"p": "abcd", "stopReason": "end_turn"}),
    ("metadata", {"metrics": {"latencyMs": 402}, "p": "abc", "usage": {"inputTokens": 12, "outputTokens": 4, "totalTokens": 16}}),
]
TEXT_EVENTS = [chunk({"role": "assistant", "content": ""}), chunk({"content": "Hello"}),
               chunk({"content": " there! é"}), chunk({}, "stop"), usage_chunk(12, 4)]

# 11. A streamed text answer.
write("stream_text", {
    "request.json": chat({"messages": [{"role": "user", "content": "Hi"}]}, stream=True),
    "expected_upstream.json": upstream({"messages": [user("Hi")]}, action="converse-stream"),
    "upstream_stream.txt": eventstream(STREAM_TEXT),
    "expected.json": {"events": TEXT_EVENTS, "usage": {"input_tokens": 12, "output_tokens": 4}},
})

# 12. A streamed tool call after some text, with cache tokens in the usage; tool_choice auto.
write("stream_tool_use", {
    "request.json": chat({"messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": TOOLS,
                          "tool_choice": "auto"}, stream=True),
    "expected_upstream.json": upstream({"messages": [user("Weather in Paris?")],
                                        "toolConfig": {"tools": SPEC, "toolChoice": {"auto": {}}}},
                                       action="converse-stream"),
    "upstream_stream.txt": eventstream([
        ("messageStart", {"role": "assistant"}),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Let me check."}}),
        ("contentBlockStop", {"contentBlockIndex": 0}),
        ("contentBlockStart", {"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "tooluse_abc123", "name": "get_weather"}}}),
        ("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{\"location\":"}}}),
        ("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"toolUse": {"input": " \"Paris\"}"}}}),
        ("contentBlockStop", {"contentBlockIndex": 1}),
        ("messageStop", {"stopReason": "tool_use"}),
        ("metadata", {"usage": {"inputTokens": 300, "outputTokens": 40, "totalTokens": 440,
                                "cacheReadInputTokens": 100, "cacheWriteInputTokens": 0}, "metrics": {"latencyMs": 900}}),
    ]),
    "expected.json": {"events": [
        chunk({"role": "assistant", "content": ""}), chunk({"content": "Let me check."}),
        chunk({"tool_calls": [{"index": 0, "id": "tooluse_abc123", "type": "function",
                               "function": {"name": "get_weather", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{\"location\":"}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": " \"Paris\"}"}}]}),
        chunk({}, "tool_calls"), usage_chunk(400, 40, 100)],
        "usage": {"input_tokens": 400, "output_tokens": 40, "cached_input_tokens": 100}},
})

# 13. A corrupted byte in the second message's payload: its CRC fails after the role chunk.
corrupt = bytearray(eventstream(STREAM_TEXT))
first = struct.unpack(">I", corrupt[:4])[0]
second = struct.unpack(">I", corrupt[first:first + 4])[0]
corrupt[first + second - 10] ^= 0x20
write("stream_corrupt_crc", {
    "request.json": chat({"messages": [{"role": "user", "content": "Hi"}]}, stream=True),
    "expected_upstream.json": upstream({"messages": [user("Hi")]}, action="converse-stream"),
    "upstream_stream.txt": bytes(corrupt),
    "expected.json": {"events": [chunk({"role": "assistant", "content": ""})],
                      "error": {"kind": "upstream", "message": "Bedrock's event stream is corrupt: message checksum mismatch"}},
})

# 14. An exception message in the stream ends it with a typed error, after the chunks before it.
write("stream_exception", {
    "request.json": chat({"messages": [{"role": "user", "content": "Hi"}]}, stream=True),
    "expected_upstream.json": upstream({"messages": [user("Hi")]}, action="converse-stream"),
    "upstream_stream.txt": eventstream(STREAM_TEXT[:2]) + exception("throttlingException", "Too many tokens, please wait before trying again."),
    "expected.json": {"events": TEXT_EVENTS[:2],
                      "error": {"kind": "rate-limited", "message": "Too many tokens, please wait before trying again.",
                                "code": "throttlingException"}},
})

# 15. A stream that ends before messageStop.
write("stream_cut_short", {
    "request.json": chat({"messages": [{"role": "user", "content": "Hi"}]}, stream=True),
    "expected_upstream.json": upstream({"messages": [user("Hi")]}, action="converse-stream"),
    "upstream_stream.txt": eventstream(STREAM_TEXT[:3]),
    "expected.json": {"events": TEXT_EVENTS[:3],
                      "error": {"kind": "upstream", "message": "Bedrock's stream ended before the message was complete"}},
})

# 16. Titan embeddings: one text per InvokeModel request.
TITAN = "amazon.titan-embed-text-v2:0"
TITAN_URL = "https://bedrock-runtime.us-east-1.amazonaws.com/model/amazon.titan-embed-text-v2%3A0/invoke"
write("titan_embedding", {
    "request.json": {"operation": "embeddings", "config": CONFIG,
                     "body": {"model": TITAN, "input": "The food was delicious", "dimensions": 256}},
    "expected_upstream.json": {"method": "POST", "url": TITAN_URL,
                               "headers": {"content-type": "application/json", "accept": "application/json"},
                               "body": {"inputText": "The food was delicious", "dimensions": 256}},
    "upstream_response.json": reply({"embedding": [0.013168523, -0.0234375, 0.5], "inputTextTokenCount": 5,
                                     "embeddingsByType": {"float": [0.013168523, -0.0234375, 0.5]}}),
    "expected.json": {"body": {"object": "list", "data": [{"object": "embedding", "index": 0,
                                                           "embedding": [0.013168523, -0.0234375, 0.5]}],
                               "model": TITAN, "usage": {"prompt_tokens": 5, "total_tokens": 5}},
                      "usage": {"input_tokens": 5}},
})

# 17. Several texts cannot go in one Titan request.
write("titan_embedding_rejects_lists", {
    "request.json": {"operation": "embeddings", "config": CONFIG,
                     "body": {"model": TITAN, "input": ["one", "two"]}},
    "expected.json": {"error": {"kind": "invalid-request",
                                "message": "Amazon Titan embeds one text per request: send `input` as a single string",
                                "param": "input"}},
})
