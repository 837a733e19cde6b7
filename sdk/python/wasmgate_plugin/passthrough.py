"""Pass-through routes (``/passthrough/<entry>/<path>``): the credentials a provider adds to a
request the gateway does not model, and the usage read from the end of its answer.

The host streams the body both ways and hands the plugin only what it needs: the method, path
and headers to key, and at the end the answer whole (when small) or its tail. The reading of
usage mirrors the Rust SDK's ``passthrough::read_usage``, so a provider reports the same usage
whichever language it is written in.
"""

import json
from typing import Any

from wit_world.exports.provider import Metered, PassthroughAuth, PassthroughCall
from wit_world.imports.types import Usage

from .errors import ErrorKind, PluginError
from .openai import openai_usage

__all__ = ["Metered", "PassthroughAuth", "PassthroughCall", "read_usage", "unsupported", "with_default"]


def unsupported(entry: str) -> PluginError:
    """The refusal of a provider whose upstream cannot be passed through to (404)."""
    return PluginError(ErrorKind.NOT_FOUND, f"provider `{entry}` offers no pass-through route")


def with_default(auth: PassthroughAuth, call: PassthroughCall, name: str, value: str) -> PassthroughAuth:
    """Adds header ``name: value`` to ``auth`` unless the client sent one of that name (a version
    header the upstream requires, the client's own taking precedence)."""
    if not any(n.lower() == name.lower() for n, _ in call.headers):
        auth.headers.append((name, value))
    return auth


def read_usage(body: bytes, whole: bool) -> Metered | None:
    """The usage an answer reports, read the ways the common APIs write it: a JSON body's
    ``usage`` (OpenAI's Chat Completions and Responses, Anthropic's Messages) or
    ``usageMetadata`` (Google's), or the same in the last stream event that has one. ``body``
    may be a tail (``whole`` false): it is then read as events only, since a JSON body cut at
    its start cannot be parsed."""
    if whole:
        try:
            return _metered(json.loads(body))
        except ValueError:
            pass  # not one JSON document: a stream
    for line in reversed(body.decode("utf-8", "replace").splitlines()):
        if not line.startswith("data:"):
            continue
        try:
            event = json.loads(line[len("data:"):].strip())
        except ValueError:
            continue  # `[DONE]`, or an event cut at the tail's start
        metered = _metered(event)
        if metered is not None:
            return metered
    return None


def _metered(value: Any) -> Metered | None:
    """The usage of one JSON answer or event, and its model."""
    if not isinstance(value, dict):
        return None
    inner = value.get("response")  # a Responses stream's last event carries the response
    if isinstance(inner, dict) and "usage" in inner:
        value = inner
    usage = value.get("usage")
    if isinstance(usage, dict):
        counted = _anthropic_or_openai(usage)
    elif "usageMetadata" in value:
        counted = _gemini(value["usageMetadata"])
    else:
        message = value.get("message")  # Anthropic's `message_start` event
        counted = _anthropic_or_openai(message.get("usage")) if isinstance(message, dict) else None
    if counted is None:
        return None
    model = next((value[n] for n in ("model", "modelVersion") if isinstance(value.get(n), str)), None)
    return Metered(model, counted)


def _count(usage: dict, name: str) -> int | None:
    value = usage.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _anthropic_or_openai(usage: Any) -> Usage | None:
    """OpenAI's counts, or Anthropic's (whose cache reads and writes are apart from
    ``input_tokens``)."""
    counted = openai_usage(usage)
    if counted is None:
        return None
    read, write = _count(usage, "cache_read_input_tokens") or 0, _count(usage, "cache_creation_input_tokens") or 0
    if read + write > 0:
        counted.input_tokens += read + write
        counted.cached_input_tokens = read
        counted.cache_write_tokens = write
    return counted


def _gemini(usage: Any) -> Usage | None:
    """Google's ``usageMetadata``."""
    if not isinstance(usage, dict):
        return None
    inp, out = _count(usage, "promptTokenCount"), _count(usage, "candidatesTokenCount")
    if inp is None and out is None:
        return None
    thoughts = _count(usage, "thoughtsTokenCount") or 0
    cached = _count(usage, "cachedContentTokenCount") or 0
    return Usage(inp or 0, (out or 0) + thoughts, cached, 0, thoughts, 0, 0, 0, 0)
