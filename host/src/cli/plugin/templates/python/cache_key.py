"""{{name}}: a wasmgate cache-key policy. Requests to the models in `never` are not cached;
the others are keyed without their `temperature` when it is 0 (0 and absent answer alike)."""

from dataclasses import dataclass, field

from wasmgate_plugin.cache_key import CacheKey, bypass, export, keep, replace


@dataclass
class Options:
    never: list[str] = field(default_factory=list)


class Plugin(CacheKey):
    Options = Options

    def key(self, options, request):
        if request.model in options.never:
            return bypass()
        if request.fields.get("temperature") == 0:
            fields = dict(request.fields)
            del fields["temperature"]
            return replace(fields)
        return keep()


CacheKey = export(Plugin)
