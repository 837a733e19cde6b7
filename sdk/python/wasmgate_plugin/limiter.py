"""Limiter plugins: admit or refuse a request before it is forwarded, settle it afterwards.

A limiter subclasses :class:`Limiter`, names its options dataclass in ``Options``, implements
``check`` (return :func:`allow` or :func:`deny`) and, when it reserves anything, ``settle``::

    from dataclasses import dataclass
    from wasmgate_plugin.limiter import Limiter, Period, Reservation, allow, deny, export

    @dataclass
    class Options:
        per_minute: int

    class PerMinute(Limiter):
        Options = Options

        def check(self, options, request):
            try:
                Reservation().add(f"req:{request.scope_key}", Period.MINUTE, 1, options.per_minute)
            except Exceeded as over:
                return deny(f"{options.per_minute} requests a minute", over.resets_in_ms)
            return allow()

    export(PerMinute)

A limiter keeps no state of its own: whatever must outlive a call goes in the host's
:mod:`counters <wasmgate_plugin.limiter>` (:func:`add`, :func:`get`), which are atomic across
requests and gateway replicas. Keys are private to the rule; include ``request.scope_key``.
"""

from typing import Any, Generic, TypeVar

from wit_world.exports.limiter import (
    Decision,
    Decision_Allow,
    Decision_Deny,
    Denial,
    DenialCode,
    LimitRequest,
    Settlement,
)
from wit_world.imports import counters as _counters
from wit_world.imports.counters import Counter, Period

from . import _export
from ._host import count_tokens, in_sandbox, log
from .options import ConfigError, NoOptions

__all__ = [
    "ConfigError",
    "Counter",
    "Decision",
    "Decision_Allow",
    "Decision_Deny",
    "DenialCode",
    "Exceeded",
    "LimitRequest",
    "Limiter",
    "Period",
    "Reservation",
    "Settlement",
    "add",
    "adjust",
    "allow",
    "count_tokens",
    "deny",
    "export",
    "get",
    "log",
    "ratelimit_headers",
    "request",
    "reset_counters",
    "reset_header",
    "settlement",
    "validate",
]

O = TypeVar("O")


class Limiter(Generic[O]):
    """A limiter plugin. Override :meth:`check`, and :meth:`settle` when ``check`` reserves."""

    #: The dataclass the rule's ``options`` are read into, checked when the config loads.
    Options: type = NoOptions

    def validate(self, options: O) -> None:
        """Checks the options once, when the config loads; raise :class:`ConfigError` to refuse
        them. The default accepts anything."""

    def check(self, options: O, request: LimitRequest) -> Decision:
        """Admits the request (:func:`allow`) or refuses it with a 429 (:func:`deny`). May
        reserve what the request is expected to use; a refusal should leave the counters as
        they were (:class:`Reservation` does that)."""
        raise NotImplementedError

    def settle(self, options: O, request: LimitRequest, usage: Settlement) -> None:
        """Replaces what ``check`` reserved for an admitted request with what it really used.
        Nothing is passed from ``check``: recompute the reservation from the request."""


def allow(headers: list[tuple[str, str]] | None = None) -> Decision:
    """Lets the request through, with these ``x-ratelimit-*`` headers on its response."""
    return Decision_Allow(list(headers or []))


def deny(
    message: str,
    retry_after_ms: int,
    code: DenialCode = DenialCode.RATE_LIMIT_EXCEEDED,
    headers: list[tuple[str, str]] | None = None,
) -> Decision:
    """Refuses the request with a 429 carrying ``message`` (say which limit, and when it
    resets) and ``Retry-After``. ``DenialCode.INSUFFICIENT_QUOTA`` for a spent budget."""
    return Decision_Deny(Denial(code, message, max(0, int(retry_after_ms)), list(headers or [])))


# Outside the sandbox the counters live here, by (key, period), and never reset: a unit test
# controls time by the keys it uses.
_MEMORY: dict[tuple[str, Period], int] = {}


def add(key: str, period: Period, delta: int) -> Counter:
    """Adds ``delta`` (may be negative) to the counter ``key`` in the current window of
    ``period``, atomically, and returns its new value and the time left in the window."""
    if in_sandbox():
        return _counters.add(key, period, delta)
    value = _MEMORY.get((key, period), 0) + delta
    _MEMORY[(key, period)] = value
    return Counter(value, 0 if period == Period.TOTAL else 60_000)


def get(key: str, period: Period) -> Counter:
    """Reads the counter ``key`` in the current window of ``period``."""
    if in_sandbox():
        return _counters.get(key, period)
    return add(key, period, 0)


