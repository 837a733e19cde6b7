"""A config entry's ``options`` (JSON text from the host) read into the plugin's own dataclass.

Declare the options as a dataclass; fields without a default are required, unknown keys are
refused (a misspelt option fails when the config loads, naming the key), and every value is
checked against its annotation: ``str``, ``int``, ``float``, ``bool``, ``list[T]``,
``dict[str, T]``, ``T | None``, ``Literal[...]``, an ``Enum`` (by value), or another dataclass::

    @dataclass
    class Rule:
        tags: list[str]
        target: str

    @dataclass
    class Options:
        rules: list[Rule]
        default: str | None = None

    parse_options('{"rules": [{"tags": ["vip"], "target": "a/b"}]}', Options)

A field may add a check of its own with ``field(metadata={"check": fn})``: ``fn(value)`` returns
an error message, or ``None`` when the value is fine.
"""

import dataclasses
import enum
import json
import types
import typing
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

T = TypeVar("T")


class ConfigError(Exception):
    """Why the options are refused. ``key`` is the dotted path of the option at fault (``None``
    for the options as a whole); the gateway reports it naming the config entry."""

    def __init__(self, message: str, key: str | None = None):
        super().__init__(message)
        self.message = message
        self.key = key

    def __repr__(self) -> str:
        return f"ConfigError(key={self.key!r}, message={self.message!r})"


@dataclasses.dataclass(frozen=True)
class NoOptions:
    """The options of a plugin that takes none: any key is refused."""


_hints_cache: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    hints = _hints_cache.get(cls)
    if hints is None:
        hints = typing.get_type_hints(cls)
        _hints_cache[cls] = hints
    return hints


def parse_options(text: str, cls: type[T]) -> T:
    """Reads ``text`` (a JSON object; empty or ``null`` reads as ``{}``) into the dataclass
    ``cls``. Raises :class:`ConfigError` naming the failing key."""
    return read_at(options_object(text), cls, "")


def options_object(text: str) -> dict:
    """``text`` (a JSON object; empty or ``null`` reads as ``{}``) as a dict."""
    text = text.strip() if text else ""
    try:
        value = json.loads(text) if text else None
    except ValueError as err:
        raise ConfigError(f"options are not valid JSON: {err}") from None
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise ConfigError("options must be a mapping")
    return value


def read_at(value: Any, annotation: Any, path: str) -> Any:
    """``value`` read as ``annotation``; errors name ``path`` and the keys below it."""
    return _read(value, annotation, path)


def _at(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _fail(path: str, message: str) -> ConfigError:
    return ConfigError(message if path else f"options: {message}", path or None)


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "a mapping"


def _read(value: Any, annotation: Any, path: str) -> Any:
    if annotation is Any:
        return value
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        choices = get_args(annotation)
        if value is None and type(None) in choices:
            return None
        others = [c for c in choices if c is not type(None)]
        if len(others) == 1:
            return _read(value, others[0], path)
        for choice in others:
            try:
                return _read(value, choice, path)
            except ConfigError:
                continue
        raise _fail(path, f"{_describe(value)} is not any of the allowed forms")
    if origin is Literal:
        allowed = get_args(annotation)
        if value in allowed and type(value) in {type(a) for a in allowed}:
            return value
        listed = ", ".join(f"`{a}`" for a in allowed)
        raise _fail(path, f"unknown variant `{value}`, expected one of {listed}")
    if origin in (list, typing.List):
        if not isinstance(value, list):
            raise _fail(path, f"expected a list, got {_describe(value)}")
        (item,) = get_args(annotation) or (Any,)
        return [_read(v, item, _at(path, i)) for i, v in enumerate(value)]
    if origin in (dict, typing.Dict):
        if not isinstance(value, dict):
            raise _fail(path, f"expected a mapping, got {_describe(value)}")
        _, item = get_args(annotation) or (str, Any)
        return {k: _read(v, item, _at(path, k)) for k, v in value.items()}
    if isinstance(annotation, type):
        if dataclasses.is_dataclass(annotation):
            return _read_dataclass(value, annotation, path)
        if issubclass(annotation, enum.Enum):
            for member in annotation:
                if member.value == value:
                    return member
            listed = ", ".join(f"`{m.value}`" for m in annotation)
            raise _fail(path, f"unknown variant `{value}`, expected one of {listed}")
        if annotation is bool:
            if isinstance(value, bool):
                return value
            raise _fail(path, f"expected a boolean, got {_describe(value)}")
        if annotation is int:
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            if isinstance(value, float) and value.is_integer():
                return int(value)
            raise _fail(path, f"expected an integer, got {_describe(value)}")
        if annotation is float:
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return float(value)
            raise _fail(path, f"expected a number, got {_describe(value)}")
        if annotation is str:
            if isinstance(value, str):
                return value
            raise _fail(path, f"expected a string, got {_describe(value)}")
    raise TypeError(f"options field type {annotation!r} is not supported by parse_options")


def _read_dataclass(value: Any, cls: type, path: str) -> Any:
    if not isinstance(value, dict):
        raise _fail(path, f"expected a mapping, got {_describe(value)}")
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    for key in value:
        if key not in fields:
            allowed = ", ".join(f"`{n}`" for n in fields) or "none"
            raise _fail(_at(path, key), f"unknown field `{key}`, expected one of: {allowed}")
    hints = _hints(cls)
    args = {}
    for name, f in fields.items():
        key_path = _at(path, name)
        if name not in value:
            no_default = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            if no_default:
                raise _fail(path, f"missing field `{name}`")
            continue
        read = _read(value[name], hints[name], key_path)
        check = f.metadata.get("check")
        if check is not None:
            problem = check(read)
            if problem:
                raise _fail(key_path, problem)
        args[name] = read
    return cls(**args)
