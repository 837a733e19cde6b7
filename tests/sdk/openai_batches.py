"""Drives OpenAI's Files and Batch APIs through wasmgate with the official `openai` Python SDK.

    python openai_batches.py --base-url http://127.0.0.1:PORT/v1 --api-key KEY
        --scenario NAME [--lines N] [--other-key KEY] [--restricted-key KEY] [--file PATH]

Scenarios:
- `batch`: uploads N lines (the 7th and every 250th say `fail`), runs the batch to its end,
  reads its output and error files; prints `batch <id>` and `custom <id> <max_tokens>` for each
  line that succeeded, for the test to check the ledger against.
- `cancel`: a batch of 10 lines cancelled while in progress: `cancelled`, half its lines run.
- `isolation`: another project's key gets 404 for this project's file and batch.
- `refused`: a line for a model the restricted key may not use is refused with its number.
- `big`: uploads --file (purpose `user_data`) and downloads it back to `<file>.back`.
- `claude`: as `batch`, for --model (a Claude model run on Anthropic's Message Batches): a
  `custom_id` Anthropic refuses is refused with its line number first; the lifecycle is
  `in_progress → completed`, and each output line's body is a `chat.completion`.
- `claude_cancel`: as `cancel`, for --model.

Prints `ok <scenario>` when it holds; exits 1 when it does not."""

import argparse
import io
import json
import sys

import openai

MODEL = "openai/gpt-4o"


class Failed(Exception):
    pass


def check(condition, what, got=None):
    if not condition:
        raise Failed(f"{what} (got: {got!r})")


def lines_of(n, model=MODEL):
    out = []
    for i in range(n):
        content = "fail" if i == 6 or (i > 0 and i % 250 == 0) else f"question {i}"
        out.append(json.dumps({
            "custom_id": f"req-{i}",
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": {"model": model, "max_tokens": 1 + i % 50,
                     "messages": [{"role": "user", "content": content}]},
        }))
    return "\n".join(out) + "\n"


def run_to_end(client, batch):
    seen = [batch.status]
    for _ in range(20):
        batch = client.batches.retrieve(batch.id)
        if batch.status != seen[-1]:
            seen.append(batch.status)
        if batch.status in ("completed", "failed", "expired", "cancelled"):
            return batch, seen
    raise Failed(f"the batch did not end: {seen}")


def scenario_batch(client, args):
    data = lines_of(args.lines).encode()
    uploaded = client.files.create(file=("input.jsonl", io.BytesIO(data)), purpose="batch")
    check(uploaded.id.startswith("file-") and uploaded.purpose == "batch", "a batch file", uploaded)
    check(uploaded.bytes == len(data), "the bytes uploaded", uploaded.bytes)
    check(client.files.retrieve(uploaded.id).id == uploaded.id, "retrieved", uploaded.id)
    listed = [f.id for f in client.files.list(purpose="batch")]
    check(uploaded.id in listed, "listed", listed)

    batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                  completion_window="24h")
    check(batch.id.startswith("batch_") and batch.status == "validating", "created", batch)
    check(batch.input_file_id == uploaded.id, "the gateway's file id", batch.input_file_id)
    batch, seen = run_to_end(client, batch)
    check(seen == ["validating", "in_progress", "finalizing", "completed"], "the lifecycle", seen)

    output = client.files.content(batch.output_file_id).text.splitlines()
    failed = [i for i in range(args.lines) if i == 6 or (i > 0 and i % 250 == 0)]
    check(len(output) == args.lines - len(failed), "one output line per success", len(output))
    errors = client.files.content(batch.error_file_id).text.splitlines()
    check(len(errors) == len(failed), "one error line per failure", len(errors))
    check(json.loads(errors[0])["custom_id"] == "req-6", "the error file", errors[0])

    page = client.batches.list(limit=1)
    check(len(page.data) == 1 and page.data[0].id == batch.id, "the newest batch first", page.data)

    # Files oldest first too (`order=asc`), paged one at a time: the SDK's pagination sends the
    # order again with each `after`.
    later = client.files.create(file=("later.txt", io.BytesIO(b"later")), purpose="user_data")
    asc = [f.id for f in client.files.list(order="asc", limit=1)]
    desc = [f.id for f in client.files.list(limit=1)]
    check(len(asc) >= 2 and asc == desc[::-1], "files oldest first, the newest-first list reversed",
          (asc, desc))
    check(asc.index(uploaded.id) < asc.index(later.id) and desc[0] == later.id, "by creation", asc)
    try:
        client.files.list(order="sideways")
        raise Failed("an unknown order was accepted")
    except openai.BadRequestError as e:
        check(e.body.get("param") == "order", "an unknown order names its parameter", e.body)

    print(f"batch {batch.id}")
    for line in output:
        line = json.loads(line)
        i = int(line["custom_id"].split("-")[1])
        print(f"custom {line['custom_id']} {1 + i % 50}")