def adjust(key: str, period: Period, delta: int) -> Counter:
    """Adds ``delta`` as :func:`add` does, but a negative ``delta`` takes the counter down to 0
    at most: a reservation whose window ended before it settled is not given back twice."""
    counter = add(key, period, delta)
    if delta >= 0 or counter.value >= 0:
        return counter
    return add(key, period, min(-counter.value, -delta))


class Exceeded(Exception):
    """A :meth:`Reservation.add` that would have gone over its limit (and was taken back)."""

    def __init__(self, used: int, requested: int, resets_in_ms: int):
        super().__init__(f"{used} used, {requested} requested")
        self.used = used
        self.requested = requested
        self.resets_in_ms = resets_in_ms


class Reservation:
    """Additions to several counters that stand or fall together: when one would go over its
    limit, it and every earlier one are taken back, so a refused request leaves no trace."""

    def __init__(self) -> None:
        self._added: list[tuple[str, Period, int]] = []

    def add(self, key: str, period: Period, delta: int, limit: int) -> Counter:
        """Adds ``delta`` to ``key`` if the result stays within ``limit`` and returns the
        counter; else takes everything back and raises :class:`Exceeded`."""
        counter = add(key, period, delta)
        used = counter.value - delta
        if counter.value > limit or used >= limit:
            if delta:
                add(key, period, -delta)
            self.undo()
            raise Exceeded(used, delta, counter.resets_in_ms)
        if delta:
            self._added.append((key, period, delta))
        return counter

    def undo(self) -> None:
        """Takes back every addition made so far."""
        while self._added:
            key, period, delta = self._added.pop()
            add(key, period, -delta)


def reset_header(ms: int) -> str:
    """``ms`` as OpenAI's ``x-ratelimit-reset-*`` headers write it: ``12ms``, ``1.5s``, ``6m0s``."""
    if ms <= 0:
        return "0s"
    if ms < 1000:
        return f"{ms}ms"
    hours, minutes, seconds, millis = ms // 3_600_000, ms // 60_000 % 60, ms // 1000 % 60, ms % 1000
    secs = str(seconds) if millis == 0 else f"{seconds}.{f'{millis:03}'.rstrip('0')}"
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


def ratelimit_headers(kind: str, limit: int, remaining: int, resets_in_ms: int | None) -> list[tuple[str, str]]:
    """OpenAI's ``x-ratelimit-limit-<kind>``, ``-remaining-`` and ``-reset-`` headers."""
    headers = [
        (f"x-ratelimit-limit-{kind}", str(limit)),
        (f"x-ratelimit-remaining-{kind}", str(max(0, remaining))),
    ]
    if resets_in_ms is not None:
        headers.append((f"x-ratelimit-reset-{kind}", reset_header(resets_in_ms)))
    return headers


def export(cls: type[Limiter]) -> type:
    """Makes ``cls`` the component's limiter. Call it once, at the end of the app module."""
    plugin = cls()
    # Options the config accepted cannot fail here; if they do, the call traps and the host
    # refuses the request as a failed limiter (neither allowing nor denying is right).
    options = _export.options_cache(cls.Options)

    class Adapter:
        def validate(self, text: str) -> None:
            _export.check_options(text, cls.Options, plugin.validate)

        def check(self, text: str, request: LimitRequest) -> Decision:
            return plugin.check(options(text), request)

        def settle(self, text: str, request: LimitRequest, usage: Settlement) -> None:
            plugin.settle(options(text), request, usage)

    return _export.install(cls, "Limiter", Adapter)


def validate(adapter: type, options: str) -> ConfigError | None:
    """Checks ``options`` as the host does when the config loads, through the exported
    ``adapter`` (the value :func:`export` returned): the error, or ``None``."""
    return _export.validation_error(adapter, options)


def request(scope_key: str = "global", **facts: Any) -> LimitRequest:
    """A :class:`LimitRequest` for unit tests; any field (``user_id="u1"``, ...) may be given."""
    fields = dict(
        scope_key=scope_key, project="default", api_key_id=None, user_id=None, model="m",
        estimated_input_tokens=0, max_output_tokens=None, estimated_cost_micros=None,
    )
    fields.update(facts)
    return LimitRequest(**fields)


def settlement(input_tokens: int = 0, output_tokens: int = 0, succeeded: bool = True,
               cost_micros: int | None = None) -> Settlement:
    """A :class:`Settlement` for unit tests."""
    return Settlement(input_tokens, output_tokens, cost_micros, succeeded)


def reset_counters() -> None:
    """Forgets every counter of the stand-in store (outside the sandbox), between unit tests."""
    _MEMORY.clear()
