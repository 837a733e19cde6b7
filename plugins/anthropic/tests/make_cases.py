"""Writes tests/cases/*: run `python3 tests/make_cases.py` after editing. The upstream replies
follow the examples in Anthropic's API reference (https://docs.anthropic.com/en/api/messages,
https://docs.anthropic.com/en/docs/build-with-claude/streaming)."""
import json, os, shutil

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "cases")
URL = "https://api.anthropic.com/v1/messages"
HEADERS = {"x-api-key": "test-key", "anthropic-version": "2023-06-01", "content-type": "application/json"}
MODEL = "claude-sonnet-4-20250514"
ANY = "<any>"

def write(name, files):
    d = os.path.join(CASES, name)
    os.makedirs(d, exist_ok=True)
    for fname, content in files.items():
        with open(os.path.join(d, fname), "w") as f:
            if isinstance(content, str):
                f.write(content)
            else:
                json.dump(content, f, indent=2, ensure_ascii=False)
                f.write("\n")

def chat(body, stream=False, config=None):
    r = {"operation": "chat-completions", "stream": stream, "body": dict({"model": MODEL}, **body)}
    if stream:
        r["body"]["stream"] = True
        r["body"]["stream_options"] = {"include_usage": True}
    if config:
        r["config"] = config
    return r

def upstream(body, headers=HEADERS, url=URL):
    return {"method": "POST", "url": url, "headers": headers, "body": dict({"model": MODEL}, **body)}

def reply(body, status=200):
    return {"status": status, "headers": {"content-type": "application/json"}, "body": body}

def message(content, stop_reason="end_turn", usage=None, id="msg_013Zva2CMHLNnXjNJJKqJ2EF"):
    return {"id": id, "type": "message", "role": "assistant", "model": MODEL, "content": content,
            "stop_reason": stop_reason, "stop_sequence": None,
            "usage": usage or {"input_tokens": 2095, "output_tokens": 503}}

def completion(msg, finish, usage, id="msg_013Zva2CMHLNnXjNJJKqJ2EF"):
    prompt, completion_tokens, cached = usage
    return {"id": id, "object": "chat.completion", "created": ANY, "model": MODEL,
            "choices": [{"index": 0, "message": msg, "logprobs": None, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion_tokens,
                      "total_tokens": prompt + completion_tokens,
                      "prompt_tokens_details": {"cached_tokens": cached}}}

def sse(events):
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)

def chunk(delta, finish=None, id="msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY"):
    return {"id": id, "object": "chat.completion.chunk", "created": ANY, "model": MODEL,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            "usage": None}

def usage_chunk(prompt, out, cached=0, id="msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY"):
    return {"id": id, "object": "chat.completion.chunk", "created": ANY, "model": MODEL, "choices": [],
            "usage": {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out,
                      "prompt_tokens_details": {"cached_tokens": cached}}}

shutil.rmtree(CASES, ignore_errors=True)

# 1. Plain chat: a lone user string stays a string; max_tokens defaults to 4096.
write("plain_chat", {
    "request.json": chat({"messages": [{"role": "user", "content": "Hello, Claude"}]}),
    "expected_upstream.json": upstream({"max_tokens": 4096, "messages": [{"role": "user", "content": "Hello, Claude"}]}),
    "upstream_response.json": reply(message([{"type": "text", "text": "Hi! My name is Claude."}],
                                            usage={"input_tokens": 10, "output_tokens": 12})),
    "expected.json": {"body": completion({"role": "assistant", "content": "Hi! My name is Claude."}, "stop", (10, 12, 0)),
                      "usage": {"input_tokens": 10, "output_tokens": 12}},
})

# 2. System and developer prompts join the top-level `system`; sampling parameters pass.
write("system_prompt", {
    "request.json": chat({"messages": [
        {"role": "system", "content": "You are a seasoned data scientist at a Fortune 500 company."},
        {"role": "developer", "content": [{"type": "text", "text": "Answer in one sentence."}]},
        {"role": "user", "content": "Analyze this dataset for anomalies."}],
        "temperature": 0.5, "top_p": 0.9, "user": "user-123"}),
    "expected_upstream.json": upstream({"max_tokens": 4096,
        "system": "You are a seasoned data scientist at a Fortune 500 company.\n\nAnswer in one sentence.",
        "messages": [{"role": "user", "content": "Analyze this dataset for anomalies."}],
        "temperature": 0.5, "top_p": 0.9, "metadata": {"user_id": "user-123"}}),
    "upstream_response.json": reply(message([{"type": "text", "text": "The dataset shows a spike on day 3."}],
                                            usage={"input_tokens": 40, "output_tokens": 11})),
    "expected.json": {"body": completion({"role": "assistant", "content": "The dataset shows a spike on day 3."}, "stop", (40, 11, 0)),
                      "usage": {"input_tokens": 40, "output_tokens": 11}},
})

