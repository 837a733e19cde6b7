"""The host's functions (log, token counts), with stand-ins outside the sandbox."""

import sys

from wit_world.imports import host as _host
from wit_world.imports import types as _types

#: Lines logged outside the sandbox, as ``(level, message)``: what a unit test can assert on.
LOGGED: list[tuple[str, str]] = []

_LEVELS = {
    "debug": _types.LogLevel.DEBUG,
    "info": _types.LogLevel.INFO,
    "warn": _types.LogLevel.WARN,
    "error": _types.LogLevel.ERROR,
}


def in_sandbox() -> bool:
    """Whether the code runs as a component inside wasmgate (else: plain CPython, in a test)."""
    return sys.platform == "wasi"


def log(level: str, message: str) -> None:
    """Writes ``message`` to the gateway's log at ``level`` (``debug``, ``info``, ``warn`` or
    ``error``), tagged with the plugin's name and the request id. Never log secrets or prompts."""
    kind = _LEVELS.get(level)
    if kind is None:
        raise ValueError(f"log level must be one of {', '.join(_LEVELS)}, not {level!r}")
    if in_sandbox():
        _host.log(kind, message)
    else:
        LOGGED.append((level, message))


def count_tokens(text: str) -> int:
    """Counts the tokens of ``text`` with the host's tokenizer (OpenAI's ``o200k_base``).
    Outside the sandbox: one token per four bytes, rounded up."""
    if in_sandbox():
        return _host.count_tokens(text)
    return (len(text.encode()) + 3) // 4
