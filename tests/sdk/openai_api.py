"""Drives the rest of OpenAI's API (moderations, legacy completions, audio) through wasmgate with
the official `openai` Python SDK and checks what comes back. Each request carries the
`x-request-id` `api-<scenario>`, so that the test can read its ledger record.

    python openai_api.py --base-url http://127.0.0.1:PORT/v1 --api-key KEY --out DIR
                         [--only moderation,completion,...]

Prints `ok <scenario>` for each scenario that holds; exits 1 at the first that does not."""

import argparse
import json
import os

import openai
from scenarios import Failed, check, request_ids, run

AUDIO = bytes(range(256)) * 64  # 16 KiB standing in for an mp3
TEXT = "Hello there. General Kenobi."


rid = request_ids("api")


def moderation(client, args):
    result = client.moderations.create(model="openai/omni-moderation-latest", input=["I like cats.", "Hi."],
                                       extra_headers=rid("moderation"))
    check(len(result.results) == 2, "one result per input", result)
    check(result.results[0].flagged is False, "not flagged", result.results[0])
    check(result.results[0].category_scores.violence < 0.01, "scores", result.results[0].category_scores)


def completion(client, args):
    result = client.completions.create(model="openai/gpt-3.5-turbo-instruct", prompt="Tell me a story",
                                       max_tokens=5, extra_headers=rid("completion"))
    check(result.object == "text_completion", "a text completion", result)
    check(result.choices[0].text == " Once upon a time", "the text", result.choices)
    check(result.usage.prompt_tokens == 10 and result.usage.completion_tokens == 20, "usage", result.usage)


def completion_stream(client, args):
    stream = client.completions.create(model="openai/gpt-3.5-turbo-instruct", prompt="Tell me a story",
                                       max_tokens=5, stream=True, stream_options={"include_usage": True},
                                       extra_headers=rid("completion_stream"))
    texts, usage = [], None
    for chunk in stream:
        check(chunk.object == "text_completion", "text_completion chunks", chunk)
        texts.extend(choice.text for choice in chunk.choices)
        usage = chunk.usage or usage
    check("".join(texts) == " Once upon a time", "the streamed text", texts)
    check(usage is not None and usage.completion_tokens == 20, "the usage chunk", usage)


def transcription(fmt):
    def run(client, args):
        result = client.audio.transcriptions.create(model="openai/whisper-1", file=("speech.mp3", AUDIO, "audio/mpeg"),
                                                    response_format=fmt, language="en",
                                                    timestamp_granularities=["segment"] if fmt == "verbose_json" else openai.NOT_GIVEN,
                                                    extra_headers=rid(f"transcription_{fmt}"))
        if fmt == "json":
            check(result.text == TEXT, "json: the text", result)
        elif fmt == "verbose_json":
            check(result.text == TEXT and abs(result.duration - 8.47) < 1e-9, "verbose_json: text and duration", result)
            check(len(result.segments) == 2 and result.segments[1].end == 8.47, "verbose_json: segments", result.segments)
        elif fmt == "text":
            check(isinstance(result, str) and result.strip() == TEXT, "text: the text", result)
        elif fmt == "srt":
            check(result == "1\n00:00:00,000 --> 00:00:03,200\nHello there.\n\n2\n00:00:03,200 --> 00:00:08,470\nGeneral Kenobi.\n\n",
                  "srt: the cues", result)
        elif fmt == "vtt":
            check(result.startswith("WEBVTT\n\n00:00:00.000 --> 00:00:03.200\nHello there.\n\n"), "vtt: the cues", result)
    return run


def transcription_tokens(client, args):
    result = client.audio.transcriptions.create(model="openai/gpt-4o-transcribe", file=("speech.mp3", AUDIO, "audio/mpeg"),
                                                response_format="text", extra_headers=rid("transcription_tokens"))
    check(isinstance(result, str) and result == TEXT, "gpt-4o-transcribe text", result)


def transcription_stream(client, args):
    stream = client.audio.transcriptions.create(model="openai/gpt-4o-transcribe", file=("speech.mp3", AUDIO, "audio/mpeg"),
                                                stream=True, extra_headers=rid("transcription_stream"))
    deltas, done = [], None
    for event in stream:
        if event.type == "transcript.text.delta":
            deltas.append(event.delta)
        elif event.type == "transcript.text.done":
            done = event
    check("".join(deltas) == TEXT, "the deltas make the text", deltas)
    check(done is not None and done.text == TEXT, "the done event", done)
    check(done.usage.input_tokens == 14 and done.usage.output_tokens == 45, "the usage", done.usage)


def translation(client, args):
    result = client.audio.translations.create(model="openai/whisper-1", file=("rede.mp3", AUDIO, "audio/mpeg"),
                                              extra_headers=rid("translation"))
    check(result.text == TEXT, "the translation", result)


def speech(client, args):
    path = os.path.join(args.out, "speech.mp3")
    with client.audio.speech.with_streaming_response.create(model="openai/tts-1", voice="alloy",
                                                            input="Hello from wasmgate.",
                                                            extra_headers=rid("speech")) as response:
        check(response.headers.get("content-type") == "audio/mpeg", "audio/mpeg", response.headers)
        response.stream_to_file(path)
    data = open(path, "rb").read()
    check(len(data) == 8 * 4096 and data[:4096] == b"\0" * 4096 and data[-1] == 7, "the audio as sent", len(data))


def errors(client, args):
    try:
        client.audio.transcriptions.create(model="openai/whisper-1", file=("speech.mp3", AUDIO, "audio/mpeg"),
                                           response_format="mp3")
        raise Failed("an unknown response_format was taken")
    except openai.BadRequestError as e:
        check(e.body.get("param") == "response_format", "the param at fault", e.body)
    try:
        client.completions.create(model="openai/gpt-3.5-turbo-instruct", prompt=None)
        raise Failed("a completion without a prompt was taken")
    except openai.BadRequestError as e:
        check(e.body.get("param") == "prompt", "the param at fault", e.body)


SCENARIOS = {
    "moderation": moderation,
    "completion": completion,
    "completion_stream": completion_stream,
    **{f"transcription_{fmt}": transcription(fmt) for fmt in ["json", "text", "srt", "verbose_json", "vtt"]},
    "transcription_tokens": transcription_tokens,
    "transcription_stream": transcription_stream,
    "translation": translation,
    "speech": speech,
    "errors": errors,
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--api-key", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--only")
    args = parser.parse_args()
    run(SCENARIOS, args, args.only.split(",") if args.only else None)


if __name__ == "__main__":
    main()
