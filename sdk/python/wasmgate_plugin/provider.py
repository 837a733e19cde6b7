"""Provider plugins: translate between OpenAI's API and one upstream's wire format.

A provider subclasses :class:`Provider` and implements ``prepare``, which turns the canonical
(OpenAI) request into an upstream HTTP request (:func:`upstream`) or answers it at once
(:func:`local`). ``parse_response`` and the stream decoder default to OpenAI's format, so an
OpenAI-compatible upstream needs nothing else::

    from wasmgate_plugin.provider import Provider, export, post_json, upstream

    class Compatible(Provider):
        default_base_url = "https://api.example.com/v1"
        system = "example"

        def prepare(self, entry, request):
            return upstream(post_json(entry.url("chat/completions"), request.body))

    export(Compatible)

The host calls a provider on a fresh instance per request and does all the network I/O: the
plugin only describes requests and reads responses. The SDK reads the config entry for each
call into an :class:`Entry`: ``entry.options`` is the entry's ``options:`` read into the
``Options`` dataclass (checked when the config loads, errors naming the key), the base URL is
the entry's or the provider's default, checked; and the SDK adds the key (``auth_header``) and
the entry's ``headers`` option, which every provider takes, to each upstream request.

Pass-through routes (``/passthrough/<entry>/<path>``) work with no code: by default
:meth:`Provider.passthrough` adds the same key and headers to the client's request, and
:meth:`Provider.passthrough_usage` reads the usage the answer reports
(:mod:`wasmgate_plugin.passthrough`).
"""

import json
from typing import Any, Generic, TypeVar

from componentize_py_types import Err
from wit_world.exports.provider import (
    CanonicalRequest,
    Completion,
    Description,
    Operation,
    Prepared,
    Prepared_Local,
    Prepared_LocalStream,
    Prepared_Upstream,
    Prepared_UpstreamForm,
    Prepared_UpstreamRaw,
    ProviderConfig,
    RequestInfo,
    StreamOutput,
)
from wit_world.imports.types import ConfigError as _WitConfigError
from wit_world.imports.types import ErrorKind, HttpRequest, HttpResponse, Usage

from . import _export
from ._host import count_tokens, log
from .errors import PluginError, kind_for_status
from .openai import OpenAiStream, SseEvent, SseParser, openai_error, openai_usage, parse_openai_response
from .options import ConfigError, NoOptions, options_object, read_at
from .passthrough import Metered, PassthroughAuth, PassthroughCall, read_usage, unsupported, with_default

__all__ = [
    "CanonicalRequest", "Completion", "ConfigError", "Entry", "ErrorKind", "HttpRequest",
    "HttpResponse", "Metered", "OpenAiStream", "Operation", "PassthroughAuth", "PassthroughCall",
    "PluginError", "Provider", "RequestInfo", "SseEvent", "SseParser", "StreamDecoder", "StreamOutput",
    "Usage", "chat_completion", "check_header", "count_tokens", "export", "get", "is_http_url",
    "join_url", "kind_for_status", "local", "log", "openai_error", "openai_usage",
    "parse_openai_response", "post_json", "read_usage", "upstream", "with_default",
]

O = TypeVar("O")


class Entry(Generic[O]):
    """The provider's config entry, read: ``name``, ``base_url`` (the entry's, else the
    provider's ``default_base_url``; ``""`` for a ``local`` provider given none), ``api_key``
    (send it only upstream; the SDK does), ``models`` and ``options`` (the ``Options``
    dataclass)."""

    __slots__ = ("name", "base_url", "api_key", "models", "options", "_key_header", "_headers")

    def __init__(self, name: str, base_url: str, api_key: str | None, models: list[str], options: O,
                 key_header: str | None = None, headers: list[tuple[str, str]] | None = None):
        self.name = name
        self.base_url = base_url
        self.api_key = api_key or None
        self.models = models
        self.options = options
        self._key_header = key_header
        self._headers = headers or []

    def url(self, path: str) -> str:
        """``path`` under the entry's base URL, with one ``/`` between them."""
        return join_url(self.base_url, path)

    def bearer(self) -> list[tuple[str, str]]:
        """``Authorization: Bearer <key>`` when the entry has a key, else no header. The SDK adds
        the key itself to what ``prepare`` returns: this is for requests built elsewhere."""
        return [("authorization", f"Bearer {self.api_key}")] if self.api_key else []

    def authorize(self, http: HttpRequest) -> None:
        """Sets the key (in the provider's ``auth_header``, or the entry's) and the entry's
        ``headers`` on ``http``, replacing headers of the same names. The SDK does this to every
        upstream request ``prepare`` returns, after the plugin's own headers."""
        if self._key_header and self.api_key:
            value = f"Bearer {self.api_key}" if self._key_header == "authorization" else self.api_key
            _set_header(http, self._key_header, value)
        for name, value in self._headers:
            _set_header(http, name, value)

    def passthrough_auth(self) -> PassthroughAuth:
        """What the SDK adds to a pass-through request by default: the key and the entry's
        ``headers``, as :meth:`authorize` sets them. For a ``passthrough`` that adds more."""
        http = get("")
        self.authorize(http)
        return PassthroughAuth(http.headers, [])

    def __repr__(self) -> str:  # the key stays out of logs and tracebacks
        return f"Entry(name={self.name!r}, base_url={self.base_url!r}, api_key={'***' if self.api_key else None})"


