"""Guard plugins: a content policy on requests before they leave and on answers as they come
back, streamed or whole.

A guard subclasses :class:`Guard`, names its options dataclass in ``Options``, may override
``check_request`` (return :func:`allow`, :func:`rewrite` or :func:`refuse`), and names in
``Answer`` a class that guards one answer: ``push(events)`` returns :func:`release` (the events
to send now; the rest is held) or :func:`stop`, and ``finish()`` releases what is held::

    from dataclasses import dataclass
    from wasmgate_plugin.guard import Guard, PassAnswers, allow, export, refuse, request_texts

    @dataclass
    class Options:
        words: list[str]

    class Words(Guard):
        Options = Options
        Answer = PassAnswers

        def check_request(self, options, request):
            texts = request_texts(request)
            if any(w in t for t in texts for w in options.words):
                return refuse("this topic is not allowed here")
            return allow()

    export(Words)

The request is Chat Completions JSON (text); events are ``AnswerEvent_Text``,
``AnswerEvent_ToolCall``, ``AnswerEvent_Usage`` and ``AnswerEvent_Stop``. See ``wit/guard.wit``.

A guard that needs an outside verdict returns :func:`consult` (a JSON body the host POSTs to
the entry's ``endpoint``; plugins get no sockets) from ``check_request`` or an answer guard's
``push``/``finish``; the host then calls ``check_request_reply(options, request, context,
reply)`` or the answer guard's ``reply(reply)``, where ``reply`` is
``ConsultReply_Answered((status, body))`` or ``ConsultReply_Failed(reason)``.
"""

import base64
import json
import urllib.parse
from typing import Any, Generic, TypeVar

from wit_world.exports.guard import (
    AnswerEvent,
    AnswerEvent_Stop,
    AnswerEvent_Text,
    AnswerEvent_ToolCall,
    AnswerEvent_Usage,
    Consult,
    ConsultReply,
    ConsultReply_Answered,
    ConsultReply_Failed,
    Finding,
    GuardInfo,
    Refusal,
    Release,
    RequestVerdict,
    RequestVerdict_Allow,
    RequestVerdict_Consult,
    RequestVerdict_Refuse,
    RequestVerdict_Rewrite,
    Rewrite,
    Stop,
    StreamVerdict,
    StreamVerdict_Consult,
    StreamVerdict_Release,
    StreamVerdict_Stop,
    TextDelta,
    ToolCallDelta,
)

from . import _export
from ._host import count_tokens, log
from .options import ConfigError, NoOptions, parse_options

__all__ = [
    "AnswerEvent", "AnswerEvent_Stop", "AnswerEvent_Text", "AnswerEvent_ToolCall",
    "AnswerEvent_Usage", "ConfigError", "ConsultReply", "ConsultReply_Answered",
    "ConsultReply_Failed", "Finding", "Guard", "PassAnswers", "RequestVerdict",
    "RequestVerdict_Allow", "RequestVerdict_Refuse", "RequestVerdict_Rewrite", "Stop",
    "StreamVerdict", "StreamVerdict_Release", "StreamVerdict_Stop", "TextDelta", "ToolCallDelta",
    "allow", "consult", "consult_answer", "count_tokens", "export", "log", "refuse", "release", "request_texts", "rewrite",
    "stop", "text", "validate",
]

O = TypeVar("O")


class PassAnswers:
    """An answer guard that releases every event as it comes: for guards of requests only."""

    def __init__(self, options: Any, request: str):
        pass

    def push(self, events: list[AnswerEvent]) -> StreamVerdict:
        return release(events)

    def finish(self) -> StreamVerdict:
        return release([])


class Guard(Generic[O]):
    """A guard plugin. Override :meth:`check_request`; name the answer guard in ``Answer``."""

    #: The dataclass the entry's ``options`` are read into, checked when the config loads.
    Options: type = NoOptions
    #: The class that guards one answer: ``Answer(options, request)``, ``push``, ``finish``.
    Answer: type = PassAnswers

    def validate(self, options: O) -> int:
        """Checks the options once, when the config loads (raise :class:`ConfigError` to refuse
        them), and returns the most text the answer guard holds back. The default: 0."""
        return 0

    def check_request(self, options: O, request: str) -> RequestVerdict:
        """Allows, rewrites or refuses a request (Chat Completions JSON). The default allows."""
        return allow()

    def check_request_reply(self, options: O, request: str, context: str, reply: ConsultReply) -> RequestVerdict:
        """The check of ``request`` once the outside call :func:`consult` asked for came back
        (``context`` is the consult's own; it may run on another instance). A guard that
        consults overrides this; the default fails the request closed."""
        raise RuntimeError("this guard asked for an outside call it does not take the reply of")


