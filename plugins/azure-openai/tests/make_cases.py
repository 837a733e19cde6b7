"""Writes tests/cases/*: run `python3 tests/make_cases.py` after editing. The upstream replies
follow the examples in the Azure OpenAI inference REST reference
(https://learn.microsoft.com/en-us/azure/ai-services/openai/reference). Bodies pass through, so
each expected body is the upstream's."""
import json, os, shutil

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "cases")
ENDPOINT = "https://my-resource.openai.azure.com"
CONFIG = {"base_url": ENDPOINT}
HEADERS = {"api-key": "test-key", "content-type": "application/json"}
MODEL = "gpt-4o"

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

def url(path, deployment=MODEL, version="2024-10-21", base=ENDPOINT):
    return f"{base}/openai/deployments/{deployment}/{path}?api-version={version}"

def passthrough(name, body, reply_body, usage, operation="chat-completions", path="chat/completions", config=CONFIG,
                deployment=MODEL, version="2024-10-21", status=200, expected=None):
    write(name, {
        "request.json": {"operation": operation, "config": config, "body": body},
        "expected_upstream.json": {"method": "POST", "url": url(path, deployment, version), "headers": HEADERS, "body": body},
        "upstream_response.json": {"status": status, "headers": {"content-type": "application/json"}, "body": reply_body},
        "expected.json": expected or {"body": reply_body, "usage": usage},
    })

def completion(message, finish="stop", usage=(33, 557), cached=None):
    u = {"completion_tokens": usage[1], "prompt_tokens": usage[0], "total_tokens": usage[0] + usage[1]}
    if cached is not None:
        u["prompt_tokens_details"] = {"cached_tokens": cached}
    return {"id": "chatcmpl-7R1nGnsXO8n4oi9UPz2f3UHdgAYMn", "created": 1686676106, "object": "chat.completion", "model": "gpt-4o-2024-08-06",
            "choices": [{"index": 0, "finish_reason": finish, "message": message,
                         "content_filter_results": {"hate": {"filtered": False, "severity": "safe"}}}],
            "usage": u, "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {"hate": {"filtered": False, "severity": "safe"}}}]}

shutil.rmtree(CASES, ignore_errors=True)

passthrough("plain_chat", {"model": MODEL, "messages": [{"role": "user", "content": "Tell me a fun fact."}]},
    completion({"role": "assistant", "content": "Honey never spoils."}, usage=(12, 5)), {"input_tokens": 12, "output_tokens": 5})

passthrough("system_prompt", {"model": MODEL, "messages": [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "Does Azure OpenAI support customer managed keys?"}]},
    completion({"role": "assistant", "content": "Yes, customer managed keys are supported by Azure OpenAI."}, usage=(29, 12)), {"input_tokens": 29, "output_tokens": 12})

weather = {"type": "function", "function": {"name": "get_current_weather", "parameters": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}}}
passthrough("tool_call_and_result", {"model": MODEL, "tools": [weather], "messages": [
        {"role": "user", "content": "What's the weather like in Boston?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_Ej8MRxo8lc1p6NZ9UYVZVzcK", "type": "function", "function": {"name": "get_current_weather", "arguments": "{\"location\":\"Boston, MA\"}"}}]},
        {"role": "tool", "tool_call_id": "call_Ej8MRxo8lc1p6NZ9UYVZVzcK", "content": "{\"temperature\": \"72\", \"unit\": \"fahrenheit\"}"}]},
    completion({"role": "assistant", "content": "It is 72°F in Boston."}, usage=(120, 9)), {"input_tokens": 120, "output_tokens": 9})

passthrough("tool_call_response", {"model": MODEL, "tools": [weather], "tool_choice": "required", "messages": [{"role": "user", "content": "What's the weather like in Boston?"}]},
    completion({"role": "assistant", "content": None, "tool_calls": [{"id": "call_Ej8MRxo8lc1p6NZ9UYVZVzcK", "type": "function", "function": {"name": "get_current_weather", "arguments": "{\"location\":\"Boston, MA\"}"}}]},
               finish="tool_calls", usage=(80, 17)), {"input_tokens": 80, "output_tokens": 17})

passthrough("image_input", {"model": MODEL, "messages": [{"role": "user", "content": [{"type": "text", "text": "Describe this picture:"},
        {"type": "image_url", "image_url": {"url": "https://learn.microsoft.com/azure/ai-services/computer-vision/media/quickstarts/presentation.png", "detail": "high"}}]}]},
    completion({"role": "assistant", "content": "A person presenting a chart."}, usage=(1120, 7)), {"input_tokens": 1120, "output_tokens": 7})

passthrough("stop_and_max_tokens_mapped_deployment", {"model": MODEL, "messages": [{"role": "user", "content": "Count to ten."}], "stop": ["7"], "max_tokens": 5},
    completion({"role": "assistant", "content": "1, 2, 3"}, finish="length", usage=(10, 5)), {"input_tokens": 10, "output_tokens": 5},
    config={"base_url": ENDPOINT + "/", "options": {"api_version": "2025-01-01-preview", "deployments": {MODEL: "prod-gpt4o-eastus"}}},
    deployment="prod-gpt4o-eastus", version="2025-01-01-preview")

passthrough("usage_with_cache_tokens", {"model": MODEL, "messages": [{"role": "user", "content": "Summarise the long shared prefix."}]},
    completion({"role": "assistant", "content": "Done."}, usage=(2048, 2), cached=1920), {"input_tokens": 2048, "output_tokens": 2, "cached_input_tokens": 1920})

