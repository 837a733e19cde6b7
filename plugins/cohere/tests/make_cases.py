"""Writes tests/cases/*: run `python3 tests/make_cases.py` after editing. The upstream replies
follow the examples in Cohere's v2 API reference (https://docs.cohere.com/v2/reference/chat,
https://docs.cohere.com/v2/docs/streaming, https://docs.cohere.com/v2/reference/embed)."""
import json, os, shutil

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "cases")
BASE = "https://api.cohere.com/v2"
HEADERS = {"authorization": "Bearer test-key", "content-type": "application/json"}
MODEL = "command-a-03-2025"
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

def upstream(body, path="chat", stream=False):
    headers = dict(HEADERS, accept="text/event-stream") if stream else HEADERS
    return {"method": "POST", "url": f"{BASE}/{path}", "headers": headers, "body": dict({"model": MODEL}, **body)}

def reply(body, status=200):
    return {"status": status, "headers": {"content-type": "application/json"}, "body": body}

def response(message, finish="COMPLETE", billed=(17, 12), tokens=(215, 12), rid="c14c80c3-18eb-4519-9460-6c92edd8cfb4"):
    return {"id": rid, "finish_reason": finish, "message": dict({"role": "assistant"}, **message),
            "usage": {"billed_units": {"input_tokens": billed[0], "output_tokens": billed[1]}, "tokens": {"input_tokens": tokens[0], "output_tokens": tokens[1]}}}

def completion(msg, finish, usage, cached=0, rid="c14c80c3-18eb-4519-9460-6c92edd8cfb4"):
    return {"id": rid, "object": "chat.completion", "created": ANY, "model": MODEL,
            "choices": [{"index": 0, "message": msg, "logprobs": None, "finish_reason": finish}],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": usage[0] + usage[1],
                      "prompt_tokens_details": {"cached_tokens": cached}}}

def text(t):
    return {"content": [{"type": "text", "text": t}]}

def sse(events):
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)

SID = "29f14a5a-11de-4cae-9800-25e4747408ea"
def chunk(delta, finish=None):
    return {"id": SID, "object": "chat.completion.chunk", "created": ANY, "model": MODEL,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}], "usage": None}

def usage_chunk(prompt, out):
    return {"id": SID, "object": "chat.completion.chunk", "created": ANY, "model": MODEL, "choices": [],
            "usage": {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out, "prompt_tokens_details": {"cached_tokens": 0}}}

shutil.rmtree(CASES, ignore_errors=True)

write("plain_chat", {
    "request.json": chat({"messages": [{"role": "user", "content": "Tell me about LLMs"}]}),
    "expected_upstream.json": upstream({"messages": [{"role": "user", "content": "Tell me about LLMs"}]}),
    "upstream_response.json": reply(response(text("LLMs stand for Large Language Models."))),
    "expected.json": {"body": completion({"role": "assistant", "content": "LLMs stand for Large Language Models."}, "stop", (17, 12)),
                      "usage": {"input_tokens": 17, "output_tokens": 12}},
})

write("system_prompt_and_parameters", {
    "request.json": chat({"messages": [{"role": "system", "content": "You respond in concise sentences."},
                                       {"role": "developer", "content": [{"type": "text", "text": "Use British spelling."}]},
                                       {"role": "user", "content": "Hello"}],
                          "temperature": 0.3, "top_p": 0.75, "seed": 7, "frequency_penalty": 0.1, "presence_penalty": 0.2}),
    "expected_upstream.json": upstream({"messages": [{"role": "system", "content": "You respond in concise sentences."},
        {"role": "system", "content": "Use British spelling."}, {"role": "user", "content": "Hello"}],
        "temperature": 0.3, "p": 0.75, "seed": 7, "frequency_penalty": 0.1, "presence_penalty": 0.2}),
    "upstream_response.json": reply(response(text("Hello! How may I help?"), billed=(14, 6), tokens=(230, 6))),
    "expected.json": {"body": completion({"role": "assistant", "content": "Hello! How may I help?"}, "stop", (14, 6)),
                      "usage": {"input_tokens": 14, "output_tokens": 6}},
})

weather = {"type": "function", "function": {"name": "get_weather", "description": "gets the weather of a given location",
    "parameters": {"type": "object", "properties": {"location": {"type": "string", "description": "the location to get weather, example: San Francisco, CA"}}, "required": ["location"]}}}
