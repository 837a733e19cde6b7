"""How a plugin class becomes the component's export: componentize-py looks for a class named
after the exported interface (``Router``, ``Limiter``, ``Provider``) in the app module."""

import sys


def install(cls: type, name: str, adapter: type) -> type:
    """Puts ``adapter`` in ``cls``'s module under ``name``, where componentize-py looks."""
    module = sys.modules.get(cls.__module__)
    if module is None:
        raise RuntimeError(f"export: the module of {cls.__name__} is not loaded")
    setattr(module, name, adapter)
    return adapter
