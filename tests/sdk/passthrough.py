"""Drives endpoints wasmgate does not model through its pass-through route with the official
`openai` Python SDK, pointed at `<gateway>/passthrough/openai`: fine-tuning jobs through the
SDK's raw-response wrapper, vector stores through its raw `client.post` / `client.get`, chat
completions (whole and streamed) whose usage the gateway records, an upstream 404 passed on, and
a key the gateway does not allow. Each request carries the `x-request-id` `pt-<scenario>`.

    python passthrough.py --base-url http://127.0.0.1:PORT/passthrough/openai --api-key KEY \
                          --denied-key KEY

Prints `ok <scenario>` for each scenario that holds; exits 1 at the first that does not."""

import argparse

import openai
from scenarios import Failed, check, request_ids, run

try:  # the HTTP client the pinned SDK is built on (`httpx2` from openai 3)
    import httpx2 as httpx
except ImportError:
    import httpx


rid = request_ids("pt")


def fine_tuning_create(client, args):
    raw = client.fine_tuning.jobs.with_raw_response.create(
        model="gpt-4o-mini-2024-07-18", training_file="file-abc", extra_headers=rid("fine_tuning_create"))
    check(raw.status_code == 200, "200", raw.status_code)
    check(raw.headers.get("x-wasmgate-provider") is None, "no gateway header spoofed", raw.headers)
    job = raw.parse()
    check(job.object == "fine_tuning.job" and job.id == "ftjob-mock1", "the job", job)
    check(job.training_file == "file-abc", "the training file the upstream got", job)


def fine_tuning_list(client, args):
    page = client.fine_tuning.jobs.list(limit=2, extra_headers=rid("fine_tuning_list"))
    check([j.id for j in page.data] == ["ftjob-mock1", "ftjob-mock2"], "two jobs", page.data)
    check(page.has_more is True, "more to come", page)


def fine_tuning_missing(client, args):
    try:
        client.fine_tuning.jobs.retrieve("ftjob-nope", extra_headers=rid("fine_tuning_missing"))
        raise Failed("an unknown job was found")
    except openai.NotFoundError as e:
        check("ftjob-nope" in e.body.get("message", ""), "the upstream's own error", e.body)


def vector_store_raw(client, args):
    response = client.post("/vector_stores", body={"name": "docs"}, cast_to=httpx.Response,
                           options={"headers": rid("vector_store_raw")})
    check(response.status_code == 200, "200", response.status_code)
    store = response.json()
    check(store["object"] == "vector_store" and store["name"] == "docs", "the store", store)
    listed = client.get("/vector_stores", cast_to=httpx.Response, options={"headers": rid("vector_store_list")})
    check(listed.json()["data"][0]["id"] == "vs_mock1", "the list", listed.json())


def chat_usage(client, args):
    raw = client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Pass me through"}],
        extra_headers=rid("chat_usage"))
    answer = raw.parse()
    check(answer.choices[0].message.content == "Passed.", "the answer", answer)
    check(answer.usage.prompt_tokens == 31, "the upstream's usage", answer.usage)


def chat_stream_usage(client, args):
    stream = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Pass me through"}], stream=True,
        stream_options={"include_usage": True}, extra_headers=rid("chat_stream_usage"))
    text, usage = [], None
    for chunk in stream:
        text.extend(c.delta.content or "" for c in chunk.choices)
        usage = chunk.usage or usage
    check("".join(text) == "Passed.", "the streamed text", text)
    check(usage is not None and usage.completion_tokens == 9, "the usage event", usage)


def denied(client, args):
    other = openai.OpenAI(base_url=args.base_url, api_key=args.denied_key, max_retries=0, timeout=30)
    try:
        other.fine_tuning.jobs.list(extra_headers=rid("denied"))
        raise Failed("a key without pass-through patterns got through")
    except openai.PermissionDeniedError as e:
        check(e.body.get("code") == "passthrough_not_allowed", "the refusal's code", e.body)


SCENARIOS = {
    "fine_tuning_create": fine_tuning_create,
    "fine_tuning_list": fine_tuning_list,
    "fine_tuning_missing": fine_tuning_missing,
    "vector_store_raw": vector_store_raw,
    "chat_usage": chat_usage,
    "chat_stream_usage": chat_stream_usage,
    "denied": denied,
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--api-key", required=True)
    parser.add_argument("--denied-key", required=True)
    args = parser.parse_args()
    run(SCENARIOS, args)


if __name__ == "__main__":
    main()
