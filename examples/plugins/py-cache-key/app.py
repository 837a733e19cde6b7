"""py-cache-key: keys a coding agent's requests without its volatile reminders.

Claude Code puts `<system-reminder>...</system-reminder>` blocks into its turns: the date, the
files open in the editor, a todo list's state. They change between two otherwise identical
requests, so an agent's repeated turns never hit the response cache. This policy hashes each
request with those blocks taken out (a text block that held nothing else is dropped whole), in
the system prompt and in every message, in the Messages, Chat Completions and Responses shapes.
The request itself goes upstream unchanged: only its key is made without them.
"""

import re
from dataclasses import dataclass, field
from typing import Any

from wasmgate_plugin.cache_key import CacheKey, ConfigError, export, keep, replace

# The fields that hold what the model reads, in every dialect.
PROMPT_FIELDS = ("system", "messages", "input", "instructions", "contents", "systemInstruction")
TAG = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")


@dataclass
class Options:
    tags: list[str] = field(default_factory=lambda: ["system-reminder"])


def blocks(options: Options) -> re.Pattern:
    names = "|".join(re.escape(t) for t in options.tags)
    return re.compile(r"<(" + names + r")>.*?</\1>\s*", re.DOTALL)


def scrub(value: Any, pattern: re.Pattern) -> Any:
    """``value`` with every tagged block taken out of its strings, and text parts left empty
    by that dropped from their lists."""
    if isinstance(value, str):
        return pattern.sub("", value)
    if isinstance(value, list):
        out = []
        for item in value:
            was_text = isinstance(item, dict) and isinstance(item.get("text"), str) and item["text"].strip()
            item = scrub(item, pattern)
            if was_text and not item["text"].strip():
                continue
            out.append(item)
        return out
    if isinstance(value, dict):
        return {k: scrub(v, pattern) for k, v in value.items()}
    return value


class DropReminders(CacheKey):
    Options = Options

    def validate(self, options):
        if not options.tags:
            raise ConfigError("name at least one tag", "tags")
        for i, tag in enumerate(options.tags):
            if not TAG.match(tag):
                raise ConfigError("a tag is a name: a letter, then letters, digits, - or _", f"tags.{i}")

    def key(self, options, request):
        pattern = blocks(options)
        fields = dict(request.fields)
        for name in PROMPT_FIELDS:
            if name in fields:
                fields[name] = scrub(fields[name], pattern)
        if fields == request.fields:
            return keep()
        return replace(fields)


CacheKey = export(DropReminders)