write("tool_call_and_result", {
    "request.json": chat({"messages": [
        {"role": "user", "content": "What's the weather in Toronto?"},
        {"role": "assistant", "content": "I will search for the weather in Toronto.", "tool_calls": [
            {"id": "get_weather_1byjy32y4hvq", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\":\"Toronto\"}"}}]},
        {"role": "tool", "tool_call_id": "get_weather_1byjy32y4hvq", "content": "[{\"temperature\": 30}]"}],
        "tools": [weather]}),
    "expected_upstream.json": upstream({"messages": [
        {"role": "user", "content": "What's the weather in Toronto?"},
        {"role": "assistant", "tool_plan": "I will search for the weather in Toronto.", "tool_calls": [
            {"id": "get_weather_1byjy32y4hvq", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\":\"Toronto\"}"}}]},
        {"role": "tool", "tool_call_id": "get_weather_1byjy32y4hvq", "content": "[{\"temperature\": 30}]"}],
        "tools": [weather]}),
    "upstream_response.json": reply(response(text("It's 30°C in Toronto."), billed=(60, 9), tokens=(1100, 9))),
    "expected.json": {"body": completion({"role": "assistant", "content": "It's 30°C in Toronto."}, "stop", (60, 9)),
                      "usage": {"input_tokens": 60, "output_tokens": 9}},
})

write("tool_call_response", {
    "request.json": chat({"messages": [{"role": "user", "content": "What's the weather in Toronto?"}], "tools": [weather],
                          "tool_choice": {"type": "function", "function": {"name": "get_weather"}}}),
    "expected_upstream.json": upstream({"messages": [{"role": "user", "content": "What's the weather in Toronto?"}], "tools": [weather], "tool_choice": "REQUIRED"}),
    "upstream_response.json": reply(response({"tool_plan": "I will search for the weather in Toronto.", "tool_calls": [
        {"id": "get_weather_1byjy32y4hvq", "type": "function", "function": {"name": "get_weather", "arguments": "{\n    \"location\": \"Toronto\"\n}"}}]},
        finish="TOOL_CALL", billed=(37, 28), tokens=(1200, 28))),
    "expected.json": {"body": completion({"role": "assistant", "content": "I will search for the weather in Toronto.", "tool_calls": [
        {"id": "get_weather_1byjy32y4hvq", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\":\"Toronto\"}"}}]},
        "tool_calls", (37, 28)), "usage": {"input_tokens": 37, "output_tokens": 28}},
})

write("image_input", {
    "request.json": chat({"model": "command-a-vision-07-2025", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "Describe the image."},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"}}]}], "tool_choice": "none"}),
    "expected_upstream.json": upstream({"model": "command-a-vision-07-2025", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "Describe the image."},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"}}]}], "tool_choice": "NONE"}),
    "upstream_response.json": reply(response(text("A small blank square."), billed=(800, 5), tokens=(900, 5))),
    "expected.json": {"body": dict(completion({"role": "assistant", "content": "A small blank square."}, "stop", (800, 5)), model="command-a-vision-07-2025"),
                      "usage": {"input_tokens": 800, "output_tokens": 5}},
})

write("stop_and_max_tokens", {
    "request.json": chat({"messages": [{"role": "user", "content": "Count to ten."}], "stop": "7", "max_completion_tokens": 10,
                          "response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": {"type": "object", "properties": {"n": {"type": "array"}}}}}}),
    "expected_upstream.json": upstream({"messages": [{"role": "user", "content": "Count to ten."}], "max_tokens": 10, "stop_sequences": ["7"],
        "response_format": {"type": "json_object", "json_schema": {"type": "object", "properties": {"n": {"type": "array"}}}}}),
    "upstream_response.json": reply(response(text("{\"n\": [1, 2, 3"), finish="MAX_TOKENS", billed=(9, 10), tokens=(120, 10))),
    "expected.json": {"body": completion({"role": "assistant", "content": "{\"n\": [1, 2, 3"}, "length", (9, 10)),
                      "usage": {"input_tokens": 9, "output_tokens": 10}},
})

