"""Drives wasmgate's guards with the official SDKs (tests/guards.rs):

    python guards.py --base-url http://127.0.0.1:PORT --api-key KEY --scenario S [--model M]
                     [--prompt P] [--expect E]

Scenarios:
- `stream`: the `openai` SDK streams a chat completion of --prompt from --model; the text it
  assembles must be --expect exactly, from more than one content delta, ending with `stop`.
- `messages-refused`: the `anthropic` SDK sends --prompt to /v1/messages; it must be refused
  with HTTP 400 and Anthropic's own error shape (`invalid_request_error`).
- `responses-refused`: the `openai` SDK sends --prompt to /v1/responses; it must be refused with
  HTTP 400 and OpenAI's error object, code `guard_refused`.
- `messages-native`: the `anthropic` SDK sends --prompt to --model (an Anthropic target) with
  thinking on, `metadata` and a cached system block, whole and streamed: each answer must begin
  with a signed thinking block whose text is --expect; then a second turn sends the streamed
  answer back, thinking block and signature included, which the upstream checks.

Prints `ok <scenario>` when it holds; exits 1 when it does not."""

import argparse
import sys

import anthropic
import openai


class Failed(Exception):
    pass


def check(condition, what, got=None):
    if not condition:
        raise Failed(f"{what} (got: {got!r})")


def stream(args):
    client = openai.OpenAI(base_url=args.base_url + "/v1", api_key=args.api_key, max_retries=0)
    text, deltas, finish = "", 0, None
    with client.chat.completions.create(
        model=args.model,
        messages=[{"role": "user", "content": args.prompt}],
        stream=True,
        stream_options={"include_usage": True},
    ) as events:
        for chunk in events:
            for choice in chunk.choices:
                if choice.delta.content:
                    text += choice.delta.content
                    deltas += 1
                if choice.finish_reason:
                    finish = choice.finish_reason
    check(text == args.expect, "the streamed text", text)
    check(deltas > 1, "more than one content delta", deltas)
    check(finish == "stop", "finish_reason stop", finish)


def messages_refused(args):
    client = anthropic.Anthropic(base_url=args.base_url, api_key=args.api_key, max_retries=0)
    try:
        client.messages.create(
            model=args.model, max_tokens=64, messages=[{"role": "user", "content": args.prompt}]
        )
    except anthropic.BadRequestError as e:
        body = e.body or {}
        check(e.status_code == 400, "status 400", e.status_code)
        check(body.get("type") == "error", "Anthropic's error envelope", body)
        check(body.get("error", {}).get("type") == "invalid_request_error", "Anthropic's error type", body)
        check("guard" in body.get("error", {}).get("message", ""), "the message names the guard", body)
        return
    raise Failed("the request was not refused")


def responses_refused(args):
    client = openai.OpenAI(base_url=args.base_url + "/v1", api_key=args.api_key, max_retries=0)
    try:
        client.responses.create(model=args.model, input=args.prompt)
    except openai.BadRequestError as e:
        check(e.status_code == 400, "status 400", e.status_code)
        check(e.code == "guard_refused", "OpenAI's error code", e.body)
        check(e.type == "invalid_request_error", "OpenAI's error type", e.body)
        return
    raise Failed("the request was not refused")


def messages_native(args):
    client = anthropic.Anthropic(base_url=args.base_url, api_key=args.api_key, max_retries=0)
    request = dict(
        model=args.model,
        max_tokens=2048,
        thinking={"type": "enabled", "budget_tokens": 1024},
        metadata={"user_id": "sdk-user"},
        system=[{"type": "text", "text": "Answer briefly.", "cache_control": {"type": "ephemeral"}}],
    )
    messages = [{"role": "user", "content": args.prompt}]
    whole = client.messages.create(messages=messages, **request)
    with client.messages.stream(messages=messages, **request) as events:
        streamed = events.get_final_message()
    for answer in (whole, streamed):
        first = answer.content[0]
        check(first.type == "thinking", "a thinking block first", answer.content)
        check(first.thinking == args.expect, "the thinking text", first.thinking)
        check(bool(first.signature), "its signature", first)
        check(any(b.type == "text" and b.text for b in answer.content), "a text block", answer.content)
    turn = messages + [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in streamed.content]},
        {"role": "user", "content": "And again?"},
    ]
    again = client.messages.create(messages=turn, **request)
    check(again.content[0].type == "thinking", "the second turn answered", again.content)


SCENARIOS = {"stream": stream, "messages-native": messages_native, "messages-refused": messages_refused, "responses-refused": responses_refused}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--api-key", required=True)
    parser.add_argument("--scenario", required=True, choices=SCENARIOS)
    parser.add_argument("--model", default="openai/gpt-4o-mini")
    parser.add_argument("--prompt", default="")
    parser.add_argument("--expect", default="")
    args = parser.parse_args()
    try:
        SCENARIOS[args.scenario](args)
    except Failed as e:
        print(f"FAILED {args.scenario}: {e}")
        sys.exit(1)
    print(f"ok {args.scenario}")


if __name__ == "__main__":
    main()
