"""OpenAI's wire format, which most upstreams share: error bodies, usage objects, pass-through
responses and streams, and an incremental Server-Sent-Events parser."""

import json
from dataclasses import dataclass
from typing import Any

from wit_world.exports.provider import Completion, Operation, StreamOutput
from wit_world.imports.types import ErrorKind, HttpResponse, Usage

from .errors import PluginError, kind_for_status

_SNIPPET = 200


def openai_error(status: int, body: bytes) -> PluginError:
    """A non-2xx upstream response as a :class:`PluginError` whose kind follows the status. Reads
    ``{"error": {"message", "param", "code"}}`` and the looser ``{"error": "..."}``,
    ``{"message": ...}``, ``{"detail": ...}``; else quotes the start of the body."""
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None

    def text(v: Any) -> str | None:
        if isinstance(v, str) and v:
            return v
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return str(v)
        return None

    message = param = code = None
    if isinstance(parsed, dict):
        error = parsed.get("error")
        if isinstance(error, dict):
            message, param, code = text(error.get("message")), text(error.get("param")), text(error.get("code"))
        elif isinstance(error, str) and error:
            message = error
        else:
            message = text(parsed.get("message")) or text(parsed.get("detail"))
    if message is None:
        snippet = " ".join(body.decode("utf-8", "replace").split())
        message = f"upstream returned HTTP {status}"
        if snippet:
            more = "…" if len(snippet) > _SNIPPET else ""
            message += f": {snippet[:_SNIPPET]}{more}"
        param = code = None
    return PluginError(kind_for_status(status), message, param=param, code=code, upstream_status=status)


def openai_usage(usage: Any) -> Usage | None:
    """An OpenAI ``usage`` object (``prompt_tokens``/``completion_tokens``, or the ``input_``/
    ``output_`` names; ``prompt_tokens_details.cached_tokens`` and
    ``completion_tokens_details.reasoning_tokens``) as :class:`Usage`."""
    if not isinstance(usage, dict):
        return None

    def count(*names: str) -> int | None:
        for n in names:
            v = usage.get(n)
            if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
                return v
        return None

    inp, out = count("prompt_tokens", "input_tokens"), count("completion_tokens", "output_tokens")
    if inp is None and out is None:
        return None
    cached = 0
    for name in ("prompt_tokens_details", "input_tokens_details"):
        details = usage.get(name)
        if isinstance(details, dict) and isinstance(details.get("cached_tokens"), int):
            cached = details["cached_tokens"]
            break
    reasoning = 0
    for name in ("completion_tokens_details", "output_tokens_details"):
        details = usage.get(name)
        if isinstance(details, dict) and isinstance(details.get("reasoning_tokens"), int):
            reasoning = details["reasoning_tokens"]
            break
    return Usage(inp or 0, out or 0, cached, 0, reasoning, 0, 0, 0, 0)


def parse_openai_response(operation: Operation, response: HttpResponse) -> Completion:
    """An upstream's OpenAI-format answer: an error status raises :func:`openai_error`, a success
    passes through unchanged with its usage read (images counted from ``data``)."""
    if not 200 <= response.status < 300:
        raise openai_error(response.status, response.body)
    try:
        body = response.body.decode()
        parsed = json.loads(body)
    except ValueError:
        raise PluginError(ErrorKind.UPSTREAM, "upstream answered with a body that is not JSON") from None
    usage = openai_usage(parsed.get("usage")) if isinstance(parsed, dict) else None
    if operation == Operation.IMAGE_GENERATIONS:
        data = parsed.get("data") if isinstance(parsed, dict) else None
        usage = usage or Usage(0, 0, 0, 0, 0, 0, 0, 0, 0)
        usage.images = len(data) if isinstance(data, list) else 0
    return Completion(body, usage)


@dataclass
class SseEvent:
    """One Server-Sent Event: its ``event`` name (if any) and its ``data`` lines joined by ``\\n``."""

    event: str | None
    data: str


class SseParser:
    """Splits a byte stream into Server-Sent Events, whatever the chunking (even inside a line or
    a UTF-8 sequence): a line is decoded only once its ``\\n`` has arrived."""

    def __init__(self) -> None:
        self._buffer = b""
        self._event: str | None = None
        self._data: list[str] = []

    def push(self, chunk: bytes) -> list[SseEvent]:
        """Takes the next bytes; returns the events they complete."""
        self._buffer += chunk
        events = []
        *lines, self._buffer = self._buffer.split(b"\n")
        for raw in lines:
            event = self._line(raw.rstrip(b"\r").decode("utf-8", "replace"))
            if event is not None:
                events.append(event)
        return events

    def finish(self) -> SseEvent | None:
        """The body ended: the last event, if it was not followed by a blank line."""
        if self._buffer:
            self._line(self._buffer.rstrip(b"\r").decode("utf-8", "replace"))
            self._buffer = b""
        return self._line("")

    def _line(self, line: str) -> SseEvent | None:
        if not line:
            if not self._data and self._event is None:
                return None
            event = SseEvent(self._event, "\n".join(self._data))
            self._event, self._data = None, []
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        return None


class OpenAiStream:
    """The decoder of an OpenAI-format stream: each ``data:`` event already is a canonical chunk
    and passes through; usage, errors and ``[DONE]`` are read on the way."""

    def __init__(self, entry: Any = None, request: Any = None, headers: Any = None) -> None:
        self._sse = SseParser()
        self._done = False
        self._usage: Usage | None = None

    def push(self, chunk: bytes) -> StreamOutput:
        return self._output(self._sse.push(chunk))

    def finish(self) -> StreamOutput:
        last = self._sse.finish()
        return self._output([last] if last else [])

    def _output(self, events: list[SseEvent]) -> StreamOutput:
        out = []
        for event in events:
            if self._done:
                break
            data = event.data.strip()
            if data == "[DONE]":
                self._done = True
                break
            if not data:
                continue
            try:
                chunk = json.loads(data)
            except ValueError:
                raise PluginError(ErrorKind.UPSTREAM, "upstream sent a stream event that is not JSON") from None
            error = chunk.get("error") if isinstance(chunk, dict) else None
            if event.event == "error" or error:
                detail = error if error is not None else chunk
                message = detail.get("message") if isinstance(detail, dict) else detail
                raise PluginError(ErrorKind.UPSTREAM, message if isinstance(message, str) else "upstream failed during the stream")
            if isinstance(chunk, dict):
                usage = openai_usage(chunk.get("usage"))
                if usage is not None:
                    self._usage = usage
            out.append(event.data)
        return StreamOutput(out, self._usage)