# 3. Multi-turn with a tool call and two tool results (merged into one user turn, followed by
#    the user's next words), tools and a named tool_choice with parallel calls off.
weather_tool = {"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a given location",
    "parameters": {"type": "object", "properties": {"location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"}}, "required": ["location"]}}}
time_tool = {"type": "function", "function": {"name": "get_time"}}
write("tool_call_and_result", {
    "request.json": chat({"messages": [
        {"role": "user", "content": "What's the weather and time in San Francisco?"},
        {"role": "assistant", "content": "I'll check both.", "tool_calls": [
            {"id": "toolu_01A09q90qw90lq917835lq9", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\": \"San Francisco, CA\"}"}},
            {"id": "toolu_02B", "type": "function", "function": {"name": "get_time", "arguments": ""}}]},
        {"role": "tool", "tool_call_id": "toolu_01A09q90qw90lq917835lq9", "content": "15 degrees"},
        {"role": "tool", "tool_call_id": "toolu_02B", "content": [{"type": "text", "text": "10:00"}]},
        {"role": "user", "content": "Also, should I bring an umbrella?"}],
        "tools": [weather_tool, time_tool], "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        "parallel_tool_calls": False}),
    "expected_upstream.json": upstream({"max_tokens": 4096, "messages": [
        {"role": "user", "content": "What's the weather and time in San Francisco?"},
        {"role": "assistant", "content": [
            {"type": "text", "text": "I'll check both."},
            {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather", "input": {"location": "San Francisco, CA"}},
            {"type": "tool_use", "id": "toolu_02B", "name": "get_time", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01A09q90qw90lq917835lq9", "content": "15 degrees"},
            {"type": "tool_result", "tool_use_id": "toolu_02B", "content": "10:00"},
            {"type": "text", "text": "Also, should I bring an umbrella?"}]}],
        "tools": [
            {"name": "get_weather", "description": "Get the current weather in a given location", "input_schema": weather_tool["function"]["parameters"]},
            {"name": "get_time", "input_schema": {"type": "object", "properties": {}}}],
        "tool_choice": {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True}}),
    "upstream_response.json": reply(message([
        {"type": "text", "text": "<thinking>I need to call the get_weather function</thinking>"},
        {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather", "input": {"location": "San Francisco, CA", "unit": "celsius"}}],
        stop_reason="tool_use", usage={"input_tokens": 500, "output_tokens": 60})),
    "expected.json": {"body": completion({"role": "assistant", "content": "<thinking>I need to call the get_weather function</thinking>",
        "tool_calls": [{"id": "toolu_01A09q90qw90lq917835lq9", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\":\"San Francisco, CA\",\"unit\":\"celsius\"}"}}]},
        "tool_calls", (500, 60, 0)), "usage": {"input_tokens": 500, "output_tokens": 60}},
})

# 4. Images: a base64 data URL and an https URL; tool_choice required -> any.
write("image_input", {
    "request.json": chat({"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQSkZJRg=="}},
        {"type": "image_url", "image_url": {"url": "https://upload.wikimedia.org/wikipedia/commons/a/a7/Camponotus_flavomarginatus_ant.jpg", "detail": "high"}},
        {"type": "text", "text": "Compare these images."}]}],
        "tools": [time_tool], "tool_choice": "required"}),
    "expected_upstream.json": upstream({"max_tokens": 4096, "messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4AAQSkZJRg=="}},
        {"type": "image", "source": {"type": "url", "url": "https://upload.wikimedia.org/wikipedia/commons/a/a7/Camponotus_flavomarginatus_ant.jpg"}},
        {"type": "text", "text": "Compare these images."}]}],
        "tools": [{"name": "get_time", "input_schema": {"type": "object", "properties": {}}}],
        "tool_choice": {"type": "any"}}),
    "upstream_response.json": reply(message([{"type": "text", "text": "Both show ants."}], usage={"input_tokens": 1600, "output_tokens": 5})),
    "expected.json": {"body": completion({"role": "assistant", "content": "Both show ants."}, "stop", (1600, 5, 0)),
                      "usage": {"input_tokens": 1600, "output_tokens": 5}},
})