def _set_header(http: HttpRequest, name: str, value: str) -> None:
    http.headers = [(n, v) for n, v in http.headers if n.lower() != name.lower()] + [(name, value)]


class StreamDecoder:
    """Decodes one streamed upstream body into OpenAI chunk events. The host pushes the body's
    bytes as they arrive (split anywhere) and calls :meth:`finish` at its end."""

    def __init__(self, entry: Entry, request: RequestInfo, headers: list[tuple[str, str]]):
        self.entry = entry
        self.request = request
        self.headers = headers

    def push(self, chunk: bytes) -> StreamOutput:
        """The events ``chunk`` completes, and the usage once known."""
        raise NotImplementedError

    def finish(self) -> StreamOutput:
        """The body ended: any remaining events and the final usage."""
        return StreamOutput([], None)


class Provider(Generic[O]):
    """A provider plugin. Override :meth:`prepare`; :meth:`parse_response` and ``Decoder``
    default to OpenAI's format."""

    #: The dataclass the entry's ``options`` are read into, checked when the config loads
    #: (but ``headers`` and ``auth_header``, which the SDK reads for every provider).
    Options: type = NoOptions
    #: The base URL when the entry sets none (a string, or a method of the entry's options
    #: returning one or ``None``); none makes ``base_url`` required. The host is told it when
    #: the config loads and keeps every upstream request under it.
    default_base_url: str | None = None
    #: The upstream's OpenTelemetry ``gen_ai.provider.name``; ``None``: the plugin's name.
    system: str | None = None
    #: The header the entry's key goes in: ``authorization`` sends ``Bearer <key>``, any other
    #: name the bare key; ``None`` when the plugin uses the key itself (it signs requests).
    auth_header: str | None = "authorization"
    #: Whether the provider answers every request itself, so that ``base_url`` is not required.
    local: bool = False
    #: The stream decoder class: ``OpenAiStream`` passes OpenAI-format SSE through.
    Decoder: type = OpenAiStream

    def native_dialects(self, entry: Entry[O]) -> list[str]:
        """The client dialects, by their declared names (``"messages"``, ``"responses"``,
        ``"gemini"``), this entry's upstream serves itself; the host passes their requests
        through to :meth:`prepare` untranslated, with ``request.native`` set. The default is
        none: every dialect arrives translated."""
        return []

    def validate(self, entry: Entry[O]) -> None:
        """Checks the entry once, when the config loads, after its options were read; raise
        :class:`ConfigError` to refuse it. The default accepts anything."""

    def prepare(self, entry: Entry[O], request: CanonicalRequest) -> Prepared:
        """Returns :func:`upstream` (an HTTP request for the host to send) or :func:`local`
        (an answer without a network call). Raise :class:`PluginError` to fail the request."""
        raise NotImplementedError

    def parse_response(self, entry: Entry[O], request: RequestInfo, response: HttpResponse) -> Completion:
        """Turns the upstream's complete answer (any status) into OpenAI's JSON and usage."""
        return parse_openai_response(request.operation, response)

    def passthrough(self, entry: Entry[O], call: PassthroughCall) -> PassthroughAuth:
        """The credentials of a pass-through request (``/passthrough/<entry>/<path>``) to this
        entry's upstream: by default the key as :attr:`auth_header` sends it and the entry's
        ``headers``, as on every request. A ``local`` provider, or one that uses the key itself
        (``auth_header = None``, it signs requests), refuses by default: its upstream cannot take
        a body the plugin never sees. Add a version header with
        :func:`~wasmgate_plugin.passthrough.with_default`; raise :class:`PluginError` to refuse."""
        if self.local or self.auth_header is None:
            raise unsupported(entry.name)
        return entry.passthrough_auth()

    def passthrough_usage(self, entry: Entry[O], call: PassthroughCall, response: HttpResponse,
                          whole: bool) -> Metered | None:
        """The usage of a pass-through answer, from its whole body (``whole``) or its tail;
        ``None`` records the request without usage. The default reads the shapes the common APIs
        write (:func:`~wasmgate_plugin.passthrough.read_usage`) from a success."""
        if not 200 <= response.status < 300:
            return None
        return read_usage(response.body, whole)