cached = response(text("Cached answer."), billed=(500, 4), tokens=(620, 4))
cached["usage"]["cached_tokens"] = 448
write("usage_with_cache_tokens", {
    "request.json": chat({"messages": [{"role": "user", "content": "Answer from the long shared preamble."}]}),
    "expected_upstream.json": upstream({"messages": [{"role": "user", "content": "Answer from the long shared preamble."}]}),
    "upstream_response.json": reply(cached),
    "expected.json": {"body": completion({"role": "assistant", "content": "Cached answer."}, "stop", (500, 4), cached=448),
                      "usage": {"input_tokens": 500, "output_tokens": 4, "cached_input_tokens": 448}},
})

start = {"id": SID, "type": "message-start", "delta": {"message": {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": [], "citations": []}}}
def end(finish, billed):
    return {"type": "message-end", "delta": {"finish_reason": finish, "usage": {"billed_units": {"input_tokens": billed[0], "output_tokens": billed[1]}, "tokens": {"input_tokens": billed[0] + 200, "output_tokens": billed[1]}}}}
write("stream_text", {
    "request.json": chat({"messages": [{"role": "user", "content": "What is an LLM?"}]}, stream=True),
    "expected_upstream.json": upstream({"messages": [{"role": "user", "content": "What is an LLM?"}], "stream": True}, stream=True),
    "upstream_stream.txt": sse([start,
        {"type": "content-start", "index": 0, "delta": {"message": {"content": {"type": "text", "text": ""}}}},
        {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": "A large"}}}},
        {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": " language model — LLM 🤖"}}}},
        {"type": "content-end", "index": 0},
        end("COMPLETE", (5, 141))]),
    "expected.json": {"events": [chunk({"role": "assistant", "content": ""}), chunk({"content": "A large"}),
        chunk({"content": " language model — LLM 🤖"}), chunk({}, "stop"), usage_chunk(5, 141)], "usage": {"input_tokens": 5, "output_tokens": 141}},
})

write("stream_tool_call", {
    "request.json": chat({"messages": [{"role": "user", "content": "What's the weather in Toronto and Madrid?"}], "tools": [weather], "tool_choice": "required"}, stream=True),
    "expected_upstream.json": upstream({"messages": [{"role": "user", "content": "What's the weather in Toronto and Madrid?"}], "tools": [weather], "tool_choice": "REQUIRED", "stream": True}, stream=True),
    "upstream_stream.txt": sse([start,
        {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": "I will search"}}},
        {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": " for both."}}},
        {"type": "tool-call-start", "index": 0, "delta": {"message": {"tool_calls": {"id": "get_weather_nsz5zm3w56q3", "type": "function", "function": {"name": "get_weather", "arguments": ""}}}}},
        {"type": "tool-call-delta", "index": 0, "delta": {"message": {"tool_calls": {"function": {"arguments": "{\n    \"location\""}}}}},
        {"type": "tool-call-delta", "index": 0, "delta": {"message": {"tool_calls": {"function": {"arguments": ": \"Toronto\"\n}"}}}}},
        {"type": "tool-call-end", "index": 0},
        {"type": "tool-call-start", "index": 1, "delta": {"message": {"tool_calls": {"id": "get_weather_j3y5dg3q4cd1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}}}},
        {"type": "tool-call-delta", "index": 1, "delta": {"message": {"tool_calls": {"function": {"arguments": "{\"location\": \"Madrid\"}"}}}}},
        {"type": "tool-call-end", "index": 1},
        end("TOOL_CALL", (37, 28))]).replace("\n\n", "\r\n\r\n"),
    "expected.json": {"events": [chunk({"role": "assistant", "content": ""}), chunk({"content": "I will search"}), chunk({"content": " for both."}),
        chunk({"tool_calls": [{"index": 0, "id": "get_weather_nsz5zm3w56q3", "type": "function", "function": {"name": "get_weather", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{\n    \"location\""}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": ": \"Toronto\"\n}"}}]}),
        chunk({"tool_calls": [{"index": 1, "id": "get_weather_j3y5dg3q4cd1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 1, "function": {"arguments": "{\"location\": \"Madrid\"}"}}]}),
        chunk({}, "tool_calls"), usage_chunk(37, 28)], "usage": {"input_tokens": 37, "output_tokens": 28}},
})

write("stream_cut_short", {
    "request.json": chat({"messages": [{"role": "user", "content": "What is an LLM?"}]}, stream=True),
    "expected_upstream.json": upstream({"messages": [{"role": "user", "content": "What is an LLM?"}], "stream": True}, stream=True),
    "upstream_stream.txt": sse([start, {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": "A large"}}}}]),
    "expected.json": {"events": [chunk({"role": "assistant", "content": ""}), chunk({"content": "A large"})],
                      "error": {"kind": "upstream", "message": "Cohere's stream ended before the message was complete"}},
})

def error_case(name, status, message, kind):
    write(name, {
        "request.json": chat({"messages": [{"role": "user", "content": "Hi"}]}),
        "expected_upstream.json": upstream({"messages": [{"role": "user", "content": "Hi"}]}),
        "upstream_response.json": reply({"id": "a3f2cbd4-6a7b-4f05-9a0e-2b7e5a0c7d11", "message": message}, status),
        "expected.json": {"error": {"kind": kind, "message": message, "upstream_status": status}},
    })
error_case("error_rate_limited_429", 429, "You are using a Trial key, which is limited to 20 API calls / minute. You can continue to use the Trial key for free or upgrade to a Production key with higher rate limits at 'https://dashboard.cohere.com/api-keys'.", "rate-limited")
error_case("error_invalid_token_401", 401, "invalid api token", "authentication")
error_case("error_invalid_request_400", 400, "invalid request: message must be at least 1 token long or tool results must be specified.", "invalid-request")
error_case("error_internal_500", 500, "internal server error, this has been reported to our developers", "upstream")

write("embed", {
    "request.json": {"operation": "embeddings", "body": {"model": "embed-v4.0", "input": ["hello", "goodbye"], "dimensions": 256}},
    "expected_upstream.json": {"method": "POST", "url": f"{BASE}/embed", "headers": HEADERS,
        "body": {"model": "embed-v4.0", "texts": ["hello", "goodbye"], "input_type": "search_document", "embedding_types": ["float"], "output_dimension": 256}},
    "upstream_response.json": reply({"id": "da6e531f-54c6-4a73-bf92-f60566d8d753", "embeddings": {"float": [[0.016296387, 0.008354187, 0.04699707], [-0.025497437, 0.0027751923, 0.01940918]]},
        "texts": ["hello", "goodbye"], "meta": {"api_version": {"version": "2"}, "billed_units": {"input_tokens": 2}}, "response_type": "embeddings_by_type"}),
    "expected.json": {"body": {"object": "list", "model": "embed-v4.0", "data": [
        {"object": "embedding", "index": 0, "embedding": [0.016296387, 0.008354187, 0.04699707]},
        {"object": "embedding", "index": 1, "embedding": [-0.025497437, 0.0027751923, 0.01940918]}],
        "usage": {"prompt_tokens": 2, "total_tokens": 2}}, "usage": {"input_tokens": 2}},
})
write("embed_query_input_type", {
    "request.json": {"operation": "embeddings", "config": {"base_url": "http://127.0.0.1:7000/v2", "options": {"input_type": "search_query"}},
                     "body": {"model": "embed-english-v3.0", "input": "hello"}},
    "expected_upstream.json": {"method": "POST", "url": "http://127.0.0.1:7000/v2/embed", "headers": HEADERS,
        "body": {"model": "embed-english-v3.0", "texts": ["hello"], "input_type": "search_query", "embedding_types": ["float"]}},
    "upstream_response.json": reply({"id": "x", "embeddings": {"float": [[0.5, -0.25]]}, "texts": ["hello"], "meta": {"billed_units": {"input_tokens": 1}}, "response_type": "embeddings_by_type"}),
    "expected.json": {"body": {"object": "list", "model": "embed-english-v3.0", "data": [{"object": "embedding", "index": 0, "embedding": [0.5, -0.25]}],
        "usage": {"prompt_tokens": 1, "total_tokens": 1}}, "usage": {"input_tokens": 1}},
})
write("reject_audio_input", {
    "request.json": chat({"messages": [{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}]}]}),
    "expected.json": {"error": {"kind": "invalid-request", "message": "Cohere accepts text and images in user messages", "param": "messages[0].content[0]"}},
})
