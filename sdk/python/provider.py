"""Where componentize-py looks for the provider world's `stream-decoder` resource: a module named
after the exported interface. Part of the wasmgate Python SDK; plugin code never imports it."""

from wasmgate_plugin.provider import _StreamDecoderAdapter as StreamDecoder

__all__ = ["StreamDecoder"]