def scenario_cancel(client, args):
    data = lines_of(10).encode()
    uploaded = client.files.create(file=("small.jsonl", data), purpose="batch")
    batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                  completion_window="24h")
    batch = client.batches.retrieve(batch.id)
    check(batch.status == "in_progress", "in progress", batch.status)
    batch = client.batches.cancel(batch.id)
    check(batch.status == "cancelling", "cancelling", batch.status)
    batch, seen = run_to_end(client, batch)
    check(seen[-1] == "cancelled", "cancelled", seen)
    output = client.files.content(batch.output_file_id).text.splitlines()
    check(len(output) == 5, "the lines run before the cancel", len(output))
    print(f"batch {batch.id}")


def scenario_isolation(client, args):
    uploaded = client.files.create(file=("mine.jsonl", lines_of(3).encode()), purpose="batch")
    batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                  completion_window="24h")
    other = openai.OpenAI(base_url=args.base_url, api_key=args.other_key, max_retries=0)
    for call in (lambda: other.files.retrieve(uploaded.id),
                 lambda: other.files.content(uploaded.id),
                 lambda: other.files.delete(uploaded.id),
                 lambda: other.batches.retrieve(batch.id),
                 lambda: other.batches.cancel(batch.id),
                 lambda: other.batches.create(input_file_id=uploaded.id,
                                              endpoint="/v1/chat/completions",
                                              completion_window="24h")):
        try:
            call()
        except openai.NotFoundError as e:
            check("No such" in str(e), "OpenAI's wording", str(e))
            continue
        raise Failed("another project's id was found")
    check(other.batches.list().data == [], "another project lists none", other.batches.list())
    check(client.files.retrieve(uploaded.id).id == uploaded.id, "still the owner's", uploaded.id)
    deleted = client.files.delete(uploaded.id)
    check(deleted.deleted is True, "deleted", deleted)
    try:
        client.files.retrieve(uploaded.id)
        raise Failed("a deleted file was found")
    except openai.NotFoundError:
        pass


def scenario_refused(client, args):
    restricted = openai.OpenAI(base_url=args.base_url, api_key=args.restricted_key, max_retries=0)
    lines = lines_of(5).splitlines()
    bad = json.loads(lines[2])
    bad["body"]["model"] = "openai/gpt-4o-mini"
    lines[2] = json.dumps(bad)
    data = ("\n".join(lines) + "\n").encode()
    try:
        restricted.files.create(file=("refused.jsonl", data), purpose="batch")
        raise Failed("a line for a model the key may not use was accepted")
    except openai.BadRequestError as e:
        check(e.status_code == 400, "400", e.status_code)
        error = e.body if isinstance(e.body, dict) else {}
        check(error.get("code") == "invalid_batch_line", "the code", error)
        check(error.get("message", "").startswith("Line 3 "), "the line number", error)
        check("gpt-4o-mini" in error.get("message", ""), "the model", error)
    # The same file with every line allowed goes through.
    uploaded = restricted.files.create(file=("allowed.jsonl", lines_of(5).encode()), purpose="batch")
    check(uploaded.purpose == "batch", "accepted", uploaded)


def scenario_big(client, args):
    with open(args.file, "rb") as f:
        uploaded = client.files.create(file=f, purpose="user_data")
    check(uploaded.purpose == "user_data", "uploaded", uploaded)
    with client.files.with_streaming_response.content(uploaded.id) as response:
        response.stream_to_file(args.file + ".back")
    print(f"file {uploaded.id} {uploaded.bytes}")


