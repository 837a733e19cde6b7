"""Drives an OpenAI Responses API (the mock upstream, or wasmgate's /v1/responses) with the
official `openai` Python SDK and checks what comes back: create, stream, a function tool round
trip, a previous_response_id chain, the stateless shape Codex sends (store: false, the whole
conversation as input, include: ["reasoning.encrypted_content"]), retrieve, input_items and
delete, and a compaction (`responses.compact`) whose output the next turns take as input, on the
same target and on `--other-model`.

    python openai_responses.py --base-url http://127.0.0.1:PORT/v1 --api-key KEY --model M
                               --reasoning-model R [--other-model O] [--only create,stream,...]

Prints `ok <scenario>` for each scenario that holds; exits 1 at the first that does not."""

import argparse
import json
import sys
import uuid

import openai

WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather in a given city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city", "unit"],
        "additionalProperties": False,
    },
    "strict": True,
}


class Failed(Exception):
    pass


def check(condition, what, got=None):
    if not condition:
        raise Failed(f"{what} (got: {got!r})")


def items(response, kind):
    return [item for item in response.output if item.type == kind]


def check_usage(usage, where):
    check(usage is not None and usage.input_tokens > 0 and usage.output_tokens > 0, f"{where}: usage counted", usage)
    check(usage.total_tokens == usage.input_tokens + usage.output_tokens, f"{where}: total = input + output", usage)
    check(usage.input_tokens_details is not None and usage.output_tokens_details is not None,
          f"{where}: token details", usage)


def as_input(item):
    """An output item as the next request's input item: what the server sets alone goes."""
    data = item.model_dump(exclude_none=True)
    if data.get("type") == "reasoning":
        data.pop("status", None)
    return data


def create(client, args):
    response = client.responses.create(model=args.model, input="Say hello.", instructions="You are terse.")
    check(response.object == "response" and response.status == "completed", "a completed response", response)
    check(response.output_text, "output_text", response.output)
    check(items(response, "message"), "a message item", response.output)
    check_usage(response.usage, "create")


def stream(client, args):
    with client.responses.stream(model=args.model, input="Say hello.") as events:
        kinds, deltas, numbers = [], [], []
        for event in events:
            kinds.append(event.type)
            numbers.append(event.sequence_number)
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)
        final = events.get_final_response()
    check(kinds[0] == "response.created" and kinds[-1] == "response.completed", "created first, completed last", kinds)
    for kind in ["response.output_item.added", "response.content_part.added", "response.output_text.done",
                 "response.output_item.done"]:
        check(kind in kinds, f"a {kind} event", kinds)
    check(numbers == sorted(set(numbers)), "sequence numbers increasing", numbers)
    check(len(deltas) > 1 and "".join(deltas) == final.output_text, "the text streamed in deltas", (deltas, final.output_text))
    check_usage(final.usage, "stream")


def function_tools(client, args):
    first = client.responses.create(model=args.model, input="What is the weather in Paris?", tools=[WEATHER_TOOL])
    calls = items(first, "function_call")
    # Arguments as a JSON object (a translated target's mock may name other parameters).
    check(calls and calls[0].name == "get_weather" and json.loads(calls[0].arguments), "a call of get_weather", first.output)
    outputs = [{"type": "function_call_output", "call_id": c.call_id, "output": "18 degrees, cloudy"} for c in calls]
    # Chained to the stored call...
    second = client.responses.create(model=args.model, previous_response_id=first.id, input=outputs, tools=[WEATHER_TOOL])
    check(second.output_text and not items(second, "function_call"), "an answer after the call's output", second.output)
    # ...and stateless, the call sent back with its output.
    third = client.responses.create(
        model=args.model, tools=[WEATHER_TOOL],
        input=[{"role": "user", "content": "What is the weather in Paris?"}] + [as_input(c) for c in calls] + outputs)
    check(third.output_text, "an answer to the whole conversation", third.output)
    # Streamed, the arguments arrive in pieces.
    with client.responses.stream(model=args.model, input="And in Rome?", tools=[WEATHER_TOOL]) as events:
        pieces = [e.delta for e in events if e.type == "response.function_call_arguments.delta"]
        final = events.get_final_response()
    calls = items(final, "function_call")
    # Every call's arguments are the deltas joined; an upstream that streams whole calls (Gemini)
    # sends one delta per call, others several.
    check(calls and "".join(pieces) == "".join(c.arguments for c in calls) and len(pieces) >= len(calls),
          "streamed arguments", (pieces, final.output))
    # An output for a call that was never made is refused.
    try:
        client.responses.create(model=args.model, tools=[WEATHER_TOOL], input=[
            {"role": "user", "content": "Hi"},
            {"type": "function_call_output", "call_id": "call_never_made", "output": "x"}])
    except openai.BadRequestError:
        pass
    else:
        raise Failed("a function_call_output without its call was accepted")


def chain(client, args):
    first = client.responses.create(model=args.model, input="My name is Ada.")
    second = client.responses.create(model=args.model, previous_response_id=first.id, input="What is my name?")
    third = client.responses.create(model=args.model, previous_response_id=second.id, input="Spell it.")
    check(third.previous_response_id == second.id, "the chain's link", third.previous_response_id)
    check(third.usage.input_tokens > second.usage.input_tokens > first.usage.input_tokens,
          "each turn sees the ones before", [r.usage.input_tokens for r in (first, second, third)])
    if args.mock:
        check(third.output_text.endswith("(user turns: 3)"), "three user turns seen", third.output_text)
        check(third.usage.input_tokens_details.cached_tokens > 0, "the chain's prefix read from the cache", third.usage)
    try:
        client.responses.create(model=args.model, previous_response_id="resp_" + uuid.uuid4().hex, input="Hi")
    except openai.BadRequestError as error:
        check("previous_response" in str(error).lower() or "not found" in str(error), "the refusal names it", str(error))
    else:
        raise Failed("an unknown previous_response_id was accepted")


