"""{{name}}: a wasmgate limiter. At most `per_minute` requests a minute per scope."""

from dataclasses import dataclass, field

from wasmgate_plugin.limiter import Exceeded, Limiter, Period, Reservation, allow, deny, export, ratelimit_headers


def positive(value: int) -> str | None:
    return None if value > 0 else "must be at least 1"


@dataclass
class Options:
    per_minute: int = field(metadata={"check": positive})


class Plugin(Limiter):
    Options = Options

    def check(self, options, request):
        try:
            counter = Reservation().add(f"req:{request.scope_key}", Period.MINUTE, 1, options.per_minute)
        except Exceeded as over:
            return deny(f"{options.per_minute} requests a minute: try again shortly", over.resets_in_ms)
        remaining = options.per_minute - counter.value
        return allow(ratelimit_headers("requests", options.per_minute, remaining, counter.resets_in_ms))


export(Plugin)
