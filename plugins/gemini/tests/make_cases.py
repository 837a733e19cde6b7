"""Writes tests/cases/*: run `python3 tests/make_cases.py` after editing. The upstream replies
follow the examples in Google's Gemini API reference (https://ai.google.dev/api/generate-content,
https://ai.google.dev/gemini-api/docs/function-calling, https://ai.google.dev/api/embeddings)."""
import json, os, shutil

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "cases")
BASE = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash"
HEADERS = {"x-goog-api-key": "test-key", "content-type": "application/json"}
MODEL = "gemini-2.0-flash"
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

def upstream(body, method="generateContent", url=None):
    return {"method": "POST", "url": url or f"{BASE}:{method}", "headers": HEADERS, "body": body}

def reply(body, status=200):
    return {"status": status, "headers": {"content-type": "application/json; charset=UTF-8"}, "body": body}

def response(parts, finish="STOP", usage=(8, 12), cached=None, thoughts=None, rid="uLwKaPrUF6SI-8YPm_yf6Q0"):
    meta = {"promptTokenCount": usage[0], "candidatesTokenCount": usage[1], "totalTokenCount": usage[0] + usage[1] + (thoughts or 0),
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": usage[0]}]}
    if cached is not None:
        meta["cachedContentTokenCount"] = cached
    if thoughts is not None:
        meta["thoughtsTokenCount"] = thoughts
    return {"candidates": [{"content": {"parts": parts, "role": "model"}, "finishReason": finish, "avgLogprobs": -0.12}],
            "usageMetadata": meta, "modelVersion": MODEL, "responseId": rid}

def completion(msg, finish, usage, cached=0, rid="uLwKaPrUF6SI-8YPm_yf6Q0"):
    return {"id": rid, "object": "chat.completion", "created": ANY, "model": MODEL,
            "choices": [{"index": 0, "message": msg, "logprobs": None, "finish_reason": finish}],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": usage[0] + usage[1],
                      "prompt_tokens_details": {"cached_tokens": cached}}}

def user(text):
    return {"role": "user", "parts": [{"text": text}]}

def sse(events):
    return "".join(f"data: {json.dumps(e)}\r\n\r\n" for e in events)

def chunk(delta, finish=None, rid="stream-1"):
    return {"id": rid, "object": "chat.completion.chunk", "created": ANY, "model": MODEL,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}], "usage": None}

def usage_chunk(prompt, out, cached=0, rid="stream-1"):
    return {"id": rid, "object": "chat.completion.chunk", "created": ANY, "model": MODEL, "choices": [],
            "usage": {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out,
                      "prompt_tokens_details": {"cached_tokens": cached}}}

shutil.rmtree(CASES, ignore_errors=True)

write("plain_chat", {
    "request.json": chat({"messages": [{"role": "user", "content": "Write a story about a magic backpack."}]}),
    "expected_upstream.json": upstream({"contents": [user("Write a story about a magic backpack.")]}),
    "upstream_response.json": reply(response([{"text": "Once upon a time, a backpack hummed."}])),
    "expected.json": {"body": completion({"role": "assistant", "content": "Once upon a time, a backpack hummed."}, "stop", (8, 12)),
                      "usage": {"input_tokens": 8, "output_tokens": 12}},
})

write("system_prompt_and_generation_config", {
    "request.json": chat({"messages": [{"role": "system", "content": "You are a cat. Your name is Neko."},
                                       {"role": "developer", "content": "Answer briefly."},
                                       {"role": "user", "content": "Hello there"}],
                          "temperature": 0.7, "top_p": 0.95, "seed": 42, "presence_penalty": 0.5, "frequency_penalty": 0.25}),
    "expected_upstream.json": upstream({"contents": [user("Hello there")],
        "systemInstruction": {"parts": [{"text": "You are a cat. Your name is Neko."}, {"text": "Answer briefly."}]},
        "generationConfig": {"temperature": 0.7, "topP": 0.95, "seed": 42, "presencePenalty": 0.5, "frequencyPenalty": 0.25}}),
    "upstream_response.json": reply(response([{"text": "Meow. I am Neko."}], usage=(20, 6))),
    "expected.json": {"body": completion({"role": "assistant", "content": "Meow. I am Neko."}, "stop", (20, 6)),
                      "usage": {"input_tokens": 20, "output_tokens": 6}},
})

