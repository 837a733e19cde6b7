"""{{name}}: a wasmgate provider for an OpenAI-compatible upstream."""

from dataclasses import dataclass, field

from wasmgate_plugin.provider import Provider, export, get, join_url, post_json, upstream

PATHS = {"chat-completions": "chat/completions", "embeddings": "embeddings",
         "image-generations": "images/generations", "list-models": "models",
         "completions": "completions", "moderations": "moderations", "rerank": "rerank"}


@dataclass
class Options:
    headers: dict[str, str] = field(default_factory=dict)


class Plugin(Provider):
    Options = Options
    default_base_url = "http://127.0.0.1:8000/v1"

    def prepare(self, entry, request):
        url = join_url(entry.base_url, PATHS[request.operation.name.lower().replace("_", "-")])
        headers = entry.bearer() + list(entry.options.headers.items())
        if request.operation.name == "LIST_MODELS":
            return upstream(get(url, headers))
        return upstream(post_json(url, request.body, headers))


export(Plugin)