def upstream(http: HttpRequest) -> Prepared:
    """Send ``http`` upstream, then parse its answer."""
    return Prepared_Upstream(http)


def local(body: str | dict, usage: Usage | None = None) -> Prepared:
    """Answer at once with ``body`` (OpenAI's JSON, as text or a dict)."""
    text = body if isinstance(body, str) else json.dumps(body, separators=(",", ":"))
    return Prepared_Local(Completion(text, usage))


def local_stream(events: list[str | dict], usage: Usage | None = None) -> Prepared:
    """Answer a streamed request at once with these chunk events."""
    texts = [e if isinstance(e, str) else json.dumps(e, separators=(",", ":")) for e in events]
    return Prepared_LocalStream(StreamOutput(texts, usage))


def chat_completion(model: str, content: str, usage: Usage | None = None, id: str = "chatcmpl-local") -> dict:
    """OpenAI's ``chat.completion`` object answering with ``content``."""
    body: dict[str, Any] = {
        "id": id, "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
    }
    if usage is not None:
        body["usage"] = {"prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens,
                         "total_tokens": usage.input_tokens + usage.output_tokens}
    return body


def join_url(base: str, path: str) -> str:
    """``base`` and ``path`` with exactly one ``/`` between them."""
    return f"{base.rstrip('/')}/{path.lstrip('/')}"


def is_http_url(url: str) -> bool:
    """Whether ``url`` is an absolute ``http://`` or ``https://`` URL with a host."""
    for scheme in ("https://", "http://"):
        if url.startswith(scheme):
            rest = url[len(scheme):]
            return bool(rest) and not rest.startswith("/")
    return False


