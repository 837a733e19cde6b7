"""Where componentize-py looks for the guard world's `answer-guard` resource: a module named
after the exported interface. Part of the wasmgate Python SDK; plugin code never imports it."""

from wasmgate_plugin.guard import _AnswerGuardAdapter as AnswerGuard

__all__ = ["AnswerGuard"]
