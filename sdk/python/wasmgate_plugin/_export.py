"""How a plugin class becomes the component's export: componentize-py looks for a class named
after the exported interface (``Router``, ``Limiter``, ``Provider``) in the app module. And what
every kind's adapter does with its options text the same way."""

import sys
from collections.abc import Callable
from typing import Any, TypeVar

from componentize_py_types import Err
from wit_world.imports.types import ConfigError as _WitConfigError

from .options import ConfigError, parse_options

T = TypeVar("T")


def install(cls: type, name: str, adapter: type) -> type:
    """Puts ``adapter`` in ``cls``'s module under ``name``, where componentize-py looks."""
    module = sys.modules.get(cls.__module__)
    if module is None:
        raise RuntimeError(f"export: the module of {cls.__name__} is not loaded")
    setattr(module, name, adapter)
    return adapter


def check_options(text: str, options: type, check: Callable[[Any], T]) -> T:
    """``check``'s answer on ``text`` read as ``options``: what an adapter's ``validate`` does. A
    :class:`ConfigError` (from the reading or from ``check``) becomes the WIT ``config-error``."""
    try:
        return check(parse_options(text, options))
    except ConfigError as err:
        raise Err(_WitConfigError(err.key, err.message)) from None


def options_cache(options: type) -> Callable[[str], Any]:
    """Reads an options text as ``options``, keeping the last text's reading: the host passes an
    entry's options unchanged on every call, and reading them again would be most of a small
    policy's cost. Only the text's own reading is kept, never anything of a request. Options the
    config accepted cannot fail here; if they do, the call traps and the host fails the request
    as the kind says (a limiter's is refused, a guard's fails closed)."""
    kept: list[Any] = [None, None]

    def read(text: str) -> Any:
        if text != kept[0]:
            kept[1] = parse_options(text, options)
            kept[0] = text
        return kept[1]

    return read


def validation_error(adapter: type, *args: Any) -> ConfigError | None:
    """For unit tests: the error the exported ``adapter``'s ``validate(*args)`` answers, as the
    host sees it when the config loads, or ``None``."""
    try:
        adapter().validate(*args)
    except Err as err:
        return ConfigError(err.value.message, err.value.key)
    return None
