"""{{name}}: a wasmgate router. Premium users get the targets in config order, everyone else
the healthy targets from the cheapest input price up."""

from dataclasses import dataclass

from wasmgate_plugin.router import Router, export, healthy, rank


@dataclass
class Options:
    premium_tag: str = "premium"


class Plugin(Router):
    Options = Options

    def route(self, options, request, targets):
        if options.premium_tag in request.user_tags:
            return [i for i, _ in healthy(targets)]
        return rank(targets, lambda t: t.input_price)


export(Plugin)
