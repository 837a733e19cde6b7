"""Chat Completions through wasmgate with the official `openai` Python SDK, its `api_key` a JWT
of a local identity provider; and a bad token, which the SDK must see refused as a 401. Each
request carries the `x-request-id` `jwt-<scenario>`, so that the test can read its ledger record.

    python openai_jwt.py --base-url http://127.0.0.1:PORT/v1 --api-key JWT --bad-key JWT

Prints `ok <scenario>` for each scenario that holds; exits 1 at the first that does not."""

import argparse

import openai
from scenarios import check, request_ids, run

rid = request_ids("jwt")
MESSAGES = [{"role": "user", "content": "hi"}]


def create(client, args):
    result = client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES,
                                            extra_headers=rid("create"))
    check(result.choices[0].message.content, "an answer", result)
    check(result.usage.prompt_tokens > 0, "usage", result.usage)


def stream(client, args):
    chunks = client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True,
                                            stream_options={"include_usage": True},
                                            extra_headers=rid("stream"))
    texts, usage = [], None
    for chunk in chunks:
        texts.extend(choice.delta.content or "" for choice in chunk.choices)
        usage = chunk.usage or usage
    check("".join(texts), "a streamed answer", texts)
    check(usage is not None, "the usage chunk", usage)


def refused(client, args):
    bad = openai.OpenAI(base_url=args.base_url, api_key=args.bad_key, max_retries=0, timeout=30)
    try:
        bad.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, extra_headers=rid("refused"))
    except openai.AuthenticationError as e:
        check(e.status_code == 401, "a 401", e.status_code)
        check(e.code == "invalid_token", "the code", e.code)
        check(args.bad_key.split(".")[1][:12] not in str(e), "no token text in the error", str(e))
        return
    raise AssertionError("the bad token was answered")


SCENARIOS = {"create": create, "stream": stream, "refused": refused}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--api-key", required=True)
    parser.add_argument("--bad-key", required=True)
    args = parser.parse_args()
    run(SCENARIOS, args)


if __name__ == "__main__":
    main()