# 5. stop -> stop_sequences, max_completion_tokens wins over max_tokens, and a max_tokens stop
#    reason is `length`.
write("stop_and_max_tokens", {
    "request.json": chat({"messages": [{"role": "user", "content": "Count to ten."}], "stop": "7", "max_tokens": 50, "max_completion_tokens": 20}),
    "expected_upstream.json": upstream({"max_tokens": 20, "messages": [{"role": "user", "content": "Count to ten."}], "stop_sequences": ["7"]}),
    "upstream_response.json": reply(message([{"type": "text", "text": "1, 2, 3, 4,"}], stop_reason="max_tokens", usage={"input_tokens": 12, "output_tokens": 20})),
    "expected.json": {"body": completion({"role": "assistant", "content": "1, 2, 3, 4,"}, "length", (12, 20, 0)),
                      "usage": {"input_tokens": 12, "output_tokens": 20}},
})

# 6. The default max_tokens comes from the options, with the version and beta headers.
write("options_default_max_tokens", {
    "request.json": chat({"messages": [{"role": "user", "content": "Hi"}], "stop": ["\n\nHuman:", "END"]},
        config={"base_url": "http://127.0.0.1:8080/v1/", "api_key": "sk-ant-test",
                "options": {"default_max_tokens": 1024, "version": "2023-01-01", "beta": ["prompt-caching-2024-07-31", "pdfs-2024-09-25"]}}),
    "expected_upstream.json": upstream({"max_tokens": 1024, "messages": [{"role": "user", "content": "Hi"}], "stop_sequences": ["\n\nHuman:", "END"]},
        url="http://127.0.0.1:8080/v1/messages",
        headers={"x-api-key": "sk-ant-test", "anthropic-version": "2023-01-01", "anthropic-beta": "prompt-caching-2024-07-31,pdfs-2024-09-25"}),
    "upstream_response.json": reply(message([{"type": "text", "text": "Hello"}], stop_reason="stop_sequence", usage={"input_tokens": 8, "output_tokens": 1})),
    "expected.json": {"body": completion({"role": "assistant", "content": "Hello"}, "stop", (8, 1, 0)),
                      "usage": {"input_tokens": 8, "output_tokens": 1}},
})

# 7. Usage with prompt-cache reads and writes: input counts them all.
write("usage_with_cache_tokens", {
    "request.json": chat({"messages": [{"role": "user", "content": "Summarise the attached book."}]}),
    "expected_upstream.json": upstream({"max_tokens": 4096, "messages": [{"role": "user", "content": "Summarise the attached book."}]}),
    "upstream_response.json": reply(message([{"type": "text", "text": "It is about a whale."}],
        usage={"input_tokens": 21, "cache_creation_input_tokens": 188086, "cache_read_input_tokens": 1200, "output_tokens": 393})),
    "expected.json": {"body": completion({"role": "assistant", "content": "It is about a whale."}, "stop", (189307, 393, 1200)),
                      "usage": {"input_tokens": 189307, "output_tokens": 393, "cached_input_tokens": 1200, "cache_write_tokens": 188086}},
})

# 8. response_format json_schema without tools: a forced tool, whose input is the text.
schema = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"]}
write("json_schema_forced_tool", {
    "request.json": chat({"messages": [{"role": "user", "content": "Extract: Ada, 36."}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "person", "schema": schema, "strict": True}}}),
    "expected_upstream.json": upstream({"max_tokens": 4096, "messages": [{"role": "user", "content": "Extract: Ada, 36."}],
        "tools": [{"name": "wasmgate_json_response", "description": "Give your answer as this tool's input, a JSON object.", "input_schema": schema}],
        "tool_choice": {"type": "tool", "name": "wasmgate_json_response", "disable_parallel_tool_use": True}}),
    "upstream_response.json": reply(message([{"type": "tool_use", "id": "toolu_01", "name": "wasmgate_json_response", "input": {"name": "Ada", "age": 36}}],
        stop_reason="tool_use", usage={"input_tokens": 400, "output_tokens": 30})),
    "expected.json": {"body": completion({"role": "assistant", "content": "{\"name\":\"Ada\",\"age\":36}"}, "stop", (400, 30, 0)),
                      "usage": {"input_tokens": 400, "output_tokens": 30}},
})

