"""A router that misbehaves on demand (request metadata `fault`): `trap` raises an uncaught
exception, `loop` never returns, `grab` allocates without end. Otherwise: config order."""

from wasmgate_plugin.router import Router, export


class Faults(Router):
    def route(self, options, request, targets):
        fault = dict(request.metadata).get("fault")
        if fault == "trap":
            raise RuntimeError("a bug in the plugin")
        if fault == "loop":
            while True:
                pass
        if fault == "grab":
            hoard = []
            while True:
                hoard.append(bytearray(1 << 20))
        return list(range(len(targets)))


export(Faults)
