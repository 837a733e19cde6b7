"""Write wasmgate plugins in Python: routers, limiters and providers.

A plugin is a module (``app.py``) that subclasses one of :class:`Router`, :class:`Limiter` or
:class:`Provider` and calls :func:`export` on it. ``wasmgate plugin build`` turns it into a
WebAssembly component with ``componentize-py``, against the same WIT contract (``wit/``) as the
Rust plugins; drop the ``.wasm`` into ``plugins.dir``.

The kinds live in their own modules, which import only their own world's bindings::

    from wasmgate_plugin.router import Router, export      # a router plugin
    from wasmgate_plugin.limiter import Limiter, export    # a limiter plugin
    from wasmgate_plugin.provider import Provider, export  # a provider plugin

This module holds what every kind shares: :func:`log`, :func:`count_tokens`,
:class:`ConfigError` and :func:`parse_options` (typed options from a dataclass).

Outside the sandbox (unit tests under plain CPython) the host functions have stand-ins:
``log`` appends to :data:`LOGGED`, ``count_tokens`` estimates a token per four bytes, and
limiter counters live in a dictionary (see :mod:`wasmgate_plugin.limiter`).
"""

from ._host import LOGGED, count_tokens, in_sandbox, log
from .options import ConfigError, NoOptions, parse_options

__all__ = [
    "LOGGED",
    "ConfigError",
    "NoOptions",
    "count_tokens",
    "in_sandbox",
    "log",
    "parse_options",
]