meeting_params = {"type": "object", "properties": {
    "attendees": {"type": "array", "items": {"type": "string"}, "description": "List of people attending the meeting."},
    "date": {"type": "string"}, "time": {"type": "string"}, "topic": {"type": "string"}},
    "required": ["attendees", "date", "time", "topic"], "additionalProperties": False}
meeting_tool = {"type": "function", "function": {"name": "schedule_meeting", "description": "Schedules a meeting with specified attendees at a given time and date.", "parameters": meeting_params}}
weather_tool = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
tools_up = [{"functionDeclarations": [
    {"name": "schedule_meeting", "description": "Schedules a meeting with specified attendees at a given time and date.", "parametersJsonSchema": meeting_params},
    {"name": "get_weather", "parametersJsonSchema": weather_tool["function"]["parameters"]}]}]

# The tool results name no function: their names come from the assistant's calls by id.
write("tool_call_and_result", {
    "request.json": chat({"messages": [
        {"role": "user", "content": "Schedule a meeting with Bob and Alice for 03/27/2025 at 10:00 AM about the Q3 planning, and tell me the weather in Paris."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_0", "type": "function", "function": {"name": "schedule_meeting", "arguments": "{\"attendees\":[\"Bob\",\"Alice\"],\"date\":\"2025-03-27\",\"time\":\"10:00\",\"topic\":\"Q3 planning\"}"}},
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"temperature\": 15, \"sky\": \"cloudy\"}"},
        {"role": "tool", "tool_call_id": "call_0", "content": "Meeting scheduled."}],
        "tools": [meeting_tool, weather_tool], "tool_choice": "auto"}),
    "expected_upstream.json": upstream({"contents": [
        user("Schedule a meeting with Bob and Alice for 03/27/2025 at 10:00 AM about the Q3 planning, and tell me the weather in Paris."),
        {"role": "model", "parts": [
            {"functionCall": {"name": "schedule_meeting", "args": {"attendees": ["Bob", "Alice"], "date": "2025-03-27", "time": "10:00", "topic": "Q3 planning"}}},
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "get_weather", "response": {"temperature": 15, "sky": "cloudy"}}},
            {"functionResponse": {"name": "schedule_meeting", "response": {"output": "Meeting scheduled."}}}]}],
        "tools": tools_up, "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}}}),
    "upstream_response.json": reply(response([{"text": "Done: the meeting is booked, and Paris is 15°C and cloudy."}], usage=(120, 16))),
    "expected.json": {"body": completion({"role": "assistant", "content": "Done: the meeting is booked, and Paris is 15°C and cloudy."}, "stop", (120, 16)),
                      "usage": {"input_tokens": 120, "output_tokens": 16}},
})

# Gemini says STOP when it calls a function: the finish reason is still tool_calls.
write("function_call_response", {
    "request.json": chat({"messages": [{"role": "user", "content": "Schedule a meeting with Bob and Alice for 03/27/2025 at 10:00 AM about the Q3 planning."}],
        "tools": [meeting_tool], "tool_choice": {"type": "function", "function": {"name": "schedule_meeting"}}}),
    "expected_upstream.json": upstream({"contents": [user("Schedule a meeting with Bob and Alice for 03/27/2025 at 10:00 AM about the Q3 planning.")],
        "tools": [{"functionDeclarations": [tools_up[0]["functionDeclarations"][0]]}],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["schedule_meeting"]}}}),
    "upstream_response.json": reply(response([{"functionCall": {"name": "schedule_meeting", "args": {"attendees": ["Bob", "Alice"], "date": "2025-03-27", "time": "10:00", "topic": "Q3 planning"}}}], usage=(90, 25))),
    "expected.json": {"body": completion({"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_0", "type": "function", "function": {"name": "schedule_meeting", "arguments": "{\"attendees\":[\"Bob\",\"Alice\"],\"date\":\"2025-03-27\",\"time\":\"10:00\",\"topic\":\"Q3 planning\"}"}}]},
        "tool_calls", (90, 25)), "usage": {"input_tokens": 90, "output_tokens": 25}},
})

