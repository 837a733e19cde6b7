"""Cache-key policy plugins: the operator's say in what goes into the response cache's key.

A policy subclasses :class:`CacheKey`, names its options dataclass in ``Options`` and implements
``key``, which gets the request (``request.fields`` is the body's top-level fields as a dict, in
the client's API's shape: see ``request.operation``) and returns :func:`keep`, :func:`replace`
with the fields to hash instead, or :func:`bypass` to leave the request uncached::

    from dataclasses import dataclass
    from wasmgate_plugin.cache_key import CacheKey, bypass, export, keep, replace

    @dataclass
    class Options:
        never: list[str]

    class NoSecrets(CacheKey):
        Options = Options

        def key(self, options, request):
            if request.model in options.never:
                return bypass()
            return keep()

    export(NoSecrets)

What ``key`` returns is only hashed: the request goes upstream as the client sent it. The scope
(project, key, namespace, operation, model) stays in the key whatever the plugin says. A plugin
that raises, traps or runs out of time makes its request a bypass, never an error. See
``wit/cache-key.wit``.
"""

import json
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from wit_world.exports.cache_key import (
    KeyDecision,
    KeyDecision_Bypass,
    KeyDecision_Keep,
    KeyDecision_Replace,
    KeyRequest,
)

from . import _export
from ._host import count_tokens, log
from .options import ConfigError, NoOptions

__all__ = [
    "CacheKey",
    "ConfigError",
    "KeyDecision",
    "KeyDecision_Bypass",
    "KeyDecision_Keep",
    "KeyDecision_Replace",
    "Request",
    "bypass",
    "count_tokens",
    "export",
    "keep",
    "log",
    "replace",
    "request",
    "validate",
]

O = TypeVar("O")


@dataclass
class Request:
    """A request the cache may answer, as the policy sees it."""

    #: ``chat.completions``, or a dialect's ``<dialect>.<route>`` (``anthropic.messages``, ...).
    operation: str
    #: The model as the client named it.
    model: str
    #: The project the request is accounted to.
    project: str
    #: The body's top-level fields that go into the key (never ``stream``, ``user``, ...).
    fields: dict[str, Any]


class CacheKey(Generic[O]):
    """A cache-key policy. Override :meth:`key`, and :meth:`validate` for checks beyond the
    options' types."""

    #: The dataclass the entry's ``options`` are read into, checked when the config loads.
    Options: type = NoOptions

    def validate(self, options: O) -> None:
        """Checks the options once, when the config loads; raise :class:`ConfigError` to refuse
        them. The default accepts anything."""

    def key(self, options: O, request: Request) -> KeyDecision:
        """Returns :func:`keep`, :func:`replace` or :func:`bypass`."""
        raise NotImplementedError


def keep() -> KeyDecision:
    """Keys the request by its fields as they are."""
    return KeyDecision_Keep()


def replace(fields: dict[str, Any]) -> KeyDecision:
    """Keys the request by ``fields`` instead (the top-level fields of a JSON object)."""
    return KeyDecision_Replace(json.dumps(fields, ensure_ascii=False, separators=(",", ":")))


def bypass() -> KeyDecision:
    """Leaves the request uncached: neither answered from the cache nor kept."""
    return KeyDecision_Bypass()


def export(cls: type[CacheKey]) -> type:
    """Makes ``cls`` the component's cache-key policy. Call it once, at the end of the app
    module."""
    plugin = cls()
    options = _export.options_cache(cls.Options)

    class Adapter:
        def validate(self, text: str) -> None:
            _export.check_options(text, cls.Options, plugin.validate)

        def key(self, text: str, wit: KeyRequest) -> KeyDecision:
            fields = json.loads(wit.fields)
            return plugin.key(options(text), Request(wit.operation, wit.model, wit.project, fields))

    return _export.install(cls, "CacheKey", Adapter)


def validate(adapter: type, options: str) -> ConfigError | None:
    """Checks ``options`` as the host does when the config loads, through the exported
    ``adapter`` (the value :func:`export` returned): the error, or ``None``."""
    return _export.validation_error(adapter, options)


def request(fields: dict[str, Any], operation: str = "chat.completions", model: str = "m",
            project: str = "default") -> KeyRequest:
    """A :class:`KeyRequest` as the host sends it, for unit tests of the exported adapter."""
    return KeyRequest(operation, model, project, json.dumps(fields))
