"""Router plugins: order the targets of a virtual model.

A router subclasses :class:`Router`, names its options dataclass in ``Options`` and implements
``route``, which returns indices into ``targets`` in the order to try them::

    from dataclasses import dataclass
    from wasmgate_plugin.router import RouteError, Router, export, healthy

    @dataclass
    class Options:
        tag: str

    class TagFirst(Router):
        Options = Options

        def route(self, options, request, targets):
            if options.tag in request.user_tags:
                return [i for i, _ in healthy(targets)]
            raise RouteError("not for you")

    export(TagFirst)

The host keeps the live statistics (latency, error rate, circuit state) in each
:class:`Target`; the router only decides. It keeps no state between calls: the host reuses
warm instances, so anything left in globals would leak from one request into the next.
"""

import math
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from componentize_py_types import Err
from wit_world.exports.router import CircuitState, RouteRequest, Target

from . import _export
from ._host import count_tokens, log
from .options import ConfigError, NoOptions

__all__ = [
    "CircuitState",
    "ConfigError",
    "RouteError",
    "RouteRequest",
    "Router",
    "Target",
    "config_order",
    "count_tokens",
    "export",
    "healthy",
    "log",
    "open_last",
    "rank",
    "route",
    "target",
    "request",
    "validate",
    "weighted_pick",
]

O = TypeVar("O")


class RouteError(Exception):
    """Fails the request with a 400 carrying this message (e.g. no rule matched)."""


class Router(Generic[O]):
    """A router plugin. Override :meth:`route`, and :meth:`validate` for checks beyond the
    options' types."""

    #: The dataclass the virtual model's ``options`` are read into, checked when the config loads.
    Options: type = NoOptions

    def validate(self, options: O, targets: list[str]) -> None:
        """Checks the options against the target ids (``<provider>/<model>``) once, when the
        config loads; raise :class:`ConfigError` to refuse them. The default accepts anything."""

    def route(self, options: O, request: RouteRequest, targets: list[Target]) -> list[int]:
        """Returns indices into ``targets``, in the order to try them; targets left out are not
        tried. Raise :class:`RouteError` to fail the request with a 400."""
        raise NotImplementedError


def export(cls: type[Router]) -> type:
    """Makes ``cls`` the component's router. Call it once, at the end of the app module."""
    plugin = cls()
    options = _export.options_cache(cls.Options)

    class Adapter:
        def validate(self, text: str, targets: list[str]) -> None:
            _export.check_options(text, cls.Options, lambda parsed: plugin.validate(parsed, list(targets)))

        def route(self, text: str, request: RouteRequest, targets: list[Target]) -> list[int]:
            try:
                parsed = options(text)
            except ConfigError as err:
                raise Err(f"the router's options are invalid: {err.message}") from None
            try:
                order = plugin.route(parsed, request, targets)
            except RouteError as err:
                raise Err(str(err)) from None
            return [int(i) for i in order]

    return _export.install(cls, "Router", Adapter)


def healthy(targets: list[Target]) -> Iterator[tuple[int, Target]]:
    """The targets whose circuit is not open, with their indices, in config order. Half-open
    targets are kept: the host lets one trial request through to them."""
    return ((i, t) for i, t in enumerate(targets) if t.circuit != CircuitState.OPEN)


def config_order(targets: list[Target]) -> list[int]:
    """The indices of all targets, in config order."""
    return list(range(len(targets)))


def open_last(order: list[int], targets: list[Target]) -> list[int]:
    """Moves the targets whose circuit is open after the others, keeping each group's order."""
    def is_open(i: int) -> bool:
        return 0 <= i < len(targets) and targets[i].circuit == CircuitState.OPEN

    return [i for i in order if not is_open(i)] + [i for i in order if is_open(i)]


def rank(
    targets: list[Target],
    measure: Callable[[Target], float | None],
    unmeasured_first: bool = False,
) -> list[int]:
    """The healthy targets by ascending ``measure`` (ties in config order), those without one
    (``None`` or NaN) last (or first, to get them measured), then the open ones."""
    measured: list[tuple[float, int]] = []
    unknown: list[int] = []
    for i, t in healthy(targets):
        value = measure(t)
        if value is None or math.isnan(value):
            unknown.append(i)
        else:
            measured.append((value, i))
    measured.sort(key=lambda m: m[0])
    ranked = [i for _, i in measured]
    order = unknown + ranked if unmeasured_first else ranked + unknown
    return order + [i for i, t in enumerate(targets) if t.circuit == CircuitState.OPEN]


def weighted_pick(weights: list[float], random: int) -> int | None:
    """An index into ``weights`` picked with a probability proportional to its weight, from the
    host's ``request.random`` (the same ``random`` gives the same pick). ``None`` when no
    weight is positive."""
    usable = [w if math.isfinite(w) and w > 0 else 0.0 for w in weights]
    total = sum(usable)
    if not (total > 0 and math.isfinite(total)):
        return None
    point = ((random >> 11) / float(1 << 53)) * total
    running, last = 0.0, None
    for i, w in enumerate(usable):
        if w > 0:
            running += w
            last = i
            if point < running:
                return i
    return last


def target(id: str, **facts: Any) -> Target:
    """A :class:`Target` for unit tests: ``id`` is ``<provider>/<model>``; any other field
    (``latency_ms=120.0``, ``circuit=CircuitState.OPEN``, ...) may be given."""
    provider, _, model = id.partition("/")
    fields = dict(
        id=id, provider=provider, model=model, weight=1, input_price=None, output_price=None,
        in_flight=0, latency_ms=None, ttft_ms=None, tokens_per_second=None, error_rate=0.0,
        circuit=CircuitState.CLOSED,
    )
    fields.update(facts)
    return Target(**fields)


def request(model: str = "virtual", **facts: Any) -> RouteRequest:
    """A :class:`RouteRequest` for unit tests; any field (``user_tags=["vip"]``, ...) may be given."""
    fields = dict(
        model=model, project="default", user_id=None, user_name=None, user_tags=[],
        estimated_input_tokens=0, stream=False, metadata=[], random=0,
    )
    fields.update(facts)
    return RouteRequest(**fields)


def validate(adapter: type, options: str, targets: list[str]) -> ConfigError | None:
    """Checks ``options`` as the host does when the config loads, through the exported
    ``adapter`` (the value :func:`export` returned): the error, or ``None``."""
    return _export.validation_error(adapter, options, targets)


def route(adapter: type, options: str, req: RouteRequest, targets: list[Target]) -> list[int] | str:
    """Routes ``req`` as the host does, through the exported ``adapter``: the order, or the
    message of a refusal."""
    try:
        return adapter().route(options, req, targets)
    except Err as err:
        return err.value