embedding = {"data": [{"index": 0, "embedding": [-0.012838088, -0.007421397, -0.017617522], "object": "embedding"}], "usage": {"prompt_tokens": 4, "total_tokens": 4}, "model": "ada", "object": "list"}
passthrough("embeddings", {"model": "text-embedding-3-small", "input": "This is a test."}, embedding, {"input_tokens": 4},
    operation="embeddings", path="embeddings", deployment="text-embedding-3-small")

images = {"created": 1698116662, "data": [{"url": "https://dalleproduction.blob.core.windows.net/private/images/generated_00.png", "revised_prompt": "A painting of a dog in a field of flowers."}]}
passthrough("image_generations", {"model": "dall-e-3", "prompt": "In the style of WordArt, Microsoft Clippy wearing a cowboy hat.", "n": 1, "size": "1024x1024"}, images, {"images": 1},
    operation="image-generations", path="images/generations", deployment="dall-e-3")

def error(name, status, err, kind, code, message):
    passthrough(name, {"model": MODEL, "messages": [{"role": "user", "content": "Hi"}]}, {"error": err}, None, status=status,
        expected={"error": {"kind": kind, "message": message, "code": code, "param": err.get("param"), "upstream_status": status}})
error("error_deployment_not_found_404", 404, {"code": "DeploymentNotFound", "message": "The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."},
    "not-found", "DeploymentNotFound", "The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again.")
error("error_rate_limited_429", 429, {"code": "429", "message": "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds."},
    "rate-limited", "429", "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds.")
error("error_content_filter_400", 400, {"message": "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.", "type": None, "param": "prompt", "code": "content_filter", "status": 400},
    "invalid-request", "content_filter", "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.")
error("error_access_denied_401", 401, {"code": "401", "message": "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."},
    "authentication", "401", "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.")

def chunk(delta, finish=None, usage=None, choices=True):
    c = {"id": "chatcmpl-9lQ", "object": "chat.completion.chunk", "created": 1721000000, "model": "gpt-4o-2024-05-13", "system_fingerprint": "fp_abc"}
    c["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None,
                     "content_filter_results": {}}] if choices else []
    c["usage"] = usage
    return c
# Azure sends the prompt's filter results first, in a chunk with no choices and an empty id.
prompt_filter = {"choices": [], "created": 0, "id": "", "model": "", "object": "", "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {"hate": {"filtered": False, "severity": "safe"}}}]}
text_chunks = [prompt_filter, chunk({"role": "assistant", "content": ""}), chunk({"content": "Hé"}), chunk({"content": "llo 👋"}), chunk({}, "stop"),
               chunk(None, usage={"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12, "prompt_tokens_details": {"cached_tokens": 0}}, choices=False)]
body = {"model": MODEL, "messages": [{"role": "user", "content": "Say hello"}], "stream": True, "stream_options": {"include_usage": True}}
write("stream_text", {
    "request.json": {"operation": "chat-completions", "stream": True, "config": CONFIG, "body": body},
    "expected_upstream.json": {"method": "POST", "url": url("chat/completions"), "headers": dict(HEADERS, accept="text/event-stream"), "body": body},
    "upstream_stream.txt": "".join(f"data: {json.dumps(c)}\n\n" for c in text_chunks) + "data: [DONE]\n\n",
    "expected.json": {"events": text_chunks, "usage": {"input_tokens": 9, "output_tokens": 3}},
})
tool_chunks = [chunk({"role": "assistant", "content": None, "tool_calls": [{"index": 0, "id": "call_Ej8", "type": "function", "function": {"name": "get_current_weather", "arguments": ""}}]}),
               chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{\"location\""}}]}),
               chunk({"tool_calls": [{"index": 0, "function": {"arguments": ":\"Boston, MA\"}"}}]}),
               chunk({}, "tool_calls"),
               chunk(None, usage={"prompt_tokens": 80, "completion_tokens": 17, "total_tokens": 97}, choices=False)]
body = {"model": MODEL, "tools": [weather], "messages": [{"role": "user", "content": "Weather in Boston?"}], "stream": True, "stream_options": {"include_usage": True}}
write("stream_tool_call", {
    "request.json": {"operation": "chat-completions", "stream": True, "config": CONFIG, "body": body},
    "expected_upstream.json": {"method": "POST", "url": url("chat/completions"), "headers": dict(HEADERS, accept="text/event-stream"), "body": body},
    "upstream_stream.txt": "".join(f"data: {json.dumps(c)}\r\n\r\n" for c in tool_chunks) + "data: [DONE]\r\n\r\n",
    "expected.json": {"events": tool_chunks, "usage": {"input_tokens": 80, "output_tokens": 17}},
})

write("list_models_from_deployments", {
    "request.json": {"operation": "list-models", "config": {"base_url": ENDPOINT, "options": {"deployments": {"gpt-4o": "prod-4o", "text-embedding-3-small": "emb"}}}, "body": {}},
    "expected.json": {"body": {"object": "list", "data": [
        {"id": "gpt-4o", "object": "model", "created": 0, "owned_by": "azure-openai"},
        {"id": "text-embedding-3-small", "object": "model", "created": 0, "owned_by": "azure-openai"}]}, "usage": None},
})
write("reject_unsafe_deployment_name", {
    "request.json": {"operation": "chat-completions", "config": CONFIG, "body": {"model": "../../admin?x=", "messages": [{"role": "user", "content": "Hi"}]}},
    "expected.json": {"error": {"kind": "invalid-request", "message": "`../../admin?x=` is not a valid Azure deployment name; map it to one with the `deployments` option", "param": "model"}},
})