def _findings(findings: dict[str, int] | None) -> list[Finding]:
    return [Finding(kind, int(n)) for kind, n in (findings or {}).items()]


def allow(findings: dict[str, int] | None = None) -> RequestVerdict:
    """Sends the request on as it is, recording ``findings`` (kind: count)."""
    return RequestVerdict_Allow(_findings(findings))


def rewrite(body: str, findings: dict[str, int] | None = None) -> RequestVerdict:
    """Sends ``body`` (Chat Completions JSON) instead."""
    return RequestVerdict_Rewrite(Rewrite(body, _findings(findings)))


def refuse(reason: str, status: int = 400, findings: dict[str, int] | None = None) -> RequestVerdict:
    """Refuses the request with ``reason`` and ``status``, in the client's own error shape."""
    return RequestVerdict_Refuse(Refusal(reason, status, _findings(findings)))


def release(events: list[AnswerEvent], held_chars: int = 0, findings: dict[str, int] | None = None) -> StreamVerdict:
    """Sends ``events`` now; the guard holds ``held_chars`` of text (at most what it declared)."""
    return StreamVerdict_Release(Release(list(events), int(held_chars), _findings(findings)))


def stop(reason: str, findings: dict[str, int] | None = None) -> StreamVerdict:
    """Ends the answer here, with the client's API's own error."""
    return StreamVerdict_Stop(Refusal(reason, 400, _findings(findings)))


def consult(body: Any, context: str = "") -> Any:
    """Asks the host to POST ``body`` (JSON text, or a value to serialise) to the entry's
    ``endpoint`` first; valid as a request verdict and as a stream verdict (see the module)."""
    text_body = body if isinstance(body, str) else json.dumps(body)
    return _Consult(Consult(text_body, context))


class _Consult:
    """A consult, made the request or stream verdict by the adapter that returns it."""

    def __init__(self, call: Consult):
        self.call = call


def _request_verdict(verdict: Any) -> RequestVerdict:
    return RequestVerdict_Consult(verdict.call) if isinstance(verdict, _Consult) else verdict


def _stream_verdict(verdict: Any) -> StreamVerdict:
    return StreamVerdict_Consult(verdict.call) if isinstance(verdict, _Consult) else verdict


def consult_answer(reply: ConsultReply) -> tuple[int, Any] | None:
    """The status and JSON body of an endpoint's answer; ``None`` when the call failed (and the
    entry said to let the check through)."""
    if isinstance(reply, ConsultReply_Answered):
        status, body = reply.value
        try:
            return status, json.loads(body)
        except ValueError:
            return status, None
    return None


def text(value: str, choice: int = 0) -> AnswerEvent:
    """A text event, for unit tests and for answer guards that write text."""
    return AnswerEvent_Text(TextDelta(choice, value))


# Schema keywords whose strings are structure, not text (a `required` entry names a property key).
_SCHEMA_STRUCTURE = frozenset(["type", "format", "$ref", "$schema", "$id", "required"])


def _is_text_type(media_type: str) -> bool:
    media_type = media_type.strip().lower()
    return (
        media_type == ""
        or media_type.startswith("text/")
        or media_type in ("application/json", "application/xml", "application/x-www-form-urlencoded")
        or media_type.endswith("+json")
        or media_type.endswith("+xml")
    )


def _data_url_text(url: Any) -> str | None:
    """The text a `data:` URL of a text type carries (RFC 2397: no type is text/plain)."""
    if not isinstance(url, str) or not url.startswith("data:") or "," not in url:
        return None
    header, data = url[5:].split(",", 1)
    params = header.split(";")
    if not _is_text_type(params[0]):
        return None
    if any(p.strip().lower() == "base64" for p in params[1:]):
        try:
            return base64.b64decode(data.strip(), validate=True).decode("utf-8", "replace")
        except ValueError:
            return None
    return urllib.parse.unquote(data)


def _schema_texts(schema: Any, texts: list[str]) -> None:
    if isinstance(schema, str):
        texts.append(schema)
    elif isinstance(schema, list):
        for item in schema:
            _schema_texts(item, texts)
    elif isinstance(schema, dict):
        for key, value in schema.items():
            if key not in _SCHEMA_STRUCTURE:
                _schema_texts(value, texts)


def _function_texts(function: Any, texts: list[str]) -> None:
    if not isinstance(function, dict):
        return
    if isinstance(function.get("description"), str):
        texts.append(function["description"])
    for key in ("parameters", "schema"):
        if key in function:
            _schema_texts(function[key], texts)


def _content_texts(content: Any, texts: list[str]) -> None:
    if isinstance(content, str):
        texts.append(content)
    elif isinstance(content, list):
        for part in content:
            if not isinstance(part, dict):
                continue
            if isinstance(part.get("text"), str):
                texts.append(part["text"])
            for holder, key in (("image_url", "url"), ("file", "file_data")):
                text = _data_url_text((part.get(holder) or {}).get(key))
                if text is not None:
                    texts.append(text)