write("image_and_audio_input", {
    "request.json": chat({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "Caption this image, and transcribe the clip."},
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQSkZJRg=="}},
        {"type": "image_url", "image_url": {"url": "https://example.com/photos/cat.PNG?size=large"}},
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}]}], "tool_choice": "none"}),
    "expected_upstream.json": upstream({"contents": [{"role": "user", "parts": [
        {"text": "Caption this image, and transcribe the clip."},
        {"inlineData": {"mimeType": "image/jpeg", "data": "/9j/4AAQSkZJRg=="}},
        {"fileData": {"mimeType": "image/png", "fileUri": "https://example.com/photos/cat.PNG?size=large"}},
        {"inlineData": {"mimeType": "audio/wav", "data": "UklGRg=="}}]}],
        "toolConfig": {"functionCallingConfig": {"mode": "NONE"}}}),
    "upstream_response.json": reply(response([{"text": "A cat on a sofa. The clip says hello."}], usage=(1290, 11))),
    "expected.json": {"body": completion({"role": "assistant", "content": "A cat on a sofa. The clip says hello."}, "stop", (1290, 11)),
                      "usage": {"input_tokens": 1290, "output_tokens": 11}},
})

write("stop_and_max_tokens", {
    "request.json": chat({"messages": [{"role": "user", "content": "Count to ten."}], "stop": ["7", "eight"], "max_tokens": 200, "max_completion_tokens": 20}),
    "expected_upstream.json": upstream({"contents": [user("Count to ten.")], "generationConfig": {"maxOutputTokens": 20, "stopSequences": ["7", "eight"]}}),
    "upstream_response.json": reply(response([{"text": "1, 2, 3, 4,"}], finish="MAX_TOKENS", usage=(5, 20))),
    "expected.json": {"body": completion({"role": "assistant", "content": "1, 2, 3, 4,"}, "length", (5, 20)),
                      "usage": {"input_tokens": 5, "output_tokens": 20}},
})

recipe = {"type": "array", "items": {"type": "object", "properties": {"recipeName": {"type": "string"}, "ingredients": {"type": "array", "items": {"type": "string"}}}, "propertyOrdering": ["recipeName", "ingredients"]}}
write("json_schema", {
    "request.json": chat({"messages": [{"role": "user", "content": "List a few popular cookie recipes, and include the amounts of ingredients."}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "recipes", "schema": recipe}}}),
    "expected_upstream.json": upstream({"contents": [user("List a few popular cookie recipes, and include the amounts of ingredients.")],
        "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": recipe}}),
    "upstream_response.json": reply(response([{"text": "[{\"recipeName\": \"Chocolate Chip Cookies\", \"ingredients\": [\"1 cup butter\"]}]"}], usage=(12, 30))),
    "expected.json": {"body": completion({"role": "assistant", "content": "[{\"recipeName\": \"Chocolate Chip Cookies\", \"ingredients\": [\"1 cup butter\"]}]"}, "stop", (12, 30)),
                      "usage": {"input_tokens": 12, "output_tokens": 30}},
})

# promptTokenCount includes the cached tokens; thinking tokens count as output, thought parts
# are left out of the answer.
write("usage_with_cache_and_thoughts", {
    "request.json": chat({"messages": [{"role": "user", "content": "Summarise the cached report."}]}),
    "expected_upstream.json": upstream({"contents": [user("Summarise the cached report.")]}),
    "upstream_response.json": reply(response([{"text": "Weighing the sections first.", "thought": True}, {"text": "Revenue grew 4%."}], usage=(35000, 9), cached=32768, thoughts=120)),
    "expected.json": {"body": completion({"role": "assistant", "content": "Revenue grew 4%."}, "stop", (35000, 129), cached=32768),
                      "usage": {"input_tokens": 35000, "output_tokens": 129, "cached_input_tokens": 32768}},
})

