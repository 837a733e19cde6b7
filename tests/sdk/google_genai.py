"""Drives Google's GenAI API (the Gemini mock upstream, or wasmgate's /v1beta routes) with the
official `google-genai` Python SDK and checks what comes back: generate, stream, a function
calling round trip (whole and streamed), count tokens, and embeddings (one and a batch).

    python google_genai.py --base-url http://127.0.0.1:PORT --api-key KEY --model M
                           --embedding-model E [--only generate,stream,...]

Prints `ok <scenario>` for each scenario that holds; exits 1 at the first that does not."""

import argparse
import sys

from google import genai
from google.genai import types

WEATHER = types.Tool(function_declarations=[types.FunctionDeclaration(
    name="get_weather",
    description="Get the current weather in a given city",
    parameters=types.Schema(
        type="OBJECT",
        properties={"city": types.Schema(type="STRING", description="The city")},
        required=["city"],
    ),
)])
NO_AUTOMATIC_CALLS = types.AutomaticFunctionCallingConfig(disable=True)


class Failed(Exception):
    pass


def check(condition, what, got=None):
    if not condition:
        raise Failed(f"{what} (got: {got!r})")


def check_usage(usage, where):
    check(usage is not None and (usage.prompt_token_count or 0) > 0, f"{where}: prompt tokens counted", usage)
    check((usage.total_token_count or 0) >= usage.prompt_token_count, f"{where}: a total", usage)


def generate(client, args):
    response = client.models.generate_content(
        model=args.model,
        contents="Tell me a one-line story about a backpack.",
        config=types.GenerateContentConfig(
            system_instruction="Be brief.", temperature=0.3, max_output_tokens=200,
            safety_settings=[types.SafetySetting(category="HARM_CATEGORY_HATE_SPEECH", threshold="BLOCK_NONE")],
        ),
    )
    check(response.text, "the answer has text", response)
    check(response.candidates[0].finish_reason == types.FinishReason.STOP, "it stopped", response.candidates[0].finish_reason)
    check_usage(response.usage_metadata, "generate")


def stream(client, args):
    chunks = list(client.models.generate_content_stream(
        model=args.model, contents="Tell me a one-line story about a backpack."))
    check(len(chunks) >= 2, "several chunks", len(chunks))
    text = "".join(chunk.text or "" for chunk in chunks)
    check(text, "the chunks carry text", chunks)
    check(chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP, "the last chunk stops", chunks[-1])
    check_usage(chunks[-1].usage_metadata, "stream")


def tools(client, args):
    config = types.GenerateContentConfig(tools=[WEATHER], automatic_function_calling=NO_AUTOMATIC_CALLS)
    question = types.Content(role="user", parts=[types.Part.from_text(text="What is the weather in Paris?")])
    first = client.models.generate_content(model=args.model, contents=[question], config=config)
    calls = first.function_calls
    check(calls, "the model calls a function", first)
    check(calls[0].name == "get_weather", "the declared function", calls[0])
    check(isinstance(calls[0].args, dict) and calls[0].args, "with its arguments", calls[0].args)
    answers = [types.Part.from_function_response(name=call.name, response={"temperature": 21, "unit": "celsius"})
               for call in calls]
    contents = [question, first.candidates[0].content, types.Content(role="user", parts=answers)]
    second = client.models.generate_content(model=args.model, contents=contents, config=config)
    check(second.text, "the model answers with the result", second)
    check(not second.function_calls, "and calls nothing more", second.function_calls)


def stream_tools(client, args):
    config = types.GenerateContentConfig(tools=[WEATHER], automatic_function_calling=NO_AUTOMATIC_CALLS)
    chunks = list(client.models.generate_content_stream(
        model=args.model, contents="What is the weather in Paris?", config=config))
    calls = [call for chunk in chunks for call in (chunk.function_calls or [])]
    check(calls and calls[0].name == "get_weather", "a streamed function call", chunks)
    check(isinstance(calls[0].args, dict) and calls[0].args, "whole, with its arguments", calls[0].args)


def count_tokens(client, args):
    counted = client.models.count_tokens(model=args.model, contents="How many tokens is this sentence?")
    check((counted.total_tokens or 0) > 0, "tokens counted", counted)


def embed(client, args):
    one = client.models.embed_content(model=args.embedding_model, contents="hello world")
    check(len(one.embeddings) == 1 and one.embeddings[0].values, "one embedding", one)
    batch = client.models.embed_content(model=args.embedding_model, contents=["first", "second"])
    check(len(batch.embeddings) == 2 and all(e.values for e in batch.embeddings), "two embeddings", batch)


SCENARIOS = {
    "generate": generate,
    "stream": stream,
    "tools": tools,
    "stream_tools": stream_tools,
    "count_tokens": count_tokens,
    "embed": embed,
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--api-key", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--embedding-model", required=True)
    parser.add_argument("--only", default=",".join(SCENARIOS))
    args = parser.parse_args()
    client = genai.Client(api_key=args.api_key, http_options=types.HttpOptions(base_url=args.base_url, timeout=60_000))
    for name in args.only.split(","):
        try:
            SCENARIOS[name](client, args)
        except Exception as error:  # noqa: BLE001 - every failure is reported the same way
            print(f"FAIL {name}: {type(error).__name__}: {error}", file=sys.stderr)
            sys.exit(1)
        print(f"ok {name}", flush=True)


if __name__ == "__main__":
    main()