def scenario_claude(client, args):
    bad = lines_of(3, args.model).splitlines()
    line = json.loads(bad[1])
    line["custom_id"] = "req 1"
    bad[1] = json.dumps(line)
    try:
        client.files.create(file=("bad.jsonl", ("\n".join(bad) + "\n").encode()), purpose="batch")
        raise Failed("a custom_id Anthropic refuses was accepted")
    except openai.BadRequestError as e:
        error = e.body if isinstance(e.body, dict) else {}
        check(error.get("message", "").startswith("Line 2 "), "the line number", error)
        check("custom_id" in error.get("message", ""), "what is wrong", error)

    data = lines_of(args.lines, args.model).encode()
    uploaded = client.files.create(file=("claude.jsonl", io.BytesIO(data)), purpose="batch")
    check(uploaded.bytes == len(data), "the bytes uploaded", uploaded.bytes)
    held = client.files.content(uploaded.id).text.splitlines()
    check(len(held) == args.lines, "the held requests", len(held))
    first = json.loads(held[0])
    check(set(first) == {"custom_id", "params"}, "a Message Batches request", first)
    check(first["params"]["max_tokens"] == 1, "translated params", first)

    batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                  completion_window="24h")
    check(batch.id.startswith("batch_") and batch.status == "in_progress", "created", batch)
    check(batch.input_file_id == uploaded.id, "the gateway's file id", batch.input_file_id)
    check(batch.request_counts.total == args.lines, "the counts", batch.request_counts)
    batch, seen = run_to_end(client, batch)
    check(seen == ["in_progress", "completed"], "the lifecycle", seen)
    failed = [i for i in range(args.lines) if i == 6 or (i > 0 and i % 250 == 0)]
    counts = batch.request_counts
    check((counts.total, counts.completed, counts.failed)
          == (args.lines, args.lines - len(failed), len(failed)), "the final counts", counts)

    output = client.files.content(batch.output_file_id).text.splitlines()
    check(len(output) == args.lines - len(failed), "one output line per success", len(output))
    one = json.loads(output[0])
    check(one["response"]["status_code"] == 200, "a success", one)
    body = one["response"]["body"]
    check(body["object"] == "chat.completion", "a chat completion", body)
    check(body["choices"][0]["message"]["content"] == "Answer to req-0.", "the answer", body)
    errors = client.files.content(batch.error_file_id).text.splitlines()
    check(len(errors) == len(failed), "one error line per failure", len(errors))
    error = json.loads(errors[0])
    check(error["custom_id"] == "req-6" and error["response"]["status_code"] == 400,
          "the error file", error)

    print(f"batch {batch.id}")
    for line in output:
        line = json.loads(line)
        i = int(line["custom_id"].split("-")[1])
        print(f"custom {line['custom_id']} {1 + i % 50}")


def scenario_claude_cancel(client, args):
    uploaded = client.files.create(file=("small.jsonl", lines_of(10, args.model).encode()),
                                   purpose="batch")
    batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                  completion_window="24h")
    check(batch.status == "in_progress", "in progress", batch.status)
    batch = client.batches.cancel(batch.id)
    check(batch.status == "cancelling", "cancelling", batch.status)
    batch, seen = run_to_end(client, batch)
    check(seen[-1] == "cancelled", "cancelled", seen)
    check(batch.request_counts.completed == 5, "half run", batch.request_counts)
    output = client.files.content(batch.output_file_id).text.splitlines()
    check(len(output) == 5, "the lines run before the cancel", len(output))
    errors = [json.loads(l) for l in client.files.content(batch.error_file_id).text.splitlines()]
    check(len(errors) == 5 and all(e["error"]["code"] == "batch_cancelled" for e in errors),
          "the lines not run", errors)
    print(f"batch {batch.id}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--api-key", required=True)
    parser.add_argument("--scenario", required=True)
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--other-key")
    parser.add_argument("--restricted-key")
    parser.add_argument("--file")
    parser.add_argument("--model", default=MODEL)
    args = parser.parse_args()
    client = openai.OpenAI(base_url=args.base_url, api_key=args.api_key, max_retries=0,
                           timeout=600)
    try:
        globals()[f"scenario_{args.scenario}"](client, args)
    except (Failed, openai.APIError) as e:
        print(f"FAILED {args.scenario}: {e}", file=sys.stderr)
        sys.exit(1)
    print(f"ok {args.scenario}")


if __name__ == "__main__":
    main()
