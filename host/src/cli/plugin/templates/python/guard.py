"""{{name}}: a wasmgate guard. Refuses requests that mention any of `words`, and stops answers
that do, holding back only as much text as the longest word could still be completing."""

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
    request_origin,
    request_texts,
    stop,
    text,
)


@dataclass
class Options:
    words: list[str]


def mentions(options: Options, value: str) -> bool:
    value = value.lower()
    return any(word.lower() in value for word in options.words)


class Answer:
    """One answer: the text of choice 0 not yet released (at most the longest word)."""

    def __init__(self, options: Options, request: str):
        self.options = options
        self.hold = max(len(w) for w in options.words) - 1
        self.held = ""

    def push(self, events):
        out = []
        for event in events:
            if isinstance(event, AnswerEvent_Text):
                self.held += event.value.text
                if mentions(self.options, self.held):
                    return stop("this topic is not allowed here", {"word": 1})
                cut = max(0, len(self.held) - self.hold)
                if cut:
                    out.append(text(self.held[:cut], event.value.choice))
                    self.held = self.held[cut:]
            elif isinstance(event, AnswerEvent_Stop):
                if self.held:
                    out.append(text(self.held, event.value.choice))
                    self.held = ""
                out.append(event)
            else:
                out.append(event)
        return release(out, len(self.held))

    def finish(self):
        held, self.held = self.held, ""
        return release([text(held)] if held else [])


class Words(Guard):
    Options = Options
    Answer = Answer

    def validate(self, options):
        if not options.words:
            raise ConfigError("name at least one word", "words")
        return max(len(w) for w in options.words)

    def check_request(self, options, request):
        found = [i for i, t in enumerate(request_texts(request)) if mentions(options, t)]
        if not found:
            return allow()
        # A body of another route (embeddings, a pass-through...) says where each text stood.
        origin = request_origin(request)
        at = origin["at"][found[0]] if origin and found[0] < len(origin["at"]) else "?"
        where = f" ({origin['route']}, at {at})" if origin else ""
        return refuse(f"this topic is not allowed here{where}", 400, {"word": 1})


Guard = export(Words)
