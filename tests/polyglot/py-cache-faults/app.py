"""A cache-key policy that misbehaves on demand (the request's model): `trap` raises an uncaught
exception, `loop` never returns, `nonsense` answers fields that are not JSON. Otherwise: keep."""

from wasmgate_plugin.cache_key import CacheKey, KeyDecision_Replace, export, keep


class Faults(CacheKey):
    def key(self, options, request):
        if request.model.endswith("trap"):
            raise RuntimeError("a bug in the plugin")
        if request.model.endswith("loop"):
            while True:
                pass
        if request.model.endswith("nonsense"):
            return KeyDecision_Replace("not json")
        return keep()


CacheKey = export(Faults)