_TOKEN = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-.^_`|~")


def check_header(name: str, value: str) -> str | None:
    """Why ``name: value`` is not a safe header (a bad name, a control character that could
    smuggle a line break), or ``None``."""
    if not name or any(c not in _TOKEN for c in name):
        return f"`{name}` is not a valid header name"
    if any((ord(c) < 32 and c != "\t") or ord(c) == 127 for c in value):
        return f"the value of header `{name}` contains a control character"
    return None


def post_json(url: str, body: str | bytes | dict, headers: list[tuple[str, str]] | None = None) -> HttpRequest:
    """A ``POST`` of a JSON body (text, bytes or a dict) with ``content-type: application/json``."""
    if isinstance(body, dict):
        body = json.dumps(body, separators=(",", ":"))
    data = body.encode() if isinstance(body, str) else bytes(body)
    return HttpRequest("POST", url, [("content-type", "application/json"), *(headers or [])], data)


def get(url: str, headers: list[tuple[str, str]] | None = None) -> HttpRequest:
    """A ``GET`` with no body."""
    return HttpRequest("GET", url, list(headers or []), b"")


# The exported provider, for the stream decoder resource (`provider.StreamDecoder`).
_EXPORTED: list[Any] = []
_COMMON = ("headers", "auth_header")


def _default_base_url(plugin: Provider, options: Any) -> str | None:
    default = plugin.default_base_url
    return default(options) if callable(default) else default


def _entry(plugin: Provider, config: ProviderConfig) -> Entry:
    """Reads ``config`` as the SDK does for every call; raises :class:`ConfigError`."""
    value = options_object(config.options)
    common = {key: value.pop(key) for key in _COMMON if key in value}
    options = read_at(value, type(plugin).Options, "")
    headers = read_at(common.get("headers", {}), dict[str, str], "headers")
    for name, header in headers.items():
        problem = check_header(name, header)
        if problem:
            raise ConfigError(problem, f"headers.{name}")
    key_header = plugin.auth_header
    if "auth_header" in common:
        if key_header is None:
            raise ConfigError("this provider uses the key itself and sends it in no header", "auth_header")
        key_header = read_at(common["auth_header"], str, "auth_header").lower()
        problem = check_header(key_header, "")
        if problem:
            raise ConfigError(problem, "auth_header")
    if config.api_key and check_header("x", config.api_key):
        raise ConfigError("contains a control character", "api_key")  # never echo the key
    base_url = config.base_url or _default_base_url(plugin, options) or ""
    if base_url and (not is_http_url(base_url) or "?" in base_url or "#" in base_url):
        raise ConfigError("must be an absolute http:// or https:// URL without a query", "base_url")
    return Entry(config.name, base_url, config.api_key, list(config.models), options, key_header,
                 list(headers.items()))


def _upstream_request(prepared: Prepared) -> HttpRequest | None:
    if isinstance(prepared, Prepared_Upstream):
        return prepared.value
    if isinstance(prepared, (Prepared_UpstreamForm, Prepared_UpstreamRaw)):
        return prepared.value.request
    return None


def export(cls: type[Provider]) -> type:
    """Makes ``cls`` the component's provider. Call it once, at the end of the app module."""
    plugin = cls()
    _EXPORTED[:] = [cls, plugin]

    def entry(config: ProviderConfig) -> Entry:
        try:
            return _entry(plugin, config)
        except ConfigError:
            raise Err(PluginError.upstream(f"provider `{config.name}` is misconfigured").to_wit()) from None

    class Adapter:
        def describe(self, config: ProviderConfig) -> Description:
            try:
                options = read_at({k: v for k, v in options_object(config.options).items() if k not in _COMMON},
                                  cls.Options, "")
                default = _default_base_url(plugin, options)
            except ConfigError:
                default = None  # `validate` says what is wrong
            return Description(default, cls.system, [])  # no plain operations: every request reaches the plugin

        def native_dialects(self, config: ProviderConfig) -> list[str]:
            try:
                return plugin.native_dialects(_entry(plugin, config))
            except ConfigError:
                return []  # `validate` refuses the entry

        def validate(self, config: ProviderConfig) -> None:
            try:
                read = _entry(plugin, config)
                plugin.validate(read)
                if not read.base_url and not cls.local:
                    raise ConfigError("is required: this provider has no default", "base_url")
            except ConfigError as err:
                raise Err(_WitConfigError(err.key, err.message)) from None

        def prepare(self, config: ProviderConfig, request: CanonicalRequest) -> Prepared:
            read = entry(config)
            try:
                prepared = plugin.prepare(read, request)
            except PluginError as err:
                raise Err(err.to_wit()) from None
            http = _upstream_request(prepared)
            if http is not None:
                read.authorize(http)
            return prepared

        def parse_response(self, config: ProviderConfig, request: RequestInfo, response: HttpResponse) -> Completion:
            try:
                return plugin.parse_response(entry(config), request, response)
            except PluginError as err:
                raise Err(err.to_wit()) from None

        def prepare_count(self, config: ProviderConfig, request: CanonicalRequest) -> Any:
            # No counting endpoint from Python yet: the host counts with its own tokenizer.
            return None

        def parse_count(self, config: ProviderConfig, request: RequestInfo, response: HttpResponse) -> int:
            message = f"provider `{config.name}` has no counting endpoint"
            raise Err(PluginError(ErrorKind.UPSTREAM, message).to_wit())

        def passthrough(self, config: ProviderConfig, call: PassthroughCall) -> PassthroughAuth:
            try:
                return plugin.passthrough(entry(config), call)
            except PluginError as err:
                raise Err(err.to_wit()) from None

        def passthrough_usage(self, config: ProviderConfig, call: PassthroughCall, response: HttpResponse,
                              whole: bool) -> Metered | None:
            try:
                read = _entry(plugin, config)
            except ConfigError:
                return None  # the config accepted it; nothing to read the usage with otherwise
            return plugin.passthrough_usage(read, call, response, whole)

    return _export.install(cls, "Provider", Adapter)


class _StreamDecoderAdapter:
    """The `stream-decoder` resource componentize-py exports (see the `provider` shim module)."""

    def __init__(self, config: ProviderConfig, request: RequestInfo, headers: list[tuple[str, str]]):
        cls, plugin = _EXPORTED
        self._decoder = cls.Decoder(_entry(plugin, config), request, headers)

    def push(self, chunk: bytes) -> StreamOutput:
        try:
            return self._decoder.push(chunk)
        except PluginError as err:
            raise Err(err.to_wit()) from None

    def finish(self) -> StreamOutput:
        try:
            return self._decoder.finish()
        except PluginError as err:
            raise Err(err.to_wit()) from None
