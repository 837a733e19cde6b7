"""py-guard: keeps an organisation's internal host names out of model traffic.

A request naming a host under one of `domains` is refused before it leaves; an answer has such
names replaced with `[internal host]`, streamed answers included. A host name never spans white
space, so each choice holds back only the word still being written: at most 253 characters (the
longest DNS name), and at most `HOLD` over all choices, past which the held text is released
masked as it stands.
"""

import re
from dataclasses import dataclass

from wasmgate_plugin.guard import (
    AnswerEvent_Stop,
    AnswerEvent_Text,
    ConfigError,
    Guard,
    allow,
    export,
    refuse,
    release,
    request_texts,
    text,
)

MAX_HOST = 253
HOLD = 4 * MAX_HOST
MASK = "[internal host]"
SPACE = re.compile(r"\s")


@dataclass
class Options:
    domains: list[str]


def hosts(options: Options) -> re.Pattern:
    names = "|".join(re.escape(d.strip(".").lower()) for d in options.domains)
    return re.compile(r"\b(?:[a-z0-9-]+\.)*(?:" + names + r")\b", re.IGNORECASE)


class Answer:
    """One answer: per choice, the word not yet released."""

    def __init__(self, options: Options, request: str):
        self.hosts = hosts(options)
        self.held: dict[int, str] = {}
        self.found = 0

    def masked(self, value: str) -> str:
        value, n = self.hosts.subn(MASK, value)
        self.found += n
        return value

    def take(self, out, choice: int, upto: int):
        held = self.held.get(choice, "")
        ready, self.held[choice] = held[:upto], held[upto:]
        if ready:
            out.append(text(self.masked(ready), choice))

    def verdict(self, out):
        found, self.found = self.found, 0
        held = sum(len(h) for h in self.held.values())
        return release(out, held, {"internal-host": found} if found else None)

    def push(self, events):
        out = []
        for event in events:
            if isinstance(event, AnswerEvent_Text):
                choice = event.value.choice
                held = self.held.get(choice, "") + event.value.text
                self.held[choice] = held
                spaces = [m.end() for m in SPACE.finditer(held)]
                upto = spaces[-1] if spaces else 0
                if len(held) - upto > MAX_HOST:
                    upto = len(held)
                self.take(out, choice, upto)
                if sum(len(h) for h in self.held.values()) > HOLD:
                    for other in list(self.held):
                        self.take(out, other, len(self.held[other]))
            elif isinstance(event, AnswerEvent_Stop):
                self.take(out, event.value.choice, len(self.held.get(event.value.choice, "")))
                out.append(event)
            else:
                out.append(event)
        return self.verdict(out)

    def finish(self):
        out = []
        for choice in list(self.held):
            self.take(out, choice, len(self.held[choice]))
        return self.verdict(out)


class InternalHosts(Guard):
    Options = Options
    Answer = Answer

    def validate(self, options):
        if not options.domains:
            raise ConfigError("name at least one domain", "domains")
        return HOLD

    def check_request(self, options, request):
        pattern = hosts(options)
        found = sum(len(pattern.findall(t)) for t in request_texts(request))
        if found:
            return refuse("internal host names may not leave", 400, {"internal-host": found})
        return allow()


Guard = export(InternalHosts)