def stateless_reasoning(client, args):
    include = ["reasoning.encrypted_content"]
    conversation = [{"role": "user", "content": "What is the weather in Paris? Use the tool."}]
    first = client.responses.create(model=args.reasoning_model, input=conversation, store=False, include=include,
                                    tools=[WEATHER_TOOL], reasoning={"effort": "low", "summary": "auto"})
    reasoning = items(first, "reasoning")
    check(reasoning and reasoning[0].encrypted_content, "a reasoning item with encrypted_content", first.output)
    check(first.usage.output_tokens_details.reasoning_tokens > 0, "reasoning tokens counted", first.usage)
    calls = items(first, "function_call")
    check(calls, "a function call", first.output)
    conversation += [as_input(item) for item in first.output]
    conversation += [{"type": "function_call_output", "call_id": calls[0].call_id, "output": "18 degrees"}]
    second = client.responses.create(model=args.reasoning_model, input=conversation, store=False, include=include,
                                     tools=[WEATHER_TOOL])
    check(second.output_text, "an answer to the whole conversation", second.output)
    if args.mock:
        check(second.usage.input_tokens_details.cached_tokens > 0, "the resent prefix read from the cache", second.usage)
    # Nothing was stored.
    try:
        client.responses.retrieve(first.id)
    except openai.NotFoundError:
        pass
    else:
        raise Failed("a store: false response was kept")
    # Reasoning whose encrypted content was changed is refused.
    forged = [dict(item) for item in conversation]
    for item in forged:
        if item.get("type") == "reasoning":
            item["encrypted_content"] = "gAAAAAB" + "0" * 64
    try:
        client.responses.create(model=args.reasoning_model, input=forged, store=False, include=include, tools=[WEATHER_TOOL])
    except openai.BadRequestError:
        pass
    else:
        raise Failed("forged encrypted reasoning was accepted")


def stored(client, args):
    first = client.responses.create(model=args.model, input=[
        {"role": "user", "content": "First question."}, {"role": "user", "content": "Second question."}])
    again = client.responses.retrieve(first.id)
    check(again.id == first.id and again.output_text == first.output_text, "the stored response", again)
    listed = client.responses.input_items.list(first.id, order="asc")
    texts = [item.content[0].text for item in listed.data]
    check(texts == ["First question.", "Second question."], "the input items in order", texts)
    deleted = client.responses.delete(first.id)
    check(deleted is None or getattr(deleted, "deleted", True), "deleted", deleted)
    try:
        client.responses.retrieve(first.id)
    except openai.NotFoundError:
        pass
    else:
        raise Failed("a deleted response was still there")


def compact(client, args):
    conversation = [
        {"role": "user", "content": "My name is Ada."},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hello Ada."}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "I live in Paris."}]},
    ]
    compacted = client.responses.compact(model=args.model, input=conversation, instructions="You are terse.",
                                         extra_headers={"x-request-id": "sdk-compact"})
    check(compacted.object == "response.compaction" and compacted.id, "a compaction object", compacted)
    last = compacted.output[-1]
    check(last.type == "compaction" and last.encrypted_content, "a compaction item last", compacted.output)
    kept = [part.text for item in compacted.output if item.type == "message" for part in item.content]
    check(kept == ["My name is Ada.", "I live in Paris."], "the user messages kept, in order", kept)
    check_usage(compacted.usage, "compact")
    # The next turn takes the compacted output, then its new message, on this target and another.
    for n, model in enumerate([args.model, args.other_model or args.model]):
        following = [as_input(item) for item in compacted.output] + [{"role": "user", "content": "Where do I live?"}]
        answer = client.responses.create(model=model, input=following,
                                         extra_headers={"x-request-id": f"sdk-compact-turn-{n}"})
        check(answer.status == "completed" and answer.output_text, f"a turn after the compaction on {model}",
              answer.output)
    # Nothing to compact, and input that is not a conversation, are refused in OpenAI's error shape.
    for bad in ([], 42):
        try:
            client.responses.compact(model=args.model, input=bad)
        except openai.BadRequestError as error:
            check(error.status_code == 400 and isinstance(error.body, dict) and error.body.get("message")
                  and error.body.get("type") == "invalid_request_error", "OpenAI's error shape", error.body)
        else:
            raise Failed(f"a compaction of {bad!r} was accepted")


SCENARIOS = ["create", "stream", "function_tools", "chain", "stateless_reasoning", "stored", "compact"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--api-key", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--reasoning-model", required=True)
    parser.add_argument("--other-model", help="another target, for the turn after a compaction")
    parser.add_argument("--only", default=",".join(SCENARIOS))
    parser.add_argument("--mock", action="store_true", help="also check what only the mock promises")
    args = parser.parse_args()
    client = openai.OpenAI(base_url=args.base_url, api_key=args.api_key, max_retries=0, timeout=30)
    for name in args.only.split(","):
        try:
            if name not in SCENARIOS:
                raise Failed(f"no scenario {name}; there are {SCENARIOS}")
            globals()[name](client, args)
        except (Failed, openai.APIError) as error:
            print(f"FAIL {name}: {type(error).__name__}: {error}", file=sys.stderr)
            sys.exit(1)
        print(f"ok {name}", flush=True)


if __name__ == "__main__":
    main()
