"""Drives the Realtime API (wasmgate's `GET /v1/realtime?model=` upgraded) with the official
`openai` Python SDK, `client.realtime.connect(model=...)`, and checks what comes back:

- `text_turn`: `session.update` to text output, a user message, `response.create`: the text
  deltas make the answer, and `response.done` reports its usage.
- `audio_turn`: pcm16 audio appended and committed, `response.create` with audio output: audio
  deltas (base64 pcm16) and their transcript come back, and `response.done` reports audio tokens.

    python openai_realtime.py --base-url http://127.0.0.1:PORT/v1 --api-key KEY --model M
                              [--only text_turn,audio_turn]

Prints `ok <scenario>` for each scenario that holds, then `usage <json>` with each response's
usage (the ledger's records are checked against it); exits 1 at the first that does not hold."""

import argparse
import base64
import json
import math
import struct
import sys

import openai

# The most events one response may take before the scenario gives up on it.
MAX_EVENTS = 500


class Failed(Exception):
    pass


def check(condition, what, got=None):
    if not condition:
        raise Failed(f"{what} (got: {got!r})")


def tone(samples):
    """`samples` of a 440 Hz tone, pcm16 at 24 kHz, little-endian."""
    return b"".join(
        struct.pack("<h", int(math.sin(i / 24000 * 440 * 2 * math.pi) * 8000)) for i in range(samples)
    )


def until_done(connection):
    """The events of one response, up to its `response.done` (or an `error`)."""
    events = []
    for _ in range(MAX_EVENTS):
        event = connection.recv()
        events.append(event)
        if event.type in ("response.done", "error"):
            return events
    raise Failed("no response.done")


def text_turn(connection, usages):
    connection.session.update(session={"type": "realtime", "output_modalities": ["text"],
                                       "instructions": "Answer briefly."})
    connection.conversation.item.create(
        item={"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Say hello"}]}
    )
    connection.response.create()
    events = until_done(connection)
    last = events[-1]
    check(last.type == "response.done", "the response completed", last)
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    check(text.strip() != "", "text deltas came back", [e.type for e in events])
    usage = last.response.usage
    check(usage is not None and usage.output_tokens > 0, "response.done reports usage", usage)
    usages.append(usage.model_dump())


def audio_turn(connection, usages):
    pcm = tone(4800)
    for start in range(0, len(pcm), 3200):
        connection.input_audio_buffer.append(audio=base64.b64encode(pcm[start:start + 3200]).decode())
    connection.input_audio_buffer.commit()
    connection.response.create(response={"output_modalities": ["audio"]})
    events = until_done(connection)
    last = events[-1]
    check(last.type == "response.done", "the response completed", last)
    audio = b"".join(base64.b64decode(e.delta) for e in events if e.type == "response.output_audio.delta")
    check(len(audio) > 0 and len(audio) % 2 == 0, "pcm16 audio deltas came back", len(audio))
    transcript = "".join(e.delta for e in events if e.type == "response.output_audio_transcript.delta")
    check(transcript.strip() != "", "a transcript came back", [e.type for e in events])
    usage = last.response.usage
    details = usage.output_token_details
    check(details is not None and details.audio_tokens > 0, "audio output tokens are reported", usage)
    usages.append(usage.model_dump())


SCENARIOS = {"text_turn": text_turn, "audio_turn": audio_turn}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--api-key", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--only", default=",".join(SCENARIOS))
    args = parser.parse_args()
    client = openai.OpenAI(base_url=args.base_url, api_key=args.api_key, max_retries=0, timeout=30)
    usages = []
    with client.realtime.connect(model=args.model) as connection:
        first = connection.recv()
        if first.type != "session.created":
            print(f"FAILED session: the first event is {first.type}")
            sys.exit(1)
        for name in args.only.split(","):
            try:
                SCENARIOS[name](connection, usages)
            except Exception as error:  # noqa: BLE001 - reported, then the run fails
                print(f"FAILED {name}: {type(error).__name__}: {error}")
                sys.exit(1)
            print(f"ok {name}")
    print(f"usage {json.dumps(usages)}")


if __name__ == "__main__":
    main()
