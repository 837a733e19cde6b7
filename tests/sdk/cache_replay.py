"""Sends each request twice through wasmgate's response cache with the official SDKs (`openai`
for Chat Completions and Responses, `anthropic` for Messages), and checks that the second answer
is a hit (`x-wasmgate-cache: hit`, with an `age`) the SDK parses as it parsed the live one: the
same text, tool calls, finish reason and usage; streamed requests replayed as streams.

    python cache_replay.py --base-url http://127.0.0.1:PORT --api-key KEY --chat-model M
                           --messages-model M [--only chat,chat_stream,...]

Prints `ok <scenario>` for each scenario that holds; exits 1 at the first that does not. Each
scenario's prompt is new (a uuid), so that its first request is a miss."""

import argparse
import sys
import uuid

import anthropic
import openai

TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


class Failed(Exception):
    pass


def check(condition, what, got=None):
    if not condition:
        raise Failed(f"{what} (got: {got!r})")


def outcomes(first, second):
    a, b = first.headers.get("x-wasmgate-cache"), second.headers.get("x-wasmgate-cache")
    check((a, b) == ("miss", "hit"), "a miss, then a hit", (a, b))
    check(second.headers.get("age") is not None, "a hit carries its age", dict(second.headers))


def prompt(what):
    return f"{what} ({uuid.uuid4()})"


def chat(client, model):
    messages = [{"role": "user", "content": prompt("Say hello")}]
    raw = [client.chat.completions.with_raw_response.create(model=model, messages=messages, temperature=0)
           for _ in range(2)]
    outcomes(*raw)
    a, b = (r.parse() for r in raw)
    check(a.model_dump() == b.model_dump(), "the same completion", (a, b))
    check(a.choices[0].message.content, "text", a)


def collect(stream):
    text, calls, finish, usage = "", {}, None, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage.model_dump()
        for choice in chunk.choices:
            text += choice.delta.content or ""
            for call in choice.delta.tool_calls or []:
                slot = calls.setdefault(call.index, {"name": "", "arguments": ""})
                if call.function.name:
                    slot["name"] += call.function.name
                slot["arguments"] += call.function.arguments or ""
            finish = choice.finish_reason or finish
    return text, calls, finish, usage


def chat_stream(client, model, tools=False):
    messages = [{"role": "user", "content": prompt("What is the weather in Paris?")}]
    extra = {"tools": [TOOL]} if tools else {}
    raw = [client.chat.completions.with_raw_response.create(
        model=model, messages=messages, stream=True, stream_options={"include_usage": True}, **extra)
        for _ in range(1)]
    first = collect(raw[0].parse())
    raw.append(client.chat.completions.with_raw_response.create(
        model=model, messages=messages, stream=True, stream_options={"include_usage": True}, **extra))
    outcomes(*raw)
    second = collect(raw[1].parse())
    check(first == second, "the same text, tool calls, finish and usage", (first, second))
    check(first[3] is not None and first[3]["total_tokens"] > 0, "usage in the stream", first)
    if tools:
        check(first[1] and first[2] == "tool_calls", "a tool call", first)
    else:
        check(first[0], "text", first)


def messages(client, model):
    body = {"model": model, "max_tokens": 64, "messages": [{"role": "user", "content": prompt("Hello")}]}
    raw = [client.messages.with_raw_response.create(**body) for _ in range(2)]
    outcomes(*raw)
    a, b = (r.parse() for r in raw)
    check(a.id != b.id, "each answer its own id", (a.id, b.id))
    check(a.content == b.content and a.usage == b.usage and a.stop_reason == b.stop_reason,
          "the same content, usage and stop reason", (a, b))


def shape(kinds):
    """The event types with each run of one type as one: a live stream splits its text into as
    many deltas as the upstream sent, a replay into one; the order is what the API defines."""
    # The Anthropic SDK's own events, one after each delta.
    kinds = [k for k in kinds if k not in ("text", "input_json", "thinking", "signature", "citation")]
    return [k for i, k in enumerate(kinds) if i == 0 or kinds[i - 1] != k]


def messages_stream(client, model):
    body = {"model": model, "max_tokens": 64, "messages": [{"role": "user", "content": prompt("Stream")}]}
    seen = []
    raw = []
    for _ in range(2):
        with client.messages.stream(**body) as stream:
            kinds = [event.type for event in stream]
            final = stream.get_final_message()
            raw.append(stream.response)
        seen.append((kinds, final))
    outcomes(*raw)
    (kinds_a, a), (kinds_b, b) = seen
    check(shape(kinds_a) == shape(kinds_b), "the same events in the same order", (kinds_a, kinds_b))
    check(a.content == b.content and a.usage == b.usage, "the same message", (a, b))


def responses(client, model):
    body = {"model": model, "input": prompt("Hello")}
    raw = [client.responses.with_raw_response.create(**body) for _ in range(2)]
    outcomes(*raw)
    a, b = (r.parse() for r in raw)
    check(a.id != b.id, "each answer its own id", (a.id, b.id))
    check(a.output_text == b.output_text and a.usage == b.usage, "the same text and usage", (a, b))
    # The hit is kept as a live answer is: it can be continued.
    follow = client.responses.create(model=model, input="And again?", previous_response_id=b.id)
    check(follow.previous_response_id == b.id, "the hit continues", follow)


def responses_stream(client, model):
    # The SDK's stream manager hides the headers: the caller counts the upstream calls.
    body = {"model": model, "input": prompt("Stream")}
    seen = []
    for _ in range(2):
        with client.responses.stream(**body) as stream:
            kinds = [event.type for event in stream]
            final = stream.get_final_response()
        seen.append((kinds, final))
    (kinds_a, a), (kinds_b, b) = seen
    check(shape(kinds_a) == shape(kinds_b), "the same events in the same order", (kinds_a, kinds_b))
    check(a.output_text == b.output_text and a.usage == b.usage, "the same text and usage", (a, b))
    check(a.id != b.id, "each answer its own id", (a.id, b.id))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--api-key", required=True)
    parser.add_argument("--chat-model", required=True)
    parser.add_argument("--messages-model", required=True)
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    oa = openai.OpenAI(base_url=args.base_url + "/v1", api_key=args.api_key, max_retries=0)
    an = anthropic.Anthropic(base_url=args.base_url, api_key=args.api_key, max_retries=0)
    scenarios = {
        "chat": lambda: chat(oa, args.chat_model),
        "chat_stream": lambda: chat_stream(oa, args.chat_model),
        "chat_stream_tools": lambda: chat_stream(oa, args.chat_model, tools=True),
        "messages": lambda: messages(an, args.messages_model),
        "messages_stream": lambda: messages_stream(an, args.messages_model),
        "responses": lambda: responses(oa, args.chat_model),
        "responses_stream": lambda: responses_stream(oa, args.chat_model),
    }
    only = [s for s in args.only.split(",") if s] or list(scenarios)
    for name in only:
        try:
            scenarios[name]()
        except Failed as e:
            print(f"FAILED {name}: {e}")
            sys.exit(1)
        print(f"ok {name}")


if __name__ == "__main__":
    main()