write("prompt_blocked", {
    "request.json": chat({"messages": [{"role": "user", "content": "Something unsafe."}]}),
    "expected_upstream.json": upstream({"contents": [user("Something unsafe.")]}),
    "upstream_response.json": reply({"promptFeedback": {"blockReason": "SAFETY", "safetyRatings": [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH"}]},
        "usageMetadata": {"promptTokenCount": 4, "totalTokenCount": 4}, "modelVersion": MODEL, "responseId": "blocked-1"}),
    "expected.json": {"body": completion({"role": "assistant", "content": None}, "content_filter", (4, 0), rid="blocked-1"),
                      "usage": {"input_tokens": 4, "output_tokens": 0}},
})

def sresp(parts, finish=None, usage=None):
    c = {"content": {"parts": parts, "role": "model"}}
    if finish:
        c["finishReason"] = finish
    r = {"candidates": [c], "modelVersion": MODEL, "responseId": "stream-1"}
    if usage:
        r["usageMetadata"] = {"promptTokenCount": usage[0], "candidatesTokenCount": usage[1], "totalTokenCount": usage[0] + usage[1]}
    return r

write("stream_text", {
    "request.json": chat({"messages": [{"role": "user", "content": "Write a story about a magic backpack."}]}, stream=True),
    "expected_upstream.json": upstream({"contents": [user("Write a story about a magic backpack.")]}, method="streamGenerateContent?alt=sse"),
    "upstream_stream.txt": sse([sresp([{"text": "Once"}], usage=(10, 1)), sresp([{"text": " upon a time, Élodie's backpack"}], usage=(10, 9)),
                                sresp([{"text": " hummed. 🎒"}], finish="STOP", usage=(10, 14))]),
    "expected.json": {"events": [chunk({"role": "assistant", "content": ""}), chunk({"content": "Once"}),
        chunk({"content": " upon a time, Élodie's backpack"}), chunk({"content": " hummed. 🎒"}), chunk({}, "stop"), usage_chunk(10, 14)],
        "usage": {"input_tokens": 10, "output_tokens": 14}},
})

write("stream_tool_call", {
    "request.json": chat({"messages": [{"role": "user", "content": "Weather in Paris and Rome?"}], "tools": [weather_tool]}, stream=True),
    "expected_upstream.json": upstream({"contents": [user("Weather in Paris and Rome?")],
        "tools": [{"functionDeclarations": [tools_up[0]["functionDeclarations"][1]]}]}, method="streamGenerateContent?alt=sse"),
    "upstream_stream.txt": sse([sresp([{"text": "Checking both."}], usage=(30, 3)),
        sresp([{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}, {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}}], finish="STOP", usage=(30, 20))]),
    "expected.json": {"events": [chunk({"role": "assistant", "content": ""}), chunk({"content": "Checking both."}),
        chunk({"tool_calls": [{"index": 0, "id": "call_0", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]}),
        chunk({"tool_calls": [{"index": 1, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Rome\"}"}}]}),
        chunk({}, "tool_calls"), usage_chunk(30, 20)], "usage": {"input_tokens": 30, "output_tokens": 20}},
})

write("stream_error_event", {
    "request.json": chat({"messages": [{"role": "user", "content": "Hi"}]}, stream=True),
    "expected_upstream.json": upstream({"contents": [user("Hi")]}, method="streamGenerateContent?alt=sse"),
    "upstream_stream.txt": sse([sresp([{"text": "Hel"}], usage=(2, 1)), {"error": {"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}}]),
    "expected.json": {"events": [chunk({"role": "assistant", "content": ""}), chunk({"content": "Hel"})],
                      "error": {"kind": "upstream", "message": "The model is overloaded. Please try again later.", "code": "UNAVAILABLE"}},
})

write("stream_cut_short", {
    "request.json": chat({"messages": [{"role": "user", "content": "Hi"}]}, stream=True),
    "expected_upstream.json": upstream({"contents": [user("Hi")]}, method="streamGenerateContent?alt=sse"),
    "upstream_stream.txt": sse([sresp([{"text": "Hel"}], usage=(2, 1))]),
    "expected.json": {"events": [chunk({"role": "assistant", "content": ""}), chunk({"content": "Hel"})],
                      "error": {"kind": "upstream", "message": "Gemini's stream ended before the answer was complete"}},
})

def error_case(name, status, gstatus, message, kind, details=None):
    err = {"code": status, "message": message, "status": gstatus}
    if details:
        err["details"] = details
    write(name, {
        "request.json": chat({"messages": [{"role": "user", "content": "Hi"}]}),
        "expected_upstream.json": upstream({"contents": [user("Hi")]}),
        "upstream_response.json": reply({"error": err}, status),
        "expected.json": {"error": {"kind": kind, "message": message, "code": gstatus, "upstream_status": status}},
    })
error_case("error_api_key_invalid_400", 400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", "authentication",
    [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com", "metadata": {"service": "generativelanguage.googleapis.com"}}])
error_case("error_resource_exhausted_429", 429, "RESOURCE_EXHAUSTED", "You exceeded your current quota, please check your plan and billing details.", "rate-limited")
error_case("error_not_found_404", 404, "NOT_FOUND", "models/gemini-0.0 is not found for API version v1beta, or is not supported for generateContent.", "not-found")
error_case("error_unavailable_503", 503, "UNAVAILABLE", "The model is overloaded. Please try again later.", "upstream")

write("reject_unknown_tool_call_id", {
    "request.json": chat({"messages": [{"role": "user", "content": "Hi"}, {"role": "tool", "tool_call_id": "call_9", "content": "42"}]}),
    "expected.json": {"error": {"kind": "invalid-request", "message": "no earlier assistant message made the tool call `call_9`", "param": "messages[1].tool_call_id"}},
})

# Embeddings: a single text, and a batch, with a custom base URL.
write("embeddings_single", {
    "request.json": {"operation": "embeddings", "body": {"model": "text-embedding-004", "input": "What is the meaning of life?", "dimensions": 3}},
    "expected_upstream.json": {"method": "POST", "url": "https://generativelanguage.googleapis.com/v1beta/models/text-embedding-004:embedContent", "headers": HEADERS,
        "body": {"content": {"parts": [{"text": "What is the meaning of life?"}]}, "outputDimensionality": 3}},
    "upstream_response.json": reply({"embedding": {"values": [0.013168523, -0.008711934, -0.046782676]}}),
    "expected.json": {"body": {"object": "list", "model": "text-embedding-004", "data": [{"object": "embedding", "index": 0, "embedding": [0.013168523, -0.008711934, -0.046782676]}],
                               "usage": {"prompt_tokens": 0, "total_tokens": 0}}, "usage": None},
})
write("embeddings_batch", {
    "request.json": {"operation": "embeddings", "config": {"base_url": "http://127.0.0.1:9000/v1beta/"},
                     "body": {"model": "text-embedding-004", "input": ["What is the meaning of life?", "How much wood would a woodchuck chuck?"], "encoding_format": "float"}},
    "expected_upstream.json": {"method": "POST", "url": "http://127.0.0.1:9000/v1beta/models/text-embedding-004:batchEmbedContents", "headers": HEADERS,
        "body": {"requests": [{"model": "models/text-embedding-004", "content": {"parts": [{"text": "What is the meaning of life?"}]}},
                              {"model": "models/text-embedding-004", "content": {"parts": [{"text": "How much wood would a woodchuck chuck?"}]}}]}},
    "upstream_response.json": reply({"embeddings": [{"values": [0.5, -0.25]}, {"values": [0.125, 1.0]}]}),
    "expected.json": {"body": {"object": "list", "model": "text-embedding-004", "data": [
        {"object": "embedding", "index": 0, "embedding": [0.5, -0.25]}, {"object": "embedding", "index": 1, "embedding": [0.125, 1.0]}],
        "usage": {"prompt_tokens": 0, "total_tokens": 0}}, "usage": None},
})
write("embeddings_reject_token_ids", {
    "request.json": {"operation": "embeddings", "body": {"model": "text-embedding-004", "input": [[1, 2, 3]]}},
    "expected.json": {"error": {"kind": "invalid-request", "message": "this provider embeds text: `input` must be a string or a list of strings", "param": "input"}},
})
