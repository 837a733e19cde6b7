"""The typed error a provider raises, and the class of an upstream HTTP status."""

from wit_world.imports.types import ErrorKind
from wit_world.imports.types import PluginError as _WitPluginError

__all__ = ["ErrorKind", "PluginError", "kind_for_status"]


class PluginError(Exception):
    """A failure the client sees in OpenAI's error shape: ``kind`` decides the status (400, 401,
    403, 404, 429, 502, 504); ``param`` and ``code`` fill OpenAI's fields. ``upstream_status``: a
    4xx from upstream is passed on as is. Never put secrets in ``message``."""

    def __init__(self, kind: ErrorKind, message: str, *, param: str | None = None,
                 code: str | None = None, upstream_status: int | None = None):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.param = param
        self.code = code
        self.upstream_status = upstream_status

    @classmethod
    def invalid_request(cls, message: str, param: str | None = None) -> "PluginError":
        """The request is malformed or unsupported (400)."""
        return cls(ErrorKind.INVALID_REQUEST, message, param=param)

    @classmethod
    def upstream(cls, message: str) -> "PluginError":
        """The upstream failed or answered something unreadable (502)."""
        return cls(ErrorKind.UPSTREAM, message)

    def to_wit(self) -> _WitPluginError:
        return _WitPluginError(self.kind, self.message, self.param, self.code, self.upstream_status)

    def __repr__(self) -> str:
        return f"PluginError({self.kind.name}, {self.message!r})"


def kind_for_status(status: int) -> ErrorKind:
    """The error class of an upstream HTTP status, by the meaning OpenAI gives each."""
    if status == 401:
        return ErrorKind.AUTHENTICATION
    if status == 403:
        return ErrorKind.PERMISSION_DENIED
    if status == 404:
        return ErrorKind.NOT_FOUND
    if status == 429:
        return ErrorKind.RATE_LIMITED
    if status in (408, 504):
        return ErrorKind.TIMEOUT
    if 400 <= status < 500:
        return ErrorKind.INVALID_REQUEST
    return ErrorKind.UPSTREAM