# 9. json_object alongside the client's own tools: an instruction in the system prompt.
write("json_object_with_tools", {
    "request.json": chat({"messages": [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Time?"}],
        "tools": [time_tool], "tool_choice": "auto", "response_format": {"type": "json_object"}}),
    "expected_upstream.json": upstream({"max_tokens": 4096,
        "system": "Be terse.\n\nAnswer with a single JSON object and nothing else. It must follow this JSON Schema: {\"type\":\"object\"}",
        "messages": [{"role": "user", "content": "Time?"}],
        "tools": [{"name": "get_time", "input_schema": {"type": "object", "properties": {}}}], "tool_choice": {"type": "auto"}}),
    "upstream_response.json": reply(message([{"type": "text", "text": "{\"time\":\"10:00\"}"}], usage={"input_tokens": 30, "output_tokens": 8})),
    "expected.json": {"body": completion({"role": "assistant", "content": "{\"time\":\"10:00\"}"}, "stop", (30, 8, 0)),
                      "usage": {"input_tokens": 30, "output_tokens": 8}},
})

# 10. Streamed text, as in the streaming guide's basic example (with a ping, and a keep-alive).
stream_id = "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY"
text_events = [
    {"type": "message_start", "message": {"id": stream_id, "type": "message", "role": "assistant", "content": [], "model": MODEL,
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 25, "output_tokens": 1}}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "ping"},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello"}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "! Ça va? 👋"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 15}},
    {"type": "message_stop"}]
write("stream_text", {
    "request.json": chat({"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 256}, stream=True),
    "expected_upstream.json": upstream({"max_tokens": 256, "messages": [{"role": "user", "content": "Hello"}], "stream": True}),
    "upstream_stream.txt": sse(text_events),
    "expected.json": {"events": [
        chunk({"role": "assistant", "content": ""}), chunk({"content": "Hello"}), chunk({"content": "! Ça va? 👋"}),
        chunk({}, "stop"), usage_chunk(25, 15)], "usage": {"input_tokens": 25, "output_tokens": 15}},
})

# 11. A streamed tool call after some text, as in the guide's tool-use example, with CRLF line
#     breaks and cache tokens in message_start.
tool_events = [
    {"type": "message_start", "message": {"id": "msg_014p7gG3wDgGV9EUtLvnow3U", "type": "message", "role": "assistant", "model": MODEL,
        "stop_sequence": None, "usage": {"input_tokens": 472, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 0, "output_tokens": 2}, "content": [], "stop_reason": None}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "ping"},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Okay, let's check the weather."}},
    {"type": "content_block_stop", "index": 0},
    {"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "name": "get_weather", "input": {}}},
    {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}},
    {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"location\":"}},
    {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": " \"San Francisco, CA\"}"}},
    {"type": "content_block_stop", "index": 1},
    {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None}, "usage": {"output_tokens": 89}},
    {"type": "message_stop"}]
tid = "msg_014p7gG3wDgGV9EUtLvnow3U"
write("stream_tool_call", {
    "request.json": chat({"messages": [{"role": "user", "content": "What is the weather like in San Francisco?"}], "tools": [weather_tool]}, stream=True),
    "expected_upstream.json": upstream({"max_tokens": 4096, "messages": [{"role": "user", "content": "What is the weather like in San Francisco?"}],
        "tools": [{"name": "get_weather", "description": "Get the current weather in a given location", "input_schema": weather_tool["function"]["parameters"]}], "stream": True}),
    "upstream_stream.txt": sse(tool_events).replace("\n", "\r\n"),
    "expected.json": {"events": [
        chunk({"role": "assistant", "content": ""}, id=tid),
        chunk({"content": "Okay, let's check the weather."}, id=tid),
        chunk({"tool_calls": [{"index": 0, "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "type": "function", "function": {"name": "get_weather", "arguments": ""}}]}, id=tid),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{\"location\":"}}]}, id=tid),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": " \"San Francisco, CA\"}"}}]}, id=tid),
        chunk({}, "tool_calls", id=tid), usage_chunk(572, 89, 100, id=tid)],
        "usage": {"input_tokens": 572, "output_tokens": 89, "cached_input_tokens": 100}},
})

# 12. A streamed JSON answer through the forced tool: its input arrives as content.
json_events = [
    {"type": "message_start", "message": {"id": stream_id, "type": "message", "role": "assistant", "content": [], "model": MODEL,
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 400, "output_tokens": 1}}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_01", "name": "wasmgate_json_response", "input": {}}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"name\": \"Ada\""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": ", \"age\": 36}"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None}, "usage": {"output_tokens": 30}},
    {"type": "message_stop"}]
