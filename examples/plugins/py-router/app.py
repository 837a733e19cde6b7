"""py-router: premium users to the big model during office hours, everyone else to the fastest
healthy target; a target slower than `max_latency_ms` goes last."""

import time
from dataclasses import dataclass, field

from wasmgate_plugin.router import ConfigError, RouteError, Router, export, open_last, rank


def hour(value: int) -> str | None:
    return None if 0 <= value <= 24 else "must be an hour from 0 to 24"


@dataclass
class Rule:
    tags: list[str]
    targets: list[str]
    from_hour: int = field(default=0, metadata={"check": hour})
    to_hour: int = field(default=24, metadata={"check": hour})


@dataclass
class Options:
    rules: list[Rule] = field(default_factory=list)
    max_latency_ms: float | None = None


class TagsHoursLatency(Router):
    Options = Options

    def validate(self, options, targets):
        for i, rule in enumerate(options.rules):
            for t in rule.targets:
                if t not in targets:
                    raise ConfigError(f"`{t}` is not a target of this model", f"rules[{i}].targets")

    def route(self, options, request, targets):
        now = time.gmtime().tm_hour
        for rule in options.rules:
            if set(rule.tags) & set(request.user_tags) and rule.from_hour <= now < rule.to_hour:
                order = [i for i, t in enumerate(targets) if t.id in rule.targets]
                return open_last(order, targets)
        slow = options.max_latency_ms
        order = rank(targets, lambda t: t.latency_ms, unmeasured_first=True)
        if slow is not None:
            order = [i for i in order if (targets[i].latency_ms or 0) <= slow] + \
                    [i for i in order if (targets[i].latency_ms or 0) > slow]
        if not order:
            raise RouteError("no target to route to")
        return order



export(TagsHoursLatency)
