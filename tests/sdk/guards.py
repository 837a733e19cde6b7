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


SCENARIOS = {"stream": stream, "messages-refused": messages_refused, "responses-refused": responses_refused}


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