write("stream_json_schema", {
    "request.json": chat({"messages": [{"role": "user", "content": "Extract: Ada, 36."}], "response_format": {"type": "json_object"}}, stream=True),
    "expected_upstream.json": upstream({"max_tokens": 4096, "messages": [{"role": "user", "content": "Extract: Ada, 36."}],
        "tools": [{"name": "wasmgate_json_response", "description": "Give your answer as this tool's input, a JSON object.", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "tool", "name": "wasmgate_json_response", "disable_parallel_tool_use": True}, "stream": True}),
    "upstream_stream.txt": sse(json_events),
    "expected.json": {"events": [
        chunk({"role": "assistant", "content": ""}), chunk({"content": "{\"name\": \"Ada\""}), chunk({"content": ", \"age\": 36}"}),
        chunk({}, "stop"), usage_chunk(400, 30)], "usage": {"input_tokens": 400, "output_tokens": 30}},
})

# 13. An error event in the middle of a stream, as the streaming guide shows it.
err_events = text_events[:4] + [{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}]
write("stream_error_event", {
    "request.json": chat({"messages": [{"role": "user", "content": "Hello"}]}, stream=True),
    "expected_upstream.json": upstream({"max_tokens": 4096, "messages": [{"role": "user", "content": "Hello"}], "stream": True}),
    "upstream_stream.txt": sse(err_events),
    "expected.json": {"events": [chunk({"role": "assistant", "content": ""}), chunk({"content": "Hello"})],
                      "error": {"kind": "upstream", "message": "Overloaded", "code": "overloaded_error"}},
})

# 14. A stream cut before message_stop fails rather than passing as complete.
write("stream_cut_short", {
    "request.json": chat({"messages": [{"role": "user", "content": "Hello"}]}, stream=True),
    "expected_upstream.json": upstream({"max_tokens": 4096, "messages": [{"role": "user", "content": "Hello"}], "stream": True}),
    "upstream_stream.txt": sse(text_events[:4]),
    "expected.json": {"events": [chunk({"role": "assistant", "content": ""}), chunk({"content": "Hello"})],
                      "error": {"kind": "upstream", "message": "Anthropic's stream ended before the message was complete"}},
})

# 15-18. Error bodies by type and status (https://docs.anthropic.com/en/api/errors).
def error_case(name, status, etype, message, kind):
    write(name, {
        "request.json": chat({"messages": [{"role": "user", "content": "Hello"}]}),
        "expected_upstream.json": upstream({"max_tokens": 4096, "messages": [{"role": "user", "content": "Hello"}]}),
        "upstream_response.json": reply({"type": "error", "error": {"type": etype, "message": message}, "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}, status),
        "expected.json": {"error": {"kind": kind, "message": message, "code": etype, "upstream_status": status}},
    })
error_case("error_overloaded_529", 529, "overloaded_error", "Overloaded", "upstream")
error_case("error_rate_limited_429", 429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit", "rate-limited")
error_case("error_authentication_401", 401, "authentication_error", "invalid x-api-key", "authentication")
error_case("error_invalid_request_400", 400, "invalid_request_error", "messages: text content blocks must be non-empty", "invalid-request")
write("error_not_json_502", {
    "request.json": chat({"messages": [{"role": "user", "content": "Hello"}]}),
    "expected_upstream.json": upstream({"max_tokens": 4096, "messages": [{"role": "user", "content": "Hello"}]}),
    "upstream_response.json": {"status": 502, "headers": {"content-type": "text/html"}, "body": "<html><body>Bad Gateway</body></html>"},
    "expected.json": {"error": {"kind": "upstream", "message": "upstream returned HTTP 502: <html><body>Bad Gateway</body></html>", "upstream_status": 502}},
})

# 19. Requests Anthropic cannot serve fail before going upstream.
write("reject_n_greater_than_one", {
    "request.json": chat({"messages": [{"role": "user", "content": "Hello"}], "n": 2}),
    "expected.json": {"error": {"kind": "invalid-request", "message": "this provider generates one choice per request: `n` must be 1", "param": "n"}},
})
write("reject_audio_input", {
    "request.json": chat({"messages": [{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}]}]}),
    "expected.json": {"error": {"kind": "invalid-request", "message": "Anthropic does not accept audio input", "param": "messages[0].content[0]"}},
})