def request_origin(request: str) -> dict | None:
    """Where the texts of a request stood, when the gateway showed a body of another route (an
    embeddings input, a pass-through body, a batch line, a count) to the guard as messages:
    `{"route": "embeddings", "at": ["/input/0", ...]}`, the route's name and, for each message in
    order, the JSON pointer (RFC 6901) of its text in what the route sends (for `passthrough`,
    under `/body`, `/query/<i>/1` or `/headers/<i>/1`). `None` for a Chat Completions request
    shown as it is. The same as the Rust SDK's `request_origin`."""
    origin = json.loads(request).get("wasmgate")
    if not isinstance(origin, dict) or not isinstance(origin.get("route"), str):
        return None
    at = origin.get("at")
    return {"route": origin["route"], "at": [p for p in at if isinstance(p, str)] if isinstance(at, list) else []}


def request_texts(request: str) -> list[str]:
    """The texts of a Chat Completions request a guard reads: each message's content (a string,
    the text of its parts, the text of a `data:` URL of a text type in an image or file part), its
    `name` and `refusal`, its tool calls' arguments; each tool's (and legacy function's)
    description and parameter schema (descriptions, titles, enums, examples, defaults, nested
    properties); `response_format`'s schema; `prediction`; the top-level `user` and the values of
    `metadata`. The same texts as the Rust SDK's `request_texts`."""
    body = json.loads(request)
    texts: list[str] = []
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        _content_texts(message.get("content"), texts)
        for key in ("name", "refusal"):
            if isinstance(message.get(key), str):
                texts.append(message[key])
        for call in message.get("tool_calls") or []:
            arguments = (call.get("function") or {}).get("arguments")
            if isinstance(arguments, str):
                texts.append(arguments)
        arguments = (message.get("function_call") or {}).get("arguments")
        if isinstance(arguments, str):
            texts.append(arguments)
    for tool in body.get("tools") or []:
        _function_texts((tool or {}).get("function"), texts)
    for function in body.get("functions") or []:
        _function_texts(function, texts)
    _function_texts((body.get("response_format") or {}).get("json_schema"), texts)
    _content_texts((body.get("prediction") or {}).get("content"), texts)
    if isinstance(body.get("user"), str):
        texts.append(body["user"])
    metadata = body.get("metadata")
    if isinstance(metadata, dict):
        texts.extend(v for v in metadata.values() if isinstance(v, str))
    return texts


_EXPORTED: list[Any] = []


def export(cls: type[Guard]) -> type:
    """Makes ``cls`` the component's guard. Call it once, at the end of the app module."""
    plugin = cls()
    _EXPORTED[:] = [cls, plugin]

    class Adapter:
        def validate(self, text: str) -> GuardInfo:
            held = _export.check_options(text, cls.Options, plugin.validate)
            return GuardInfo(int(held or 0))

        def check_request(self, text: str, request: str) -> RequestVerdict:
            # Options the config accepted cannot fail here; if they do, the call traps and the
            # host fails the request closed.
            return _request_verdict(plugin.check_request(parse_options(text, cls.Options), request))

        def check_request_reply(self, text: str, request: str, context: str, reply: ConsultReply) -> RequestVerdict:
            options = parse_options(text, cls.Options)
            return _request_verdict(plugin.check_request_reply(options, request, context, reply))

    return _export.install(cls, "Guard", Adapter)


class _AnswerGuardAdapter:
    """The `answer-guard` resource componentize-py exports (see the `guard` shim module)."""

    def __init__(self, options: str, request: str):
        cls, _ = _EXPORTED
        self._answer = cls.Answer(parse_options(options, cls.Options), request)

    def push(self, events: list[AnswerEvent]) -> StreamVerdict:
        return _stream_verdict(self._answer.push(events))

    def finish(self) -> StreamVerdict:
        return _stream_verdict(self._answer.finish())

    def reply(self, reply: ConsultReply) -> StreamVerdict:
        if not hasattr(self._answer, "reply"):
            raise RuntimeError("this guard asked for an outside call it does not take the reply of")
        return _stream_verdict(self._answer.reply(reply))


def validate(adapter: type, options: str) -> ConfigError | None:
    """Checks ``options`` as the host does when the config loads, through the exported
    ``adapter`` (the value :func:`export` returned): the error, or ``None``."""
    return _export.validation_error(adapter, options)


def answer(cls: type[Guard], options: str, request: str = "{}") -> Any:
    """An answer guard of ``cls`` as the host starts one, for unit tests."""
    _EXPORTED[:] = [cls, cls()]
    return _AnswerGuardAdapter(options, request)
